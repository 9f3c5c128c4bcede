/*
 * places.h - CPU arguments as places (places.c), and the libhwloc they use (hwloc_find.c).
 */
#ifndef VLCS_PLACES_H
#define VLCS_PLACES_H

#include "common.h"
#include "cpuset.h"

/* A CPU argument: a taskset list, or an hwloc place "numa:0" (places.c). */
HIDDEN int cpus_parse(const char *cpus, vmask *out, char *err, size_t errsize);
/* libhwloc, dlopened once (hwloc_find.c); NULL with why in err. */
HIDDEN void *hwloc_find(char *err, size_t errsize);

#endif

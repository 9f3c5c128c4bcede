/*
 * objects.h - which loaded object holds an address (objects.c), without the loader's lock.
 */
#ifndef VLCS_OBJECTS_H
#define VLCS_OBJECTS_H

#include "common.h"

/* The link map of the loaded object whose mapping holds addr, or NULL. */
HIDDEN void *object_at(const void *addr);
/* The linker namespace of a loaded object (a link map), or -1. */
HIDDEN Lmid_t object_lmid(void *map);

#endif

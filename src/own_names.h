/*
 * own_names.h - per-process names made per context (own_names.c).
 */
#ifndef VLCS_OWN_NAMES_H
#define VLCS_OWN_NAMES_H

#include "common.h"

struct vlcs_ctx;

/* The name c's code uses for the shared-memory object name: name itself,
 * or (in buf, size bytes) a name of c's own where a library makes one
 * such object per process. */
HIDDEN const char *own_name(struct vlcs_ctx *c, const char *name, char *buf, size_t size);

#endif

/*
 * copy_origins.h - the original files of copy mode's copies, and the few a
 * namespace starts from: one descriptor each (copy_origins.c).
 */
#ifndef VLCS_COPY_ORIGINS_H
#define VLCS_COPY_ORIGINS_H

#include "common.h"

/* copy_origins.c: one read-only descriptor per original file (or -VLCS_E_*) */
HIDDEN int origin_hold(const char *real, char *why, size_t size);
HIDDEN void origin_release(int fd);
/* real held for the process's life (the files namespaces start from,
 * glibc's stubs): its descriptor, the same whatever the caches say, or -1. */
HIDDEN int origin_keep(const char *real);
/* The paths held name their files again only once checked (stat) anew. */
HIDDEN void origins_recheck(void);

#endif

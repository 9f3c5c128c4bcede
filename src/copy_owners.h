/*
 * copy_owners.h - which copy-mode context each loaded copy belongs to (copy_owners.c).
 */
#ifndef VLCS_COPY_OWNERS_H
#define VLCS_COPY_OWNERS_H

#include "common.h"
#include "context.h"

struct link_map;
/* The table of which copy-mode context each loaded copy is (copy_owners.c):
 * a copy's /proc/self/fd name is added before it loads, its link map once
 * loaded, and it is removed when unloaded. */
HIDDEN int owners_add(const char *path, vlcs_ctx *c);
HIDDEN void owners_loaded(const char *path, const void *lm);
HIDDEN void owners_remove(const char *path);
HIDDEN vlcs_ctx *copies_owner(const void *link_map); /* the copy-mode context holding it */
/* The same in a signal handler: NULL when the table is being changed. */
HIDDEN vlcs_ctx *copies_owner_nowait(const void *link_map);

#endif

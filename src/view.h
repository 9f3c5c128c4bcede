/*
 * view.h - the context's view of the machine (view.c).
 */
#ifndef VLCS_VIEW_H
#define VLCS_VIEW_H

#include "common.h"
#include "context.h"
#include "cpuset.h"

/* A view of m (older: the context's previous views); NULL out of memory. */
HIDDEN struct cpuview *view_new(const vmask *m, struct cpuview *older);
/* Makes m the context's CPU set (with c->lock held): its view published,
 * its threads moved.  0, or -1 when out of memory. */
HIDDEN int ctx_switch_view(vlcs_ctx *c, const vmask *m);

HIDDEN void view_filter_mask(vlcs_ctx *c, size_t size, cpu_set_t *set);
HIDDEN int view_clamp_mask(vlcs_ctx *c, size_t size, const cpu_set_t *in, size_t outsize,
                           cpu_set_t *out);
/* The same for the calling thread's own mask: a mask it read through the
 * view and sets again, unchanged and in the same place among contexts, is
 * set as the kernel gave it (a save and restore around CPU probing, as
 * oneMKL's, leaves a thread of the base as it was). */
HIDDEN void view_filter_self(vlcs_ctx *c, size_t size, cpu_set_t *set);
HIDDEN int view_clamp_self(vlcs_ctx *c, size_t size, const cpu_set_t *in, size_t outsize,
                           cpu_set_t *out);
HIDDEN long view_ncpus(vlcs_ctx *c);
/* A read-only open of a forged file (view.c's table): a file descriptor with
 * c's view; -2 for any other path or mode; -1 with errno on failure. */
HIDDEN int view_open_forged(vlcs_ctx *c, int dirfd, const char *path, int flags);
/* Every row's prefix, NULL-terminated: no path outside them is forged. */
HIDDEN const char *const *view_forged_prefixes(void);
/* Frees the files forged for a snapshot no one reads any more. */
HIDDEN void view_free_forged(struct cpuview *v);

#endif

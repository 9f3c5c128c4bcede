/*
 * registry.h - the list of contexts, handles checked, the process's CPUs
 * (registry.c): the ground floor, calling nothing above error.c.
 */
#ifndef VLCS_REGISTRY_H
#define VLCS_REGISTRY_H

#include "common.h"
#include "context.h"
#include "cpuset.h"

/* Walk with registry_lock() held: destroyed contexts leave the registry. */
HIDDEN void registry_lock(void);
HIDDEN void registry_unlock(void);
HIDDEN vlcs_ctx *registry_first(void);
HIDDEN vlcs_ctx *registry_next(vlcs_ctx *c);
HIDDEN void registry_after_fork(void); /* in the child, the lock taken before fork */
/* A context's memory, reused from a destroyed one or new, with its id and
 * slot; NULL when out of memory.  registry_add makes it alive and listed,
 * with this generation's handle. */
HIDDEN vlcs_ctx *registry_take(void);
HIDDEN void registry_add(vlcs_ctx *c);
/* Unlists a destroyed context, moves its generation on (its handles are
 * stale for good) and keeps its memory (zeroed but for its lock, id, name
 * and slot) for the next registry_take. */
HIDDEN void registry_release(vlcs_ctx *c);
/* The context a handle names, or NULL with the error set (NULL, not a
 * handle, or destroyed: VLCS_E_DESTROYED, also once its memory is reused). */
HIDDEN vlcs_ctx *ctx_get(const vlcs_ctx *h, const char *doing);
/* With c->lock held: whether handle h still names c, alive. */
HIDDEN bool ctx_still(const vlcs_ctx *c, const vlcs_ctx *h);
/* Sets the error for a handle that ctx_still refused; returns -1. */
HIDDEN int ctx_gone(const vlcs_ctx *h, const char *doing);
/* Whether a fault broke c (fault.c); if so the error says so and what to do. */
HIDDEN bool ctx_broken(const vlcs_ctx *c, const char *doing);
HIDDEN struct cpuview *ctx_view(const vlcs_ctx *c);
/* The CPUs the process may use, read once at init. */
HIDDEN const vmask *process_mask(void);
HIDDEN void registry_set_process_mask(const vmask *m);
/* Room for element n in a doubling array (*arr: *cap elements of
 * elem bytes; n is usually the count in use): 0, or -1 when out of memory (the
 * array unchanged). */
HIDDEN int array_grow(void **arr, size_t *cap, size_t n, size_t elem);
/* The file name of a path: "libfoo.so" of "/usr/lib/libfoo.so". */
HIDDEN const char *base_name(const char *path);

/* A string's hash (FNV-1a), for the tables keyed by paths. */
HIDDEN uint64_t str_hash(const char *s);

#endif

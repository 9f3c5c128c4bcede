/*
 * families.h - library families (families.c).
 */
#ifndef VLCS_FAMILIES_H
#define VLCS_FAMILIES_H

#include "common.h"

/* A row of the table: the public descriptor. */
struct family {
    vlcs_family d;
};
extern HIDDEN const struct family builtin_families[];
extern HIDDEN const size_t nbuiltin_families;
/* Changes whenever a family is registered: what was found in a context's
 * handles with an older generation is looked up again. */
HIDDEN unsigned families_generation(void);
/* Around fork (runtime.c's handlers, after registry_lock). */
HIDDEN void families_lock(void);
HIDDEN void families_unlock(void);
HIDDEN void families_after_fork(void);

/* One function of a family found in a loaded object. */
struct family_fn {
    void *fn;
    int count_type; /* vlcs_count_type_t, for a setter */
    const char *family; /* its row's name (rows are never freed) */
};
#define MAX_POOLS 16 /* resize functions per context (one per OpenBLAS copy) */
enum family_role {
    FAMILY_RESIZE, /* set_threads of families resized with elastic contexts */
    FAMILY_STOP,   /* stop_pool */
};
/* Appends to out[n..cap) the role's functions that handle (and what it
 * depends on) exports, each once; returns the new count. */
HIDDEN size_t families_find(void *handle, enum family_role role, struct family_fn *out,
                            size_t n, size_t cap);
/* Calls a set_threads function with count, in its count type. */
HIDDEN void family_fn_set(const struct family_fn *f, int count);

#endif

/* The tables behind transparent mode's shims (shim_table.c). */
#ifndef VLCS_SHIM_TABLE_H
#define VLCS_SHIM_TABLE_H

#include "common.h"
#include "context.h"
#include <stddef.h>

#define VLCS_SHIM_SLOTS 64

/* A shim registered by vlcs_shim_register: its table has a row of n
 * function pointers per slot, [VLCS_SHIM_SLOTS][n]. */
struct shim {
    struct shim *next;
    const char *soname;
    const char *real_path;
    const char *const *names;
    size_t n;
    void **table;
};

/* The slot of the calling thread's context, kept current by enter/leave;
 * the shims' stubs read it. */
extern __thread int vlcs_shim_slot;

struct vlcs_ctx;
/* c's row in every table, 0 (the default context's) past the first 63. */
int shim_slot_of(const struct vlcs_ctx *c);
/* The real library a shim stands for, if path names a shimmed library. */
const char *shim_real_path(const char *path);
/* After handle (the real library at real_path) loaded into c: c's row of
 * every shim of that library points at it; -1 with the error set. */
int shim_note_load(struct vlcs_ctx *c, const char *real_path, void *handle);
/* c's namespace is gone: its rows go back to the default context's. */
void shim_forget(const struct vlcs_ctx *c);
/* s in the list that loads fill rows of, or out of it again. */
void shim_table_add(struct shim *s);
void shim_table_remove(struct shim *s);

#endif

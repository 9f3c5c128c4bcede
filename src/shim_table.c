/*
 * shim_table.c - the tables behind the shims made by `vlcs shim`: per shim,
 * a row of function pointers for each context slot, filled when the real
 * library is loaded into a context and put back to the default context's
 * when it goes.  Below runtime.c: loading and unloading consult it; the
 * registration that fills it from the public API is shim.c's.
 */
#include "common.h"
#include "shim_table.h"
#include "context.h"
#include "error.h"
#include "registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

VLCS_API __thread int vlcs_shim_slot;

static pthread_mutex_t shims_lock = PTHREAD_MUTEX_INITIALIZER;
static struct shim *shims;

int shim_slot_of(const vlcs_ctx *c)
{
    return c != NULL && c->id + 1 < VLCS_SHIM_SLOTS ? c->id + 1 : 0;
}

static int fill_row(struct shim *s, int slot, void *handle, char *err, size_t errsize)
{
    void **row = s->table + (size_t)slot * s->n;
    for (size_t i = 0; i < s->n; i++) {
        void *f = dlsym(handle, s->names[i]);
        if (f == NULL) {
            snprintf(err, errsize, "%s has no function %s", s->real_path, s->names[i]);
            return -1;
        }
        row[i] = f;
    }
    return 0;
}

/* The real library a shim stands for, if `path` names a shimmed library. */
const char *shim_real_path(const char *path)
{
    pthread_mutex_lock(&shims_lock);
    const char *real = NULL;
    for (struct shim *s = shims; s && !real; s = s->next)
        if (strcmp(base_name(path), s->soname) == 0 || strcmp(path, s->real_path) == 0)
            real = s->real_path;
    pthread_mutex_unlock(&shims_lock);
    return real;
}

/* After `handle` (the real library at real_path) loaded into c: point c's
 * row of every shim of that library at it. */
int shim_note_load(vlcs_ctx *c, const char *real_path, void *handle)
{
    int slot = shim_slot_of(c), rc = 0;
    pthread_mutex_lock(&shims_lock);
    for (struct shim *s = shims; s; s = s->next) {
        if (strcmp(s->real_path, real_path) != 0)
            continue;
        char why[512];
        if (slot == 0) {
            set_error(LIMIT_CODE(VLCS_LIMIT_SHIM_SLOTS),
                      "Error loading %s transparently into context '%s': only the first %d "
                      "contexts of a process can have their own copy behind a shim",
                      s->soname, c->name, VLCS_SHIM_SLOTS - 1);
            rc = -1;
        } else if (fill_row(s, slot, handle, why, sizeof why) != 0) {
            set_error(VLCS_E_NOT_FOUND, "Error loading %s transparently into context '%s': %s",
                      s->soname, c->name, why);
            rc = -1;
        }
    }
    pthread_mutex_unlock(&shims_lock);
    return rc;
}

/* A thread still in c when it went would call through its row: the row
 * goes back to row 0's functions (the default context's copy). */
void shim_forget(const vlcs_ctx *c)
{
    int slot = shim_slot_of(c);
    if (slot == 0)
        return;
    pthread_mutex_lock(&shims_lock);
    for (struct shim *s = shims; s; s = s->next)
        memcpy(s->table + (size_t)slot * s->n, s->table, s->n * sizeof *s->table);
    pthread_mutex_unlock(&shims_lock);
}

void shim_table_add(struct shim *s)
{
    pthread_mutex_lock(&shims_lock);
    s->next = shims;
    shims = s;
    pthread_mutex_unlock(&shims_lock);
}

void shim_table_remove(struct shim *s)
{
    pthread_mutex_lock(&shims_lock);
    for (struct shim **p = &shims; *p; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            break;
        }
    pthread_mutex_unlock(&shims_lock);
}

/*
 * env.c - a context's environment as vlcs changes it: recorded until the
 * context has libraries, then the one its backend keeps (its namespace
 * libc's, or copy mode's: copies_env.c).  The public calls (runtime.c),
 * elastic contexts' OpenMP variables, GPU lists and tuner plans all
 * change it here.
 */
#include "common.h"
#include "env.h"
#include "context.h"
#include "error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int env_record(vlcs_ctx *c, const char *name, const char *value)
{
    struct envop *op = calloc(1, sizeof *op);
    if (op == NULL || (op->name = strdup(name)) == NULL ||
        (value != NULL && (op->value = strdup(value)) == NULL)) {
        if (op)
            free(op->name);
        free(op);
        set_error(VLCS_E_SYSTEM, "Error changing the environment of context '%s': out of memory", c->name);
        return -1;
    }
    /* Kept in order of the calls; replayed in that order. */
    struct envop **tail = &c->pending_env;
    while (*tail)
        tail = &(*tail)->next;
    *tail = op;
    return 0;
}

/* Drops the recorded changes: once the first load into a new namespace
 * succeeded they are in its libc for good, or the context is destroyed. */
void env_pending_clear(vlcs_ctx *c)
{
    for (struct envop *op = c->pending_env, *next; op; op = next) {
        next = op->next;
        free(op->name);
        free(op->value);
        free(op);
    }
    c->pending_env = NULL;
}

/* Sets or unsets (value NULL) name in c: in the environment its backend
 * keeps once it has libraries, else recorded for it.  With c->lock held. */
int env_change(vlcs_ctx *c, const char *name, const char *value)
{
    if (c->backend == NULL)
        return env_record(c, name, value);
    if (c->backend->setenv(c, name, value) == 0)
        return 0;
    set_error(VLCS_E_SYSTEM, "Error %s %s in context '%s': %s", value ? "setting" : "unsetting",
              name, c->name, strerror(errno));
    return -1;
}

int ctx_setenv(vlcs_ctx *c, const char *name, const char *value)
{
    pthread_mutex_lock(&c->lock);
    int rc = env_change(c, name, value);
    pthread_mutex_unlock(&c->lock);
    return rc;
}

/* name's value in c, with c->lock held: its backend's, or the process's
 * with c's recorded changes applied. */
const char *env_get(vlcs_ctx *c, const char *name)
{
    if (c->backend != NULL)
        return c->backend->getenv(c, name);
    const char *v = getenv(name);
    for (struct envop *op = c->pending_env; op; op = op->next)
        if (strcmp(op->name, name) == 0)
            v = op->value;
    return v;
}

/*
 * copies_env.c - a copy-mode context's environment: what the process's was
 * when the context got its copies, with the context's changes.  Its code
 * reads and changes it through its interposer copy (getenv, setenv, putenv,
 * clearenv); vlcs_ctx_setenv and vlcs_ctx_getenv reach it here too.
 */
#include "common.h"
#include "copies_env.h"
#include "context.h"
#include "registry.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

/* The strings vlcs made are freed with it (as glibc's setenv, replaced
 * ones stay until then, for callers still holding a getenv result). */
struct copy_env {
    pthread_mutex_t lock;
    char **env; /* NULL-terminated, nenv entries */
    size_t nenv, capenv;
    char **owned;
    size_t nowned, capowned;
};

static int env_own(struct copy_env *cs, char *s)
{
    if (array_grow((void **)&cs->owned, &cs->capowned, cs->nowned, sizeof *cs->owned) != 0)
        return -1;
    cs->owned[cs->nowned++] = s;
    return 0;
}

/* Puts entry (name=value) in place of name's, or at the end; 0 or -1. */
static int env_place(struct copy_env *cs, const char *name, char *entry)
{
    for (size_t i = 0; i < cs->nenv; i++)
        if (env_entry_is(cs->env[i], name)) {
            cs->env[i] = entry;
            return 0;
        }
    if (array_grow((void **)&cs->env, &cs->capenv, cs->nenv + 1, sizeof *cs->env) != 0)
        return -1;
    cs->env[cs->nenv++] = entry;
    cs->env[cs->nenv] = NULL;
    return 0;
}

static void env_remove(struct copy_env *cs, const char *name)
{
    for (size_t i = 0; i < cs->nenv;)
        if (env_entry_is(cs->env[i], name)) {
            memmove(cs->env + i, cs->env + i + 1, (cs->nenv - i) * sizeof *cs->env);
            cs->nenv--;
        } else {
            i++;
        }
}

char *copy_env_get(vlcs_ctx *c, const char *name)
{
    struct copy_env *cs = c->cp.env;
    char *v = NULL;
    if (name == NULL || strchr(name, '=') != NULL)
        return NULL;
    size_t n = strlen(name);
    pthread_mutex_lock(&cs->lock);
    for (size_t i = 0; i < cs->nenv && v == NULL; i++)
        if (env_entry_is(cs->env[i], name))
            v = cs->env[i] + n + 1;
    pthread_mutex_unlock(&cs->lock);
    return v;
}

int copy_env_set(vlcs_ctx *c, const char *name, const char *value, int overwrite)
{
    struct copy_env *cs = c->cp.env;
    int rc = 0;
    pthread_mutex_lock(&cs->lock);
    if (value == NULL) {
        env_remove(cs, name);
    } else {
        bool present = false;
        for (size_t i = 0; i < cs->nenv && !present; i++)
            present = env_entry_is(cs->env[i], name);
        if (!present || overwrite) {
            size_t len = strlen(name) + strlen(value) + 2;
            char *entry = malloc(len);
            if (entry == NULL || env_own(cs, entry) != 0) {
                free(entry);
                rc = -1;
            } else {
                snprintf(entry, len, "%s=%s", name, value);
                rc = env_place(cs, name, entry);
            }
        }
    }
    pthread_mutex_unlock(&cs->lock);
    if (rc != 0)
        errno = ENOMEM;
    return rc;
}

int copy_env_put(vlcs_ctx *c, char *string)
{
    struct copy_env *cs = c->cp.env;
    char *eq = string ? strchr(string, '=') : NULL;
    if (eq == NULL) { /* glibc: "NAME" alone unsets it */
        if (string != NULL && *string)
            copy_env_set(c, string, NULL, 1);
        return 0;
    }
    char name[256];
    size_t n = (size_t)(eq - string);
    if (n == 0 || n >= sizeof name) {
        errno = EINVAL;
        return -1;
    }
    memcpy(name, string, n);
    name[n] = '\0';
    pthread_mutex_lock(&cs->lock);
    int rc = env_place(cs, name, string); /* the caller's memory, as putenv's */
    pthread_mutex_unlock(&cs->lock);
    if (rc != 0)
        errno = ENOMEM;
    return rc;
}

int copy_env_clear(vlcs_ctx *c)
{
    struct copy_env *cs = c->cp.env;
    pthread_mutex_lock(&cs->lock);
    cs->nenv = 0;
    if (cs->env != NULL)
        cs->env[0] = NULL;
    pthread_mutex_unlock(&cs->lock);
    return 0;
}

int copy_env_start(vlcs_ctx *c)
{
    struct copy_env *cs = calloc(1, sizeof *cs);
    if (cs == NULL)
        return -1;
    pthread_mutex_init(&cs->lock, NULL);
    c->cp.env = cs;
    /* The process's strings copied into one block, owned as one. */
    size_t n = 0, bytes = 1;
    for (char **e = environ; e && *e; e++, n++)
        bytes += strlen(*e) + 1;
    char *block = malloc(bytes);
    if (block == NULL || env_own(cs, block) != 0) {
        free(block);
        goto fail;
    }
    if (array_grow((void **)&cs->env, &cs->capenv, n, sizeof *cs->env) != 0)
        goto fail;
    /* as the process lists them, a name listed twice too: getenv finds
     * the first, as glibc's does in the process's */
    for (char **e = environ; e && *e; e++) {
        size_t len = strlen(*e) + 1;
        cs->env[cs->nenv++] = memcpy(block, *e, len);
        block += len;
    }
    cs->env[cs->nenv] = NULL;
    for (const struct envop *op = c->pending_env; op; op = op->next)
        if (copy_env_set(c, op->name, op->value, 1) != 0)
            goto fail;
    return 0;
fail:
    copy_env_free(c);
    return -1;
}

void copy_env_free(vlcs_ctx *c)
{
    struct copy_env *cs = c->cp.env;
    if (cs == NULL)
        return;
    for (size_t i = 0; i < cs->nowned; i++)
        free(cs->owned[i]);
    free(cs->owned);
    free(cs->env);
    pthread_mutex_destroy(&cs->lock);
    free(cs);
    c->cp.env = NULL;
}

const char *copy_env_entry(vlcs_ctx *c, size_t i)
{
    struct copy_env *cs = c->cp.env;
    const char *entry = NULL;
    pthread_mutex_lock(&cs->lock);
    if (i < cs->nenv)
        entry = cs->env[i];
    pthread_mutex_unlock(&cs->lock);
    return entry;
}

char **copy_env_block(vlcs_ctx *c)
{
    static char *empty[1];
    struct copy_env *cs = c->cp.env;
    pthread_mutex_lock(&cs->lock);
    char **env = cs->env != NULL ? cs->env : empty;
    pthread_mutex_unlock(&cs->lock);
    return env;
}

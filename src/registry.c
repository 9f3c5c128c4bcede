/*
 * registry.c - the ground floor: the list of contexts and the small helpers
 * every other file uses (checking a handle, reading a context's view,
 * growing an array, a path's file name, the process's CPUs).  It calls
 * nothing of libvlcs but the error helpers (error.c); what must happen
 * around it (the fork handlers' lock order, creating and destroying
 * contexts) is done by the files above it, runtime.c first.
 */
#include "internal.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t registry_mutex = PTHREAD_MUTEX_INITIALIZER;
static vlcs_ctx *all_contexts;
/* Contexts destroyed with their namespace: their memory is the next one's.
 * A stale pointer then reads as destroyed until it is reused, as a closed
 * file descriptor number does. */
static vlcs_ctx *free_contexts;
static int next_id;
static vmask allowed; /* CPUs the process may use, read at init */

void registry_set_process_mask(const vmask *m) { allowed = *m; }
const vmask *process_mask(void) { return &allowed; }

void registry_lock(void) { pthread_mutex_lock(&registry_mutex); }
void registry_unlock(void) { pthread_mutex_unlock(&registry_mutex); }
vlcs_ctx *registry_first(void) { return all_contexts; }
vlcs_ctx *registry_next(vlcs_ctx *c) { return c->next_all; }
/* The forking thread held it (runtime.c's prepare handler): the child's is new. */
void registry_after_fork(void) { pthread_mutex_init(&registry_mutex, NULL); }

vlcs_ctx *registry_take(void)
{
    registry_lock();
    vlcs_ctx *c = free_contexts;
    if (c != NULL) {
        /* Its lock stays as it is: a thread that raced the destroy may wait on it. */
        free_contexts = c->next_all;
    } else if ((c = calloc(1, sizeof *c)) != NULL) {
        pthread_mutex_init(&c->lock, NULL);
    }
    if (c != NULL)
        c->id = next_id++;
    registry_unlock();
    return c;
}

void registry_add(vlcs_ctx *c)
{
    registry_lock();
    c->next_all = all_contexts;
    all_contexts = c;
    c->magic = CTX_ALIVE;
    registry_unlock();
}

void registry_release(vlcs_ctx *c)
{
    registry_lock();
    for (vlcs_ctx **p = &all_contexts; *p; p = &(*p)->next_all)
        if (*p == c) {
            *p = c->next_all;
            break;
        }
    /* The name stays for "context 'a' was destroyed". */
    memset((char *)c + offsetof(vlcs_ctx, view), 0, sizeof *c - offsetof(vlcs_ctx, view));
    c->next_all = free_contexts;
    free_contexts = c;
    registry_unlock();
}

int ctx_check(const vlcs_ctx *c, const char *doing)
{
    if (c == NULL) {
        set_error(VLCS_E_INVALID, "Error %s: the context is NULL", doing);
        return -1;
    }
    if (c->magic == CTX_DEAD) {
        set_error(VLCS_E_DESTROYED, "Error %s: context '%s' was destroyed", doing, c->name);
        return -1;
    }
    if (c->magic != CTX_ALIVE) {
        set_error(VLCS_E_INVALID, "Error %s: %p is not a vlcs context", doing, (const void *)c);
        return -1;
    }
    return 0;
}

struct cpuview *ctx_view(const vlcs_ctx *c)
{
    return atomic_load_explicit((struct cpuview *_Atomic *)&c->view, memory_order_acquire);
}

int array_grow(void **arr, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return 0;
    size_t ncap = *cap ? 2 * *cap : 8;
    void *p = realloc(*arr, ncap * elem);
    if (p == NULL)
        return -1;
    *arr = p;
    *cap = ncap;
    return 0;
}

const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

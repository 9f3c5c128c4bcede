/*
 * registry.c - the ground floor: the list of contexts and the small helpers
 * every other file uses (checking a handle, reading a context's view,
 * growing an array, a path's file name, the process's CPUs).  It calls
 * nothing of libvlcs but the error helpers (error.c); what must happen
 * around it (the fork handlers' lock order, creating and destroying
 * contexts) is done by the files above it, runtime.c first.
 */
#include "common.h"
#include "registry.h"
#include "context.h"
#include "cpuset.h"
#include "error.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t registry_mutex = PTHREAD_MUTEX_INITIALIZER;
static vlcs_ctx *all_contexts;
/* Contexts destroyed with their namespace: their memory is the next one's.
 * Handles name a generation of that memory (below), so a stale one reads
 * as destroyed before and after the reuse. */
static vlcs_ctx *free_contexts;
static int next_id;

/* Slots: every context's memory has one for good, so a handle is
 * (generation << SLOT_BITS | slot + 1).  Chunks are made as slots are and
 * never freed; reading them takes no lock. */
#define SLOT_BITS 24
#define GEN_MASK ((UINT64_C(1) << (64 - SLOT_BITS)) - 1)
#define CHUNK 4096
#define NCHUNKS ((1u << SLOT_BITS) / CHUNK)
static vlcs_ctx *_Atomic *_Atomic chunks[NCHUNKS];
static _Atomic uint32_t nslots;

static vlcs_ctx *make_handle(const vlcs_ctx *c)
{
    uint64_t gen = atomic_load_explicit(&c->gen, memory_order_relaxed);
    return (vlcs_ctx *)(uintptr_t)((gen << SLOT_BITS) | (c->slot + 1));
}

/* The memory a handle's slot names, or NULL for no slot. */
static vlcs_ctx *slot_ctx(const vlcs_ctx *h, uint64_t *gen)
{
    uintptr_t raw = (uintptr_t)h;
    uint32_t slot = (uint32_t)(raw & ((1u << SLOT_BITS) - 1));
    *gen = (uint64_t)raw >> SLOT_BITS;
    if (slot == 0 || slot > atomic_load_explicit(&nslots, memory_order_acquire))
        return NULL;
    slot--;
    vlcs_ctx *_Atomic *chunk = atomic_load_explicit(&chunks[slot / CHUNK], memory_order_acquire);
    return chunk ? atomic_load_explicit(&chunk[slot % CHUNK], memory_order_acquire) : NULL;
}

/* With registry_mutex held: a slot for new memory c; -1 when none is left. */
static int slot_new(vlcs_ctx *c)
{
    uint32_t slot = atomic_load_explicit(&nslots, memory_order_relaxed);
    if (slot + 1 >= (1u << SLOT_BITS))
        return -1;
    vlcs_ctx *_Atomic *chunk = atomic_load_explicit(&chunks[slot / CHUNK], memory_order_relaxed);
    if (chunk == NULL) {
        if ((chunk = calloc(CHUNK, sizeof *chunk)) == NULL)
            return -1;
        atomic_store_explicit(&chunks[slot / CHUNK], chunk, memory_order_release);
    }
    c->slot = slot;
    atomic_store_explicit(&chunk[slot % CHUNK], c, memory_order_release);
    atomic_store_explicit(&nslots, slot + 1, memory_order_release);
    return 0;
}

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
        atomic_init(&c->gen, 1);
        if (slot_new(c) != 0) {
            pthread_mutex_destroy(&c->lock);
            free(c);
            c = NULL;
        }
    }
    if (c != NULL)
        c->id = next_id++;
    registry_unlock();
    return c;
}

void registry_add(vlcs_ctx *c)
{
    registry_lock();
    c->handle = make_handle(c);
    c->next_all = all_contexts;
    all_contexts = c;
    c->magic = CTX_ALIVE;
    registry_unlock();
}

void registry_release(vlcs_ctx *c)
{
    /* Under its lock, where every call checks a handle again (and before the
     * registry's: loading takes that one inside a context's lock): from here
     * on this generation's handles are stale, whatever the memory becomes. */
    pthread_mutex_lock(&c->lock);
    uint64_t gen = (atomic_load(&c->gen) + 1) & GEN_MASK;
    atomic_store(&c->gen, gen != 0 ? gen : 1);
    pthread_mutex_unlock(&c->lock);
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

vlcs_ctx *ctx_get(const vlcs_ctx *h, const char *doing)
{
    if (h == NULL) {
        set_error(VLCS_E_INVALID, "Error %s: the context is NULL", doing);
        return NULL;
    }
    uint64_t gen;
    vlcs_ctx *c = slot_ctx(h, &gen);
    if (c == NULL) {
        set_error(VLCS_E_INVALID, "Error %s: %p is not a vlcs context", doing, (const void *)h);
        return NULL;
    }
    if (atomic_load_explicit(&c->gen, memory_order_acquire) != gen ||
        atomic_load(&c->magic) != CTX_ALIVE) {
        ctx_gone(h, doing);
        return NULL;
    }
    return c;
}

bool ctx_still(const vlcs_ctx *c, const vlcs_ctx *h)
{
    return (uint64_t)(uintptr_t)h >> SLOT_BITS == atomic_load(&c->gen) &&
           atomic_load(&c->magic) == CTX_ALIVE;
}

int ctx_gone(const vlcs_ctx *h, const char *doing)
{
    uint64_t gen;
    vlcs_ctx *c = slot_ctx(h, &gen);
    char name[sizeof c->name] = "";
    if (c != NULL) {
        /* The name of the handle's generation while the memory still holds
         * it (until a later context is named): read under the lock that
         * create writes it with. */
        pthread_mutex_lock(&c->lock);
        if (c->name_gen == gen)
            memcpy(name, c->name, sizeof name);
        pthread_mutex_unlock(&c->lock);
    }
    if (name[0] != '\0')
        set_error(VLCS_E_DESTROYED, "Error %s: context '%s' was destroyed", doing, name);
    else
        set_error(VLCS_E_DESTROYED, "Error %s: the context was destroyed (a stale handle)", doing);
    return -1;
}

bool ctx_broken(const vlcs_ctx *c, const char *doing)
{
    const char *fault = atomic_load_explicit((char *const _Atomic *)&c->fault, memory_order_acquire);
    if (fault == NULL)
        return false;
    set_error(VLCS_E_FAULT, "Error %s: context '%s' is broken by a fault (%.*s): destroy it and "
              "make a new one", doing, c->name, (int)strcspn(fault, "\n"), fault);
    return true;
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
    while (ncap <= n) /* room for index n, however far past the end */
        ncap *= 2;
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

uint64_t str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

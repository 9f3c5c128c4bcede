/*
 * arenas.c - the object arenas of a context's own Python.
 *
 * CPython's small-object allocator takes memory from the system in arenas
 * (256 KiB to 1 MiB) through a replaceable allocator.  A runtime's
 * Py_FinalizeEx frees only the arenas that became empty, and the objects
 * it never frees (interned strings, static types' caches, what extension
 * modules keep) hold the rest: about 6.6 MB a runtime with numpy here,
 * lost for good once its libpython copy is unloaded.  The Python package
 * gives each own runtime this allocator before it starts, so that when
 * its libpython is gone, and with it every piece of code that could use
 * those objects, what is left is unmapped.
 *
 * alloc and free run under the runtime's GIL, release on the thread that
 * closes its context: one lock per runtime, taken once an arena.
 */
#include "common.h"
#include "context.h"
#include "error.h"
#include "registry.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>

struct arena {
    void *ptr;
    size_t size;
};

struct vlcs_arenas {
    pthread_mutex_t lock;
    struct arena *items;
    size_t n, cap;
};

VLCS_API vlcs_arenas *vlcs_arenas_new(void)
{
    vlcs_arenas *a = calloc(1, sizeof *a);
    if (a == NULL) {
        set_error(VLCS_E_SYSTEM, "out of memory for an arena list");
        return NULL;
    }
    pthread_mutex_init(&a->lock, NULL);
    return a;
}

VLCS_API void *vlcs_arenas_alloc(void *arenas, size_t size)
{
    vlcs_arenas *a = arenas;
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL; /* CPython raises MemoryError, as with its own allocator */
    pthread_mutex_lock(&a->lock);
    int rc = array_grow((void **)&a->items, &a->cap, a->n, sizeof *a->items);
    if (rc == 0)
        a->items[a->n++] = (struct arena){p, size};
    pthread_mutex_unlock(&a->lock);
    if (rc != 0) {
        munmap(p, size);
        return NULL;
    }
    return p;
}

VLCS_API void vlcs_arenas_free(void *arenas, void *ptr, size_t size)
{
    vlcs_arenas *a = arenas;
    pthread_mutex_lock(&a->lock);
    /* newest first: an arena freed is most often one of the last made */
    for (size_t i = a->n; i-- > 0;) {
        if (a->items[i].ptr == ptr) {
            a->items[i] = a->items[--a->n];
            break;
        }
    }
    pthread_mutex_unlock(&a->lock);
    munmap(ptr, size);
}

VLCS_API size_t vlcs_arenas_release(vlcs_arenas *a)
{
    if (a == NULL)
        return 0;
    size_t bytes = 0;
    for (size_t i = 0; i < a->n; i++) {
        munmap(a->items[i].ptr, a->items[i].size);
        bytes += a->items[i].size;
    }
    pthread_mutex_destroy(&a->lock);
    free(a->items);
    free(a);
    return bytes;
}

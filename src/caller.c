/*
 * caller.c - which of a set of loaded objects is the innermost one on the
 * calling thread's native stack.  Python code cannot see C callers: when
 * numpy's C code imports a module lazily, only the native stack says which
 * copy of numpy asked (see python/vlcs/_isolation/imports.py).
 */
#include "common.h"
#include "caller.h"
#include "context.h"
#include "copy_owners.h"
#include "objects.h"
#include "registry.h"

#include <execinfo.h>
#include <stdint.h>
#include <stdlib.h>

enum { MAX_FRAMES = 256 };

vlcs_ctx *ctx_of_address(const void *addr)
{
    void *map = object_at(addr);
    Lmid_t lmid = object_lmid(map);
    if (lmid == -1)
        return NULL;
    if (lmid == LM_ID_BASE)
        return copies_owner(map); /* a copy-mode context's copy, or the base's own */
    vlcs_ctx *found = NULL;
    registry_lock();
    for (vlcs_ctx *c = registry_first(); c && !found; c = registry_next(c))
        if (__atomic_load_n(&c->has_ns, __ATOMIC_ACQUIRE) && c->ns.lmid == lmid &&
            c->magic == CTX_ALIVE)
            found = c;
    registry_unlock();
    return found;
}

static int cmp_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (void *const *)a, y = (uintptr_t) * (void *const *)b;
    return (x > y) - (x < y);
}

VLCS_API void *vlcs_stack_find(void **handles, unsigned long n)
{
    if (handles == NULL || n == 0)
        return NULL;
    qsort(handles, n, sizeof *handles, cmp_ptr);
    void *pcs[MAX_FRAMES];
    int depth = backtrace(pcs, MAX_FRAMES);
    void *last = NULL;
    for (int i = 1; i < depth; i++) {
        /* A return address points after the call; -1 stays inside the
         * caller even when the call was its last instruction. */
        void *map = object_at((char *)pcs[i] - 1);
        if (map == NULL || map == last)
            continue;
        last = map;
        if (bsearch(&map, handles, n, sizeof *handles, cmp_ptr))
            return map;
    }
    return NULL;
}

/*
 * pools.c - the thread pools of libraries that vlcs resizes itself, through
 * each library's own call, when an elastic context grows or shrinks.
 *
 * The functions are the set_threads of the library families that say so
 * (families.c: OpenBLAS, oneMKL, and any family registered at run time),
 * looked up in the handles the context loaded (dlsym searches each one's
 * dependencies too), once per change of its libraries or of the families.
 * OpenMP is not among them: its team size is the calling thread's setting,
 * which no other thread may change, so vlcs makes the runtime follow the
 * CPUs itself (OMP_DYNAMIC; see elastic.c).
 */
#include "internal.h"

#include <stdlib.h>

#define MAX_PER_HANDLE 16

static void rescan(vlcs_ctx *c)
{
    c->npool_resize = 0;
    unsigned gen = families_generation();
    for (size_t h = 0; h < c->nhandles; h++) {
        struct family_fn found[MAX_PER_HANDLE];
        size_t n = families_find(c->handles[h], FAMILY_RESIZE, found, 0, MAX_PER_HANDLE);
        for (size_t i = 0; i < n; i++) {
            bool dup = false;
            for (size_t k = 0; k < c->npool_resize && !dup; k++)
                dup = c->pool_resize[k].fn == found[i].fn;
            if (dup)
                continue;
            if (array_grow((void **)&c->pool_resize, &c->cappool_resize, c->npool_resize,
                           sizeof *c->pool_resize) != 0)
                return; /* out of memory: resize what was found; try again next time */
            c->pool_resize[c->npool_resize++] = found[i];
        }
    }
    c->pools_gen = gen;
}

size_t pools_find(vlcs_ctx *c, struct family_fn *out, size_t cap)
{
    if (c->pools_gen != families_generation())
        rescan(c);
    size_t n = c->npool_resize < cap ? c->npool_resize : cap;
    for (size_t i = 0; i < n; i++)
        out[i] = c->pool_resize[i];
    return n;
}

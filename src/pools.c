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
#include "common.h"
#include "pools.h"
#include "context.h"
#include "families.h"

/* Each function once, however many handles reach it (dlsym searches a
 * handle's dependencies too); at most MAX_POOLS, all a plan resizes. */
static void rescan(vlcs_ctx *c)
{
    unsigned gen = families_generation(); /* before: a family registered meanwhile rescans */
    c->el.npool_resize = 0;
    for (size_t h = 0; h < c->nhandles; h++)
        c->el.npool_resize = families_find(c->handles[h], FAMILY_RESIZE, c->el.pool_resize,
                                        c->el.npool_resize, MAX_POOLS);
    c->el.pools_gen = gen;
}

size_t pools_find(vlcs_ctx *c, struct family_fn *out, size_t cap)
{
    if (c->el.pools_gen != families_generation())
        rescan(c);
    size_t n = c->el.npool_resize < cap ? c->el.npool_resize : cap;
    for (size_t i = 0; i < n; i++)
        out[i] = c->el.pool_resize[i];
    return n;
}

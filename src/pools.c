/*
 * pools.c - the thread pools of libraries that vlcs resizes itself, through
 * each library's own call, when an elastic context grows or shrinks.
 *
 * One list of the functions that set a pool's size (void f(int)),
 * in every spelling its builds export.  They are looked up in the handles
 * the context loaded (dlsym searches each one's dependencies too), once
 * per change of its libraries.  OpenMP is not here: its team size is the
 * calling thread's setting, which no other thread may change, so vlcs makes
 * the runtime follow the CPUs itself (OMP_DYNAMIC; see elastic.c).  The
 * Python package's classes in vlcs/libraries say what each family does.
 */
#include "internal.h"

#include <stdlib.h>

static const char *const resize_symbols[] = {
    /* OpenBLAS: Debian's, ILP64 builds (64_), numpy's and scipy's wheels. */
    "openblas_set_num_threads",
    "openblas_set_num_threads64_",
    "scipy_openblas_set_num_threads",
    "scipy_openblas_set_num_threads64_",
    /* oneMKL: its global setting (not the thread-local _Local one). */
    "MKL_Set_Num_Threads",
};

#define NSYMS (sizeof resize_symbols / sizeof *resize_symbols)

static bool seen(void (**fns)(int), size_t n, void (*f)(int))
{
    for (size_t i = 0; i < n; i++)
        if (fns[i] == f)
            return true;
    return false;
}

static void rescan(vlcs_ctx *c)
{
    c->npool_resize = 0;
    for (size_t h = 0; h < c->nhandles; h++)
        for (size_t s = 0; s < NSYMS; s++) {
            void (*f)(int);
            *(void **)&f = dlsym(c->handles[h], resize_symbols[s]);
            if (f == NULL || seen(c->pool_resize, c->npool_resize, f))
                continue;
            if (array_grow((void **)&c->pool_resize, &c->cappool_resize, c->npool_resize,
                           sizeof *c->pool_resize) != 0)
                return; /* out of memory: resize what was found; try again next time */
            c->pool_resize[c->npool_resize++] = f;
        }
    c->pools_known = true;
}

size_t pools_in(void *handle, void (**out)(int), size_t cap)
{
    size_t n = 0;
    for (size_t s = 0; s < NSYMS && n < cap; s++) {
        void (*f)(int);
        *(void **)&f = dlsym(handle, resize_symbols[s]);
        if (f != NULL && !seen(out, n, f))
            out[n++] = f;
    }
    return n;
}

size_t pools_find(vlcs_ctx *c, void (**out)(int), size_t cap)
{
    if (!c->pools_known)
        rescan(c);
    size_t n = c->npool_resize < cap ? c->npool_resize : cap;
    for (size_t i = 0; i < n; i++)
        out[i] = c->pool_resize[i];
    return n;
}

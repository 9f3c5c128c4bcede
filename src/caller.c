/*
 * caller.c - which of a set of loaded objects is the innermost one on the
 * calling thread's native stack.  Python code cannot see C callers: when
 * numpy's C code imports a module lazily, only the native stack says which
 * copy of numpy asked (see python/vlcs/_imports.py).
 */
#include "internal.h"

#include <execinfo.h>
#include <stdint.h>
#include <stdlib.h>

enum { MAX_FRAMES = 256 };

static void *object_of(void *pc)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 35)
    struct dl_find_object r;
    /* A return address points after the call; -1 stays inside the caller
     * even when the call was its last instruction. */
    if (_dl_find_object((char *)pc - 1, &r) == 0)
        return r.dlfo_link_map;
    return NULL;
#else
    Dl_info info;
    void *map = NULL;
    if (dladdr1((char *)pc - 1, &info, &map, RTLD_DL_LINKMAP) == 0)
        return NULL;
    return map;
#endif
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
        void *map = object_of(pcs[i]);
        if (map == NULL || map == last)
            continue;
        last = map;
        if (bsearch(&map, handles, n, sizeof *handles, cmp_ptr))
            return map;
    }
    return NULL;
}

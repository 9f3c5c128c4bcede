/*
 * objects.c - which loaded object holds an address, without the loader's
 * lock where glibc allows: callable from a signal handler (fault.c) and on
 * every lookup of the native stack (caller.c).
 */
#include "common.h"
#include "objects.h"

/*
 * glibc 2.35's _dl_find_object answers without the loader's lock; it is
 * looked up at run time so that libvlcs asks for nothing newer than glibc
 * 2.34 (the manylinux_2_34 wheel) and uses it where the running glibc has it.
 */
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 35)
typedef int (*find_object_fn)(void *, struct dl_find_object *);

static find_object_fn find_object(void)
{
    static find_object_fn fn;
    static int looked;
    if (!__atomic_load_n(&looked, __ATOMIC_ACQUIRE)) {
        __atomic_store_n(&fn, (find_object_fn)dlsym(RTLD_DEFAULT, "_dl_find_object"),
                         __ATOMIC_RELAXED);
        __atomic_store_n(&looked, 1, __ATOMIC_RELEASE);
    }
    return __atomic_load_n(&fn, __ATOMIC_RELAXED);
}
#endif

void *object_at(const void *addr)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 35)
    find_object_fn fn = find_object();
    if (fn) {
        struct dl_find_object r;
        return fn((void *)addr, &r) == 0 ? r.dlfo_link_map : NULL;
    }
#endif
    Dl_info info;
    void *map = NULL;
    if (dladdr1(addr, &info, &map, RTLD_DL_LINKMAP) == 0)
        return NULL;
    return map;
}

Lmid_t object_lmid(void *map)
{
    Lmid_t lmid;
    return map != NULL && dlinfo(map, RTLD_DI_LMID, &lmid) == 0 ? lmid : -1;
}

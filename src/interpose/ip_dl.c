/*
 * ip_dl.c - dlopen inside a namespace; in copy mode, dlopen, dlerror,
 * dl_iterate_phdr and dladdr as a namespace's would answer.
 *
 * glibc keeps a global scope for the base namespace only: dlopen with
 * RTLD_GLOBAL in a dlmopen namespace dereferences that namespace's missing
 * main search list and crashes the process (glibc 2.36, add_to_global_resize).
 * Real libraries do it on their own: oneMKL's libmkl_rt opens its core,
 * threading and interface libraries that way, oneTBB libtbbmalloc.  Such a
 * load goes to libvlcs (../ns_global.c), which loads the library and adds it
 * to the namespace's global scope itself; a name with a '$' (which libvlcs
 * would expand from its own object), and the table's absence, drop the flag:
 * the library loads as if RTLD_LOCAL.
 *
 * The call must be a tail call: glibc finds the caller's namespace and its
 * RPATH/RUNPATH from the return address, which a jump leaves untouched.
 * CMake compiles this file with -O2 so that it is one at every build type.
 */
#define _GNU_SOURCE
#include "ip.h"
#include "../gscope.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>

typedef void *(*dlopen_fn)(const char *, int);

IP_EXPORT void *dlopen(const char *file, int mode)
{
    gscope_clear_self();
    /* Copy mode: glibc would load the shared original (see ../ip_abi.h). */
    const struct vlcs_ip_api *a = __atomic_load_n(&vlcs_ip, __ATOMIC_ACQUIRE);
    if (a != NULL && a->dlopen != NULL && file != NULL)
        return a->dlopen(a->ctx, file, mode, __builtin_return_address(0));
    if ((mode & RTLD_GLOBAL) && a != NULL && a->dlopen_global != NULL && file != NULL &&
        strchr(file, '$') == NULL)
        return a->dlopen_global(a->ctx, file, mode, __builtin_return_address(0));
    NEXT(dlopen_fn, dlopen);
    return next_dlopen(file, mode & ~RTLD_GLOBAL);
}

/* dlsym as libc's, after the caller's mark of a global-scope lookup is
 * cleared where a failed one left it (../gscope.h).  A tail call, as glibc
 * finds the caller's object (RTLD_NEXT, RTLD_DEFAULT) from the return
 * address.  libc's is found by version: a plain lookup of "dlsym" from
 * here would find this one. */
typedef void *(*dlsym_fn)(void *, const char *);
static dlsym_fn next_dlsym_cache;

/* Found on the first call, which may come before this copy's constructors
 * run (another object's constructor looking a name up). */
static __attribute__((noinline)) dlsym_fn find_dlsym(void)
{
    dlsym_fn f = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (f == NULL)
        f = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    __atomic_store_n(&next_dlsym_cache, f, __ATOMIC_RELAXED);
    return f;
}

IP_EXPORT void *dlsym(void *handle, const char *name)
{
    gscope_clear_self();
    dlsym_fn next = __atomic_load_n(&next_dlsym_cache, __ATOMIC_RELAXED);
    if (next == NULL)
        next = find_dlsym();
    return next(handle, name);
}

/* libc's, looked up once when this copy loads: a lookup (dlsym) made when
 * dlerror is called would clear the very error it is asked for. */
typedef char *(*dlerror_fn)(void);
static dlerror_fn next_dlerror;
__attribute__((constructor)) static void find_dlerror(void) { next_dlerror = (dlerror_fn)ip_next("dlerror"); }

IP_EXPORT char *dlerror(void)
{
    const struct vlcs_ip_api *a = __atomic_load_n(&vlcs_ip, __ATOMIC_ACQUIRE);
    const char *why = a != NULL && a->dl_error != NULL ? a->dl_error() : NULL;
    if (why != NULL)
        return (char *)why;
    return next_dlerror();
}

/*
 * dl_iterate_phdr lists the namespace of its caller, found from the return
 * address.  Python code in a context calls it through ctypes (threadpoolctl
 * finds the context's OpenBLAS and OpenMP so), and ctypes' call comes from
 * libffi in the base namespace: called from here instead, glibc sees this
 * copy of the interposer, which lives in the context's namespace.  So this
 * one must NOT be a tail call.
 */
typedef int (*iterate_cb)(struct dl_phdr_info *, size_t, void *);
typedef int (*dl_iterate_phdr_fn)(iterate_cb, void *);

IP_EXPORT int dl_iterate_phdr(iterate_cb callback, void *data)
{
    gscope_clear_self();
    const struct vlcs_ip_api *a = __atomic_load_n(&vlcs_ip, __ATOMIC_ACQUIRE);
    if (a != NULL && a->iterate_phdr != NULL) /* copy mode: the base namespace holds all */
        return a->iterate_phdr(a->ctx, callback, data);
    NEXT(dl_iterate_phdr_fn, dl_iterate_phdr);
    int rc = next_dl_iterate_phdr(callback, data);
    __asm__ volatile("" ::: "memory"); /* keeps the call a call */
    return rc;
}

/*
 * dladdr names a copy by its original file, as a namespace's object is
 * named: libraries find their own folder from it (oneMKL opens
 * libmkl_def.so.3 and its other kernels from the folder of libmkl_core).
 */
typedef int (*dladdr1_fn)(const void *, Dl_info *, void **, int);

static int named_by_origin(const void *addr, Dl_info *info, void **extra, int flags)
{
    gscope_clear_self();
    NEXT(dladdr1_fn, dladdr1);
    int rc = next_dladdr1(addr, info, extra, flags);
    const struct vlcs_ip_api *a = __atomic_load_n(&vlcs_ip, __ATOMIC_ACQUIRE);
    if (rc == 0 || a == NULL || a->object_file == NULL) /* a namespace names it so */
        return rc;
    void *lm = NULL;
    Dl_info again;
    if (flags == RTLD_DL_LINKMAP)
        lm = *extra;
    else if (next_dladdr1(addr, &again, &lm, RTLD_DL_LINKMAP) == 0)
        lm = NULL;
    const char *file = lm != NULL ? a->object_file(a->ctx, lm) : NULL;
    if (file != NULL)
        info->dli_fname = file;
    return rc;
}

IP_EXPORT int dladdr(const void *addr, Dl_info *info)
{
    return named_by_origin(addr, info, NULL, 0);
}

IP_EXPORT int dladdr1(const void *addr, Dl_info *info, void **extra, int flags)
{
    return named_by_origin(addr, info, extra, flags);
}

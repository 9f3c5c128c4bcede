/*
 * ip_core.c - binding to a context, the ends of the process, stdio flush at
 * exit, and the allocator.
 *
 * The allocator functions forward to the base namespace's malloc so that
 * memory may be freed by whichever context or the base ends up owning it.
 * Before libvlcs binds this copy (while the namespace's libc initialises)
 * a small bump arena serves requests; its blocks are never freed, and a
 * realloc moves them to the base heap.
 */
#define _GNU_SOURCE
#include "ip.h"

#include <dlfcn.h>
#include <errno.h>
#include <printf.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

IP_HIDDEN const struct vlcs_ip_api *vlcs_ip;
static struct vlcs_ip_api bound_api;

/* Never read here: libvlcs's copy of this file that starts a namespace
 * holds the names of the namespace's first objects in it (ns_root.c).  Not
 * all zeros, so that it takes room in the file. */
IP_EXPORT char vlcs_ip_needed[VLCS_IP_NEEDED_ROOM] = "names of a namespace's first objects";

static const struct vlcs_ip_api *api(void) { return __atomic_load_n(&vlcs_ip, __ATOMIC_ACQUIRE); }

/* Once bound, libvlcs finds libc's functions without a lookup (a lookup by
 * RTLD_NEXT first walks every object of every namespace). */
IP_HIDDEN void *ip_next(const char *name)
{
    const struct vlcs_ip_api *a = api();
    void *fn = a != NULL ? a->libc_sym(a->ctx, name) : NULL;
    return fn != NULL ? fn : dlsym(RTLD_NEXT, name);
}

IP_EXPORT int vlcs_ip_bind(const struct vlcs_ip_api *api)
{
    if (api == NULL || api->abi_version != VLCS_IP_ABI_VERSION)
        return -1;
    bound_api = *api;
    __atomic_store_n(&vlcs_ip, &bound_api, __ATOMIC_RELEASE);
    /* after: their lookups go through libc_sym; nothing of the namespace
     * runs before ns_create returns, and each looks up what it lacks */
    ip_signal_bind();
    ip_end_bind();
    return 0;
}

/* Libraries in a namespace write through that namespace's libc, whose stdio
 * buffers the base's exit() does not flush.  _dl_fini runs this destructor
 * for every namespace at exit.  A copy-mode context's copy has no libc of
 * its own: the process's streams are the base's to flush (another thread's
 * descriptors among them, ip_run.c). */
__attribute__((destructor)) static void ip_flush_at_exit(void)
{
    const struct vlcs_ip_api *a = __atomic_load_n(&vlcs_ip, __ATOMIC_ACQUIRE);
    if (a == NULL || a->env_get == NULL)
        fflush(NULL);
}

/* ---- the ends of the process ---------------------------------------------- */

/* The namespace's libc would run its own, empty, atexit list and flush its
 * own streams, losing what the base has buffered and its handlers.  Before
 * binding (the namespace's libc starting up) the namespace's own are used.
 * A signal's end that came while a run was inside libc goes first. */
#define END_OF_PROCESS(name, field)                                             \
    IP_EXPORT __attribute__((noreturn)) void name(int status)                   \
    {                                                                           \
        const struct vlcs_ip_api *a = api();                                    \
        int end_ = a && a->sig_end_pending ? a->sig_end_pending() : 0;          \
        if (end_ != 0)                                                          \
            a->exit_now(128 + end_);                                            \
        if (a)                                                                  \
            a->field(status);                                                   \
        ((void (*)(int))ip_next(#name))(status);                                \
        __builtin_unreachable();                                                \
    }

END_OF_PROCESS(exit, exit)
END_OF_PROCESS(quick_exit, quick_exit)
END_OF_PROCESS(_exit, exit_now)
END_OF_PROCESS(_Exit, exit_now)

IP_EXPORT __attribute__((noreturn)) void abort(void)
{
    const struct vlcs_ip_api *a = api();
    if (a)
        a->abort();
    ((void (*)(void))ip_next("abort"))();
    __builtin_unreachable();
}

/* ---- fork ------------------------------------------------------------------ */

/* pthread_atfork is a static stub calling __register_atfork with the
 * object's __dso_handle; old binaries may call the exported one.  Handlers
 * go to libvlcs, whose own run at the base libc's fork (src/fork.c). */
IP_EXPORT int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void),
                                void *dso)
{
    const struct vlcs_ip_api *a = api();
    if (a)
        return a->register_atfork(a->ctx, prepare, parent, child, dso);
    return ((int (*)(void (*)(void), void (*)(void), void (*)(void), void *))ip_next(
        "__register_atfork"))(prepare, parent, child, dso);
}

IP_EXPORT int pthread_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void))
{
    return __register_atfork(prepare, parent, child, NULL);
}

/* The base's malloc locks and handlers are the ones a child needs. */
IP_EXPORT pid_t fork(void)
{
    const struct vlcs_ip_api *a = api();
    return a ? a->fork() : ((pid_t(*)(void))ip_next("fork"))();
}

/* vfork is fork here: a vfork child borrows its parent's memory and runs
 * no fork handlers, so it would exec with the process's descriptors 0, 1
 * and 2 rather than its context's streams, and its exec would run through
 * the interposer on its parent's stack.  A program that uses vfork only to
 * exec or _exit (what POSIX allows it) cannot tell the two apart. */
IP_EXPORT pid_t vfork(void) { return fork(); }

/* ---- allocator ---------------------------------------------------------- */

#define BUMP_SIZE (256 * 1024)
static alignas(64) unsigned char bump[BUMP_SIZE];
static size_t bump_used;

struct bump_hdr {
    size_t size;
    size_t pad;
};

static int in_bump(const void *p)
{
    return (const unsigned char *)p >= bump && (const unsigned char *)p < bump + BUMP_SIZE;
}

static void *bump_alloc(size_t size, size_t align)
{
    if (align < 16)
        align = 16;
    size_t start = __atomic_load_n(&bump_used, __ATOMIC_RELAXED), base, end;
    do {
        base = (start + sizeof(struct bump_hdr) + align - 1) & ~(align - 1);
        end = base + size;
        if (end > BUMP_SIZE || end < base) {
            errno = ENOMEM;
            return NULL;
        }
    } while (!__atomic_compare_exchange_n(&bump_used, &start, end, 0, __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED));
    ((struct bump_hdr *)(bump + base))[-1].size = size;
    return bump + base;
}

/* ---- printf extensions ------------------------------------------------------
 * libquadmath (OpenBLAS's libgfortran needs it) registers its %Q printf
 * handlers with the namespace's libc.  The tables that libc makes for them
 * come from the shared heap and only __libc_freeres would free them, so each
 * unloaded namespace left 8 KiB behind.  The blocks allocated while a
 * registration runs are recorded, and libvlcs has them freed
 * (vlcs_ip_release_printf) once nothing but this library and the
 * namespace's libc is left to read them. */
#define MAX_RECORDED 32
static pthread_mutex_t registering = PTHREAD_MUTEX_INITIALIZER;
static unsigned long recorder; /* the registering thread's pthread_t, 0: none */
static void *recorded[MAX_RECORDED]; /* more would be left behind, as before */
static size_t nrecorded;

static int recording(void)
{
    unsigned long r = __atomic_load_n(&recorder, __ATOMIC_RELAXED);
    return r != 0 && r == (unsigned long)pthread_self();
}

static void *record(void *p)
{
    if (p != NULL && nrecorded < MAX_RECORDED)
        recorded[nrecorded++] = p;
    return p;
}

static void unrecord(void *p)
{
    for (size_t i = 0; i < nrecorded; i++)
        if (recorded[i] == p) {
            recorded[i] = recorded[--nrecorded];
            return;
        }
}

#define RECORDED(call)                                                                   \
    do {                                                                                 \
        pthread_mutex_lock(&registering);                                                \
        __atomic_store_n(&recorder, (unsigned long)pthread_self(), __ATOMIC_RELAXED);    \
        r = (call);                                                                      \
        __atomic_store_n(&recorder, 0UL, __ATOMIC_RELAXED);                              \
        pthread_mutex_unlock(&registering);                                              \
    } while (0)

typedef int (*specifier_fn)(int, printf_function *, printf_arginfo_size_function *);
typedef int (*function_fn)(int, printf_function *, printf_arginfo_function *);
typedef int (*modifier_fn)(const wchar_t *);
typedef int (*type_fn)(printf_va_arg_function *);

IP_EXPORT int register_printf_specifier(int spec, printf_function *render,
                                        printf_arginfo_size_function *arginfo)
{
    NEXT(specifier_fn, register_printf_specifier)
    int r;
    RECORDED(next_register_printf_specifier(spec, render, arginfo));
    return r;
}

IP_EXPORT int register_printf_function(int spec, printf_function *render,
                                       printf_arginfo_function *arginfo)
{
    NEXT(function_fn, register_printf_function)
    int r;
    RECORDED(next_register_printf_function(spec, render, arginfo));
    return r;
}

IP_EXPORT int register_printf_modifier(const wchar_t *str)
{
    NEXT(modifier_fn, register_printf_modifier)
    int r;
    RECORDED(next_register_printf_modifier(str));
    return r;
}

IP_EXPORT int register_printf_type(printf_va_arg_function *fct)
{
    NEXT(type_fn, register_printf_type)
    int r;
    RECORDED(next_register_printf_type(fct));
    return r;
}

/* Called by libvlcs when the namespace is about to go. */
IP_EXPORT void vlcs_ip_release_printf(void)
{
    const struct vlcs_ip_api *a = api();
    pthread_mutex_lock(&registering);
    for (size_t i = 0; a != NULL && i < nrecorded; i++)
        a->free(recorded[i]);
    nrecorded = 0;
    pthread_mutex_unlock(&registering);
}

/* ---- the allocator ------------------------------------------------------------ */

IP_EXPORT void *malloc(size_t n)
{
    const struct vlcs_ip_api *a = api();
    if (a == NULL)
        return bump_alloc(n, 16);
    if (__builtin_expect(recording(), 0))
        return record(a->malloc(n));
    return a->malloc(n);
}

IP_EXPORT void free(void *p)
{
    const struct vlcs_ip_api *a = api();
    if (p != NULL && a != NULL && !in_bump(p)) {
        if (__builtin_expect(recording(), 0))
            unrecord(p);
        a->free(p);
    }
}

IP_EXPORT void *calloc(size_t n, size_t m)
{
    const struct vlcs_ip_api *a = api();
    if (a) {
        if (__builtin_expect(recording(), 0))
            return record(a->calloc(n, m));
        return a->calloc(n, m);
    }
    if (m != 0 && n > SIZE_MAX / m) {
        errno = ENOMEM;
        return NULL;
    }
    return bump_alloc(n * m, 16); /* static storage is zeroed */
}

IP_EXPORT void *realloc(void *p, size_t n)
{
    const struct vlcs_ip_api *a = api();
    if (a != NULL && __builtin_expect(recording(), 0) && (p == NULL || !in_bump(p))) {
        void *q = a->realloc(p, n);
        if (q != NULL) {
            unrecord(p);
            record(q);
        }
        return q;
    }
    if (p == NULL || !in_bump(p))
        return a ? a->realloc(p, n) : bump_alloc(n, 16);
    void *q = a ? a->malloc(n) : bump_alloc(n, 16);
    if (q != NULL) {
        size_t old = ((struct bump_hdr *)p)[-1].size;
        memcpy(q, p, old < n ? old : n);
    }
    return q;
}

IP_EXPORT void *reallocarray(void *p, size_t n, size_t m)
{
    if (m != 0 && n > SIZE_MAX / m) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, n * m);
}

IP_EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
    const struct vlcs_ip_api *a = api();
    if (a)
        return a->posix_memalign(out, align, n);
    if (align < sizeof(void *) || (align & (align - 1)) != 0)
        return EINVAL;
    *out = bump_alloc(n, align);
    return *out ? 0 : ENOMEM;
}

IP_EXPORT void *aligned_alloc(size_t align, size_t n)
{
    const struct vlcs_ip_api *a = api();
    return a ? a->aligned_alloc(align, n) : bump_alloc(n, align);
}

IP_EXPORT void *memalign(size_t align, size_t n)
{
    const struct vlcs_ip_api *a = api();
    return a ? a->memalign(align, n) : bump_alloc(n, align);
}

IP_EXPORT void *valloc(size_t n)
{
    const struct vlcs_ip_api *a = api();
    return a ? a->valloc(n) : bump_alloc(n, 4096);
}

IP_EXPORT void *pvalloc(size_t n)
{
    const struct vlcs_ip_api *a = api();
    return a ? a->pvalloc(n) : bump_alloc((n + 4095) & ~(size_t)4095, 4096);
}

IP_EXPORT size_t malloc_usable_size(void *p)
{
    if (p == NULL)
        return 0;
    if (in_bump(p))
        return ((struct bump_hdr *)p)[-1].size;
    return api()->malloc_usable_size(p);
}

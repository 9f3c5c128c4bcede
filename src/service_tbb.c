/*
 * service_tbb.c - oneTBB shared as a service, with arenas sized per context.
 *
 * oneTBB sizes an arena whose concurrency is "automatic" from a default it
 * computes once per process, from the affinity of whichever thread first
 * asks.  Shared as a service, one TBB serves every context, so that default
 * is the same everywhere: the base's if the base asks first, a context's
 * (and then the base's too) if a context does.  Two things fix that:
 *
 *  - when TBB is added as a service, the default is fixed from the
 *    process's CPUs, on the calling thread widened to them for the moment;
 *  - a context's forwarder points two TBB entry points at the hooks below:
 *    an automatic arena created by code in a context gets the context's CPU
 *    count, as it would from a private copy of TBB.
 *
 * The hooks read oneTBB's d1::task_arena_base, part of its stable ABI for
 * all of oneTBB 2021.x (libtbb.so.12); tests/c/test_tbb.cpp checks the
 * layout against the installed headers.  A thread's implicit arena (TBB
 * algorithms called outside any task_arena) is created inside TBB with the
 * process default: no entry point can size it.  For that, load TBB into
 * each context instead of as a service.
 */
#include "common.h"
#include "caller.h"
#include "context.h"
#include "cpuset.h"
#include "families.h"
#include "forwarder.h"
#include "hooks.h"
#include "registry.h"
#include "thread.h"
#include "view.h"

#include <stdint.h>

/* oneTBB's tbb::detail::d1::task_arena_base. */
struct tbb_arena_base {
    intptr_t version_and_traits;
    int initialization_state;
    void *arena; /* NULL until initialised */
    int max_concurrency; /* < 1: automatic */
    unsigned num_reserved_slots;
    int priority;
    int numa_id;   /* -1: any */
    int core_type; /* -1: any */
    int max_threads_per_core;
};

#define TBB_INITIALIZE "_ZN3tbb6detail2r110initializeERNS0_2d115task_arena_baseE"
#define TBB_MAX_CONCURRENCY "_ZN3tbb6detail2r115max_concurrencyEPKNS0_2d115task_arena_baseE"

typedef void (*initialize_fn)(struct tbb_arena_base *);
typedef int (*max_concurrency_fn)(const struct tbb_arena_base *);

static initialize_fn _Atomic real_initialize;
static max_concurrency_fn _Atomic real_max_concurrency;

/* The concurrency a context's automatic arena gets, or 0 to leave it.
 * Whose arena: the library holding it (a static arena, as OpenCV's), else
 * the code that called (tail calls can hide it), else the thread's context. */
static int context_concurrency(const struct tbb_arena_base *ta, const void *ret)
{
    if (ta->arena != NULL || ta->max_concurrency >= 1 || ta->numa_id >= 0 || ta->core_type >= 0)
        return 0; /* sized by its creator, or by a NUMA node or core type */
    vlcs_ctx *c = ctx_of_address(ta);
    if (c == NULL)
        c = ctx_of_address((const char *)ret - 1);
    if (c == NULL)
        c = thread_current();
    return c ? (int)view_ncpus(c) : 0;
}

static void hook_initialize(struct tbb_arena_base *ta)
{
    int n = context_concurrency(ta, __builtin_return_address(0));
    if (n > 0)
        ta->max_concurrency = n;
    atomic_load(&real_initialize)(ta);
}

static int hook_max_concurrency(const struct tbb_arena_base *ta)
{
    /* An arena not yet initialised reports what it will get. */
    int n = ta ? context_concurrency(ta, __builtin_return_address(0)) : 0;
    return n > 0 ? n : atomic_load(&real_max_concurrency)(ta);
}

static size_t tbb_overrides(void *handle, struct fwd_override *ov, size_t cap)
{
    if (cap < 2 || dlsym(handle, TBB_INITIALIZE) == NULL ||
        dlsym(handle, TBB_MAX_CONCURRENCY) == NULL)
        return 0;
    ov[0] = (struct fwd_override){TBB_INITIALIZE, (void *)hook_initialize};
    ov[1] = (struct fwd_override){TBB_MAX_CONCURRENCY, (void *)hook_max_concurrency};
    return 2;
}

static void tbb_note_service(void *handle)
{
    initialize_fn init = (initialize_fn)dlsym(handle, TBB_INITIALIZE);
    max_concurrency_fn maxc = (max_concurrency_fn)dlsym(handle, TBB_MAX_CONCURRENCY);
    if (init == NULL || maxc == NULL)
        return;
    atomic_store(&real_initialize, init);
    atomic_store(&real_max_concurrency, maxc);

    /* Fix the process default now, from every CPU of the process. */
    vmask mine;
    bool widened = mask_get_thread(0, &mine) == 0 && !mask_eq(&mine, process_mask()) &&
                   mask_set_thread(0, process_mask()) == 0;
    maxc(NULL);
    if (widened)
        mask_set_thread(0, &mine);
}

const struct service_hooks tbb_hooks = {
    .family = "oneTBB",
    .overrides = tbb_overrides,
    .note_service = tbb_note_service,
};

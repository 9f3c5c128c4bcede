/*
 * thread_state.h - the calling thread's place among contexts: the contexts
 * it has entered, the one whose library created it, its CPUs as last set.
 * thread.c keeps it; thread_current() (thread_state.c) is what files below
 * thread.c read of it.
 */
#ifndef VLCS_THREAD_STATE_H
#define VLCS_THREAD_STATE_H

#include "common.h"
#include "context.h"
#include "cpuset.h"
#include "hooks.h"
#include "namespace.h"

#include <sys/syscall.h>
#include <unistd.h>

#define MAX_DEPTH 64

struct tstate {
    pid_t tid;
    int depth;
    vlcs_ctx *stack[MAX_DEPTH];
    int hook_saved[MAX_DEPTH][VLCS_HOOK_SLOTS]; /* for the hooks' on_leave */
    vlcs_ctx *implicit; /* the context whose library created this thread */
    vmask saved;        /* affinity before the outermost enter */
    vmask cur;          /* affinity as last set or read by this thread */
    atomic_bool moved;  /* set_cpus moved the thread: cur is stale */
    unsigned ns_ready[NS_SLOTS]; /* by ns_slot: ns_generation + 1 when its libc set this thread up */
    /* its last read of its own affinity by a context's code (view.c):
     * what the kernel said and what the context's view showed */
    struct {
        vlcs_ctx *ctx, *in; /* whose code read it; the context the thread was in */
        int depth;
        vmask real, seen;
    } read;
};

extern HIDDEN _Thread_local struct tstate vlcs_thread_self;

static inline struct tstate *tstate(void)
{
    if (vlcs_thread_self.tid == 0)
        vlcs_thread_self.tid = (pid_t)syscall(SYS_gettid);
    return &vlcs_thread_self;
}

/* The context the thread is in: the last it entered, else its creator's. */
static inline vlcs_ctx *effective(const struct tstate *ts)
{
    int d = __atomic_load_n(&ts->depth, __ATOMIC_ACQUIRE);
    return d > 0 ? __atomic_load_n(&ts->stack[d - 1], __ATOMIC_RELAXED)
                 : __atomic_load_n(&ts->implicit, __ATOMIC_RELAXED);
}

#endif

/*
 * gscope.h - a thread's mark that it is looking a name up in the global
 * scope, cleared where a namespace's libc left it set.
 *
 * glibc marks a thread (a word of its thread control block) while
 * dlsym(RTLD_DEFAULT) looks a name up, and dlclose waits until no other
 * thread is marked.  A namespace has a libc of its own: its dlsym sets the
 * mark and catches the lookup's error with its own handler, but ld.so
 * raises that error through the first libc's, whose innermost handler is
 * the one dlsym set around the whole call.  A name not found so jumps past
 * the clearing: the thread stays marked until its next lazy binding, and a
 * dlclose in any other thread waits for it.  LLVM's OpenMP runtime looks up
 * optional names that way as it starts; two instances of an OpenMP program
 * under `vlcs exec` then hung, each unloading its program while the other,
 * marked, waited for the loader's lock.
 *
 * Where a thread is known to be outside ld.so, vlcs clears its mark as
 * glibc does (exchanged for 0, a waiter woken): as it leaves a context,
 * and as a context's code enters dlsym, dlopen, dladdr or dl_iterate_phdr
 * (the interposer), each of which may wait for the loader's lock that such
 * a dlclose holds.  (The instances' code itself looked names up again
 * while the other's dlclose waited.)
 * Only this thread sets its mark, and others only turn "marked" into
 * "marked, waited for", so a mark read as 0 stays 0.  The word is at
 * %fs:0x1c on x86-64 (tcbhead_t's gscope_flag, unchanged since glibc 2.9
 * beside the stack guard gcc reads at %fs:0x28); elsewhere nothing is done.
 */
#ifndef VLCS_GSCOPE_H
#define VLCS_GSCOPE_H

#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Call only where the thread is outside ld.so and every libc's dl*
 * functions: the mark is then stale if set. */
static inline void gscope_clear_self(void)
{
#if defined(__x86_64__)
    int now;
    __asm__ volatile("movl %%fs:0x1c, %0" : "=r"(now));
    if (now == 0)
        return;
    /* the thread's control block starts at its pthread_t (tcbhead_t.self) */
    int *mark = (int *)((char *)pthread_self() + 0x1c);
    if (__atomic_exchange_n(mark, 0, __ATOMIC_RELEASE) == 2) /* "marked, waited for" */
        syscall(SYS_futex, mark, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
#endif
}

#endif

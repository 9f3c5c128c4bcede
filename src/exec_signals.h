/*
 * exec_signals.h - the signals of a program's instances (exec_signals.c):
 * each instance's actions are its own, and what is sent to it reaches it.
 */
#ifndef VLCS_EXEC_SIGNALS_H
#define VLCS_EXEC_SIGNALS_H

#include "common.h"
#include "context.h"

#include <signal.h>
#include <sys/time.h>
#include <time.h>

/* The instance c runs on this thread from now until exec_signals_end:
 * its actions start as a new process's (every signal the process ignores
 * stays ignored, the rest take their default).  -1 with the error set:
 * too many instances at once. */
HIDDEN int exec_signals_begin(vlcs_ctx *c);
/* Its actions, timers and children are forgotten; when no instance is
 * left, the process gets back every action vlcs took over. */
HIDDEN void exec_signals_end(vlcs_ctx *c);

/* A child started, or reaped, by the instance running on this thread. */
HIDDEN void exec_signals_child(pid_t pid);
HIDDEN void exec_signals_child_gone(pid_t pid);

/* The signal whose default end the instance on this thread could not take
 * where it was, taken off (0: none): the caller ends it. */
HIDDEN int exec_signals_end_pending(void);
/* Where c's instance's pending end is kept (NULL: none runs), for a cheap
 * look before exec_signals_end_pending. */
HIDDEN _Atomic int *exec_signals_pending_word(vlcs_ctx *c);

/* The interposer's (ip_abi.h): 1 when c runs no instance (libc answers),
 * else 0 or -errno; exec_kill and exec_raise return 128 + sig when the
 * caller is to end its instance with that status (as _exit does). */
HIDDEN int exec_sigaction(vlcs_ctx *c, int sig, const struct sigaction *act,
                          struct sigaction *old);
HIDDEN int exec_kill(vlcs_ctx *c, pid_t pid, int sig);
HIDDEN int exec_raise(vlcs_ctx *c, int sig);
HIDDEN int exec_setitimer(vlcs_ctx *c, int which, const struct itimerval *value,
                          struct itimerval *old);
/* The thread a timer of c's should signal (SIGEV_THREAD_ID) and the timer
 * once made: 0 when c runs no instance. */
HIDDEN pid_t exec_timer_thread(vlcs_ctx *c);
HIDDEN void exec_timer_made(vlcs_ctx *c, int kernel_id);

#endif

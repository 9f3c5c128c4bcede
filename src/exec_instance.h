/*
 * exec_instance.h - a program's instance while it runs (exec_instance.c):
 * how it ends, its children, its exec.  vlcs_ctx_exec (exec.c) starts and
 * ends one on the thread that runs it; the interposer's exit, abort, fork,
 * wait and exec reach the rest through the vlcs_ip_api table.
 */
#ifndef VLCS_EXEC_INSTANCE_H
#define VLCS_EXEC_INSTANCE_H

#include "common.h"
#include "context.h"

#include <setjmp.h>

/* The next atexit handler the interposer kept of the program's: 1 and
 * the handler, or 0 when none is left. */
typedef int (*next_handler_fn)(void (**)(void *), void **);

struct instance {
    jmp_buf done;
    volatile int status; /* written by exec_exit, read after its longjmp */
    volatile bool now; /* _exit: the rest of its atexit handlers never run */
    volatile bool discard; /* _exit, abort, a signal: its streams' buffers are lost */
    pid_t pid; /* the process it runs in: a vfork child of it is not it */
    pid_t *children; /* started by its thread and not reaped yet */
    size_t nchildren, capchildren;
    /* Its end, which any of its threads may take (under live_lock). */
    vlcs_ctx *c;
    next_handler_fn next_handler;
    struct instance *next_live;
    pid_t ender;        /* the thread that took it (its main thread's or another) */
    int end_status;     /* another thread's exit status */
    bool handlers_done; /* that thread has run the handlers and flushed */
    bool main_left;     /* the main thread is out of the program */
};

/* i runs on this thread from now (it is the instance an exit here ends)
 * until instance_end, which says whether another of its threads ended it. */
HIDDEN void instance_begin(struct instance *i);
HIDDEN bool instance_end(struct instance *i);
HIDDEN bool instance_running_here(void);
/* The main thread's end of the program: false when another thread took
 * the end first (its handlers are that thread's). */
HIDDEN bool instance_main_takes_end(struct instance *i);

/* api->exit, ->quick_exit, ->exit_now: on a thread running a program
 * (vlcs_ctx_exec), the end of that run; elsewhere the process's. */
HIDDEN void exec_exit(int status) __attribute__((noreturn));
HIDDEN void exec_quick_exit(int status) __attribute__((noreturn));
HIDDEN void exec_exit_now(int status) __attribute__((noreturn));
HIDDEN void exec_abort(void) __attribute__((noreturn));
/* api->pthread_join: on a program's main thread, a join that the
 * instance's end (exit() in another of its threads, a signal's default
 * end) cuts short as it cuts a process's; elsewhere pthread_join. */
HIDDEN int exec_pthread_join(pthread_t th, void **ret);
HIDDEN int exec_instead(int (*run)(void *), void *arg);
/* fork, and the children of the instance this thread runs (exec.c) */
struct rusage;
HIDDEN pid_t exec_fork(void);
HIDDEN void exec_child_started(pid_t pid);
HIDDEN pid_t exec_wait4(pid_t pid, int *status, int options, struct rusage *ru);
HIDDEN pid_t exec_wait4_api(pid_t pid, int *status, int options, struct rusage *ru); /* -errno */

/* What the context's libc buffers written, as at a process's exit (in copy
 * mode the streams the run opened and its own three: the process's others
 * are not its). */
HIDDEN void exec_flush(vlcs_ctx *c);

#endif

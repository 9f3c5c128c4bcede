/*
 * exec_instance.h - a program's instance while it runs (exec_instance.c):
 * how it ends, its children, its exec.  vlcs_ctx_exec (exec.c) starts and
 * ends one on the thread that runs it; the interposer's exit, abort, fork,
 * wait and exec reach the rest through the vlcs_ip_api table.
 */
#ifndef VLCS_EXEC_INSTANCE_H
#define VLCS_EXEC_INSTANCE_H

#include "internal.h"

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

#endif

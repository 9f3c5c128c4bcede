/*
 * fault.h - a fault in a context's code ends the call that ran it (fault.c).
 */
#ifndef VLCS_FAULT_H
#define VLCS_FAULT_H

#include "common.h"
#include "context.h"

/* fn(arg) behind a recovery point for c, which the caller has entered
 * (fault.c): 0 with *result; 1 when a fault was contained (c is broken,
 * its report in c->fault); -1 with the error set. */
HIDDEN int fault_guarded(vlcs_ctx *c, void *(*fn)(void *), void *arg, void **result);
/* abort() by a context's code inside fault_guarded ends the call there;
 * returns when it is not to be contained. */
HIDDEN void fault_abort(void);
/* A signal whose default would end the process ends the guarded call on
 * this thread instead, by the same rules as a fault (no report); returns
 * when the thread holds what the process needs there. */
HIDDEN void fault_end_by_signal(int sig, void *siginfo, void *ucontext);

#endif

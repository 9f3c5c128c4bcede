/*
 * thread.h - threads (thread.c).
 */
#ifndef VLCS_THREAD_H
#define VLCS_THREAD_H

#include "common.h"
#include "context.h"
#include "cpuset.h"

/* The calling thread's context (its innermost entered, or the one its
 * library thread belongs to), or NULL. */
HIDDEN vlcs_ctx *thread_current(void);
/* This thread's end, done now: it is about to end without its destructors. */
HIDDEN void thread_end_here(void);
HIDDEN void thread_created(vlcs_ctx *c);
HIDDEN void thread_begin(vlcs_ctx *c, void *(*start)(void *));
/* The start routines of c's library threads still alive (with c->lock held). */
HIDDEN size_t threads_created_starts(vlcs_ctx *c, void **out, size_t cap);
HIDDEN void thread_ns_created(vlcs_ctx *c); /* the creating thread was set up by libc */
HIDDEN void thread_ns_gone(vlcs_ctx *c); /* its namespace number may be reused */
HIDDEN void threads_move(vlcs_ctx *c, const vmask *m); /* with c->lock held */
HIDDEN void thread_after_fork(void);

/* Counts changes of any thread's effective context (thread.c). */
extern uint64_t vlcs_owner_epoch;

#endif

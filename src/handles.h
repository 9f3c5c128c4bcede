/*
 * handles.h - what a context loaded, and its threads that ended (handles.c).
 */
#ifndef VLCS_HANDLES_H
#define VLCS_HANDLES_H

#include "common.h"
#include "context.h"

/* Records a successful load (with c->lock held); 0 or -1 (out of memory). */
HIDDEN int ns_note_handle(vlcs_ctx *c, void *h);
/* Closes a recorded handle and forgets it (a rolled-back service add). */
HIDDEN void ns_close_handle(vlcs_ctx *c, void *h);
/* Closes the handles recorded after the first n, the last first (with
 * c->lock held): a load that failed after others it brought. */
HIDDEN void ns_close_since(vlcs_ctx *c, size_t n);
/* A library thread of c ended (with c->lock held): wait for it before unmapping. */
HIDDEN void ns_note_ended(vlcs_ctx *c, pid_t tid);
/* Whether the kernel has thread tid gone; returns once it has. */
HIDDEN bool thread_gone(pid_t tid);
HIDDEN void thread_wait_gone(pid_t tid);
HIDDEN void thread_pause(void); /* 0.2 ms between two looks */

#endif

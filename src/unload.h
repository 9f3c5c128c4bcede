/*
 * unload.h - giving a destroyed context's namespace back (unload.c).
 */
#ifndef VLCS_UNLOAD_H
#define VLCS_UNLOAD_H

#include "common.h"
#include "context.h"

/* Called without c->lock, once c is marked destroyed.  0: the namespace is
 * gone (glibc may reuse it); -1: it stays, with the reason in why. */
HIDDEN int ns_unload(vlcs_ctx *c, char *why, size_t size);
HIDDEN void drop_opens(void *(*reopen)(vlcs_ctx *, const char *), vlcs_ctx *c, const char *name);

/* unload.c: nothing of the context's libraries runs or is kept for a thread
 * any more, and its handles are closed (refused in strict mode) */
HIDDEN int ctx_close_libraries(vlcs_ctx *c, char *why, size_t size);

#endif

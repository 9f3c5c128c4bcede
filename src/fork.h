/*
 * fork.h - fork handlers of the namespaces' libraries (fork.c).
 */
#ifndef VLCS_FORK_H
#define VLCS_FORK_H

#include "common.h"
#include "context.h"

/* Registers fork.c's own handlers with the base libc; at init, before
 * runtime.c's, so that at fork the elastic and registry locks are taken
 * before fork.c's (loading holds a c->lock while a library registers). */
HIDDEN void fork_install(void);
HIDDEN int fork_register(vlcs_ctx *c, void (*prepare)(void), void (*parent)(void),
                         void (*child)(void), void *dso);
HIDDEN void fork_forget(vlcs_ctx *c); /* c's namespace went away */

#endif

/*
 * env.h - a context's environment (env.c).
 */
#ifndef VLCS_ENV_H
#define VLCS_ENV_H

#include "common.h"
#include "context.h"

/* vlcs_ctx_setenv (value) or unsetenv (NULL) of vlcs's own, for a context
 * it holds: 0, or -1 with the error set. */
HIDDEN int ctx_setenv(vlcs_ctx *c, const char *name, const char *value);
/* The same and name's value, with c->lock held. */
HIDDEN int env_change(vlcs_ctx *c, const char *name, const char *value);
HIDDEN const char *env_get(vlcs_ctx *c, const char *name);
/* Drops the changes recorded before c had libraries. */
HIDDEN void env_pending_clear(vlcs_ctx *c);

#endif

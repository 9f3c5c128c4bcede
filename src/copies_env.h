/*
 * copies_env.h - a copy-mode context's environment (copies_env.c).
 *
 * A copy-mode context shares the process's one libc, so its environment is
 * kept by vlcs and handed to the context's interposer copy (getenv, setenv,
 * putenv, clearenv through the vlcs_ip_api table).
 */
#ifndef VLCS_COPIES_ENV_H
#define VLCS_COPIES_ENV_H

#include "common.h"
#include "context.h"

/* c->cp.env made: the process's environment, then c's recorded changes
 * (c->pending_env); 0, or -1 out of memory (nothing made). */
HIDDEN int copy_env_start(vlcs_ctx *c);
/* c->cp.env and every string vlcs made for it freed; NULL after. */
HIDDEN void copy_env_free(vlcs_ctx *c);

/* As libc's, for c's code; NULL or -1 with errno as theirs. */
HIDDEN char *copy_env_get(vlcs_ctx *c, const char *name);
/* value NULL: unset */
HIDDEN int copy_env_set(vlcs_ctx *c, const char *name, const char *value, int overwrite);
HIDDEN int copy_env_put(vlcs_ctx *c, char *string);
HIDDEN int copy_env_clear(vlcs_ctx *c);
/* The whole of it, NULL-terminated, as environ holds it: valid until its
 * next change (a program's environ, exec.c). */
HIDDEN char **copy_env_block(vlcs_ctx *c);
/* Its i-th entry ("NAME=value"), NULL past the end; valid while c lives. */
HIDDEN const char *copy_env_entry(vlcs_ctx *c, size_t i);

#endif

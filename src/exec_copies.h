/*
 * exec_copies.h - a program's copies of libraries' variables (exec_copies.c).
 */
#ifndef VLCS_EXEC_COPIES_H
#define VLCS_EXEC_COPIES_H

#include "common.h"
#include "context.h"
#include "exec_program.h"

#include <link.h>


/* The program p, loaded at lm in c's namespace: its copies handed to the
 * interposer, getopt's state new, program_invocation_name argv0.  -1 with
 * the error set (naming the program). */
HIDDEN int exec_bind_copies(vlcs_ctx *c, const struct link_map *lm, const struct program *p,
                            const char *argv0);
/* The interposer lets go of them (before the program is unloaded). */
HIDDEN void exec_forget_copies(vlcs_ctx *c);
/* The interposer a program's calls reach first: its namespace's, or in
 * copy mode the context's renamed copy. */
HIDDEN void *exec_interposer(vlcs_ctx *c);
/* The address of the program's own copy of libc's variable name (loaded at
 * lm), NULL when it has none. */
HIDDEN void *exec_program_var(const struct link_map *lm, const struct program *p, const char *name);

#endif

/*
 * gscope.h - the calling thread's global-scope mark, cleared where glibc
 * left it set (gscope.c).
 */
#ifndef VLCS_GSCOPE_H
#define VLCS_GSCOPE_H

#include "common.h"

/* Call only where the thread is outside ld.so and every libc's dl*
 * functions: the mark is then stale if set, and cleared as glibc clears it
 * (its waiter woken). */
HIDDEN void gscope_clear_self(void);

#endif

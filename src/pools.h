/*
 * pools.h - the thread pools vlcs resizes when an elastic context grows or shrinks (pools.c).
 */
#ifndef VLCS_POOLS_H
#define VLCS_POOLS_H

#include "common.h"
#include "context.h"
#include "families.h"

/* The functions that resize the thread pools of c's libraries (the
 * families' set_threads: openblas_set_num_threads, ...), at most cap of
 * them into out; with c->lock held.  They are to be called without it
 * (family_fn_set). */
HIDDEN size_t pools_find(vlcs_ctx *c, struct family_fn *out, size_t cap);

#endif

/*
 * ns_tree.h - a load into a namespace, its tree's libraries loaded first by
 * the paths ld.so would use (ns_tree.c).
 */
#ifndef VLCS_NS_TREE_H
#define VLCS_NS_TREE_H

#include "common.h"
#include "context.h"

/* The libraries path needs that c's namespace lacks, loaded by the paths
 * ld.so would find them at, dependencies first (found once, then
 * remembered); with c->lock held; only for a path (a name is left to
 * ld.so).  0; or -1 when it could not plan or load them all (nothing of
 * them stays loaded: ld.so loads path as it would). */
HIDDEN int ns_preload_tree(vlcs_ctx *c, const char *path);

#endif

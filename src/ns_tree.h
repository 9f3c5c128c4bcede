/*
 * ns_tree.h - a load into a namespace, its tree's libraries loaded first by
 * their paths (ns_tree.c).
 */
#ifndef VLCS_NS_TREE_H
#define VLCS_NS_TREE_H

#include "common.h"
#include "context.h"

/* The libraries path needs that c's namespace lacks, loaded by the paths
 * ld.so would find them at, dependencies first, their files held while the namespace lives;
 * with c->lock held; only for a path (a name is left to ld.so).  0; or -1
 * when it could not plan or load them all (nothing of them stays loaded:
 * ld.so loads path as it would). */
HIDDEN int ns_preload_tree(vlcs_ctx *c, const char *path);
/* fd (from origin_hold) kept for as long as c's namespace lives, once per
 * file: 0, or -1 out of memory (let go). */
HIDDEN int ns_hold(vlcs_ctx *c, int fd);
/* The files held for c's namespace let go (it is gone). */
HIDDEN void ns_release_held(vlcs_ctx *c);

#endif

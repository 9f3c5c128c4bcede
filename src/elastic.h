/*
 * elastic.h - elastic contexts (elastic.c; the plan: elastic_policy.c).
 */
#ifndef VLCS_ELASTIC_H
#define VLCS_ELASTIC_H

#include "common.h"
#include "context.h"
#include "cpuset.h"

/* The lock over every elastic context's home, bound and current CPUs;
 * taken before registry_lock() and any c->lock. */
HIDDEN void elastic_lock(void);
HIDDEN void elastic_unlock(void);
/* c became busy (its first thread entered) or idle (its last left); called
 * with no lock held.  Lends and reclaims CPUs before it returns. */
HIDDEN void elastic_busy_changed(vlcs_ctx *c, bool busy);
/* A destroyed context stops lending and borrowing (no lock held). */
HIDDEN void elastic_forget(vlcs_ctx *c);
/* vlcs_ctx_set_cpus after its checks (no lock held): m becomes the home;
 * a static context runs there, an elastic one where the plan says.
 * 0, or -1 with the error set. */
HIDDEN int elastic_set_home(vlcs_ctx *c, const vmask *m);
/* getloadavg() inside c: -2 to ask the kernel, else the count answered. */
HIDDEN int elastic_loadavg(vlcs_ctx *c, double *avg, int n);
/* A library was loaded into c (no lock held): in an elastic context, its
 * pools start at the context's current CPUs, whatever they read at load. */
HIDDEN void elastic_loaded(vlcs_ctx *c, void *handle);

/* elastic.c, handed to node.c by runtime.c: another process planned (the
 * watcher); and called by runtime.c when this process joined the node. */
HIDDEN void elastic_node_changed(uint32_t generation);
HIDDEN void elastic_node_joined(void);

#endif

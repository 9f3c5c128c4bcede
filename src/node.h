/*
 * node.h - node-wide lending (node.c).
 */
#ifndef VLCS_NODE_H
#define VLCS_NODE_H

#include "common.h"
#include "cpuset.h"
#include "elastic_policy.h"

struct elastic_in; /* elastic_policy.h */
/* Joins the node's ledger and starts the watcher, which calls changed when
 * another process planned: VLCS_OK, or a vlcs_errcode_t with err set
 * (nothing changed). */
HIDDEN int node_enable(void (*changed)(uint32_t generation), char *err, size_t errsize);
HIDDEN bool node_active(void);
HIDDEN void node_after_fork(void); /* a child is no member */
/* With elastic_lock() held: publishes this process's elastic contexts
 * (keys[i] names in[i]), plans over the node's, stores and announces the
 * plan; out[i] is keys[i]'s share. */
HIDDEN void node_plan(const uint64_t *keys, const struct elastic_in *in, size_t n, vmask *out);
/* With elastic_lock() held: the latest plan's shares of keys[i] (whose
 * own view is in[i]) into out[i], within in[i]'s home and bound; the home
 * for a key the ledger has no slot for. */
HIDDEN void node_read(const uint64_t *keys, const struct elastic_in *in, size_t n, vmask *out);
/* Adds to out the CPUs of home that another member of the node runs on. */
HIDDEN void node_lent(uint64_t key, const vmask *home, vmask *out);
/* Whether this process's own plan produced that generation. */
HIDDEN bool node_planned_here(uint32_t generation);

#endif

/*
 * elastic_policy.h - the plan for elastic contexts (elastic_policy.c): one
 * small, replaceable function from who is busy to who runs where.
 */
#ifndef VLCS_ELASTIC_POLICY_H
#define VLCS_ELASTIC_POLICY_H

#include "common.h"
#include "cpuset.h"

struct elastic_in {
    vmask home;      /* its own CPUs (vlcs_ctx_set_cpus) */
    vmask bound;     /* the most it may grow to; contains home */
    bool busy;       /* a thread is inside it */
    unsigned weight; /* its share of lent CPUs; 0: its home's size */
    int most;        /* the most CPUs lends may bring it to; 0: its bound's */
};

/* out[i]: the CPUs context i runs on now. */
HIDDEN void elastic_plan(const struct elastic_in *in, size_t n, vmask *out);

#endif

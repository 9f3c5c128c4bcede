/*
 * elastic_policy.c - which CPUs each elastic context runs on, given who is
 * busy (this file decides what is lent, the runtime applies it).
 *
 * The rules, in order:
 *   - an idle context runs on its home: nothing of it runs, and a thread
 *     that enters finds its CPUs there at once;
 *   - a CPU is lendable when it is in the home of an idle context and in
 *     the home of no busy one (overlapping homes stay with the busy owner);
 *   - a busy context keeps its home and borrows lendable CPUs inside its
 *     bound.  Borrowers that want the same CPUs share them in proportion to
 *     their weights (their home sizes unless a priority says otherwise):
 *     each gets its quota, largest remainders first, as a run of the lowest
 *     CPUs still free in its bound, so that borrowed CPUs stay together;
 *   - a borrower never runs on more CPUs than its `most` (a limit elastic.c
 *     sets where lends did not raise its progress); what that leaves goes to
 *     other borrowers, or stays idle on its owner.
 *
 * A pure function of its input: the same input gives the same plan.
 */
#include "elastic_policy.h"

#include <limits.h>
#include <string.h>

static bool has(const vmask *m, int cpu) { return (m->w[cpu / 64] >> (cpu % 64)) & 1; }
static void set(vmask *m, int cpu) { m->w[cpu / 64] |= UINT64_C(1) << (cpu % 64); }
static void clear(vmask *m, int cpu) { m->w[cpu / 64] &= ~(UINT64_C(1) << (cpu % 64)); }

static int count(const vmask *m)
{
    int n = 0;
    for (int i = 0; i < MASK_WORDS; i++)
        n += __builtin_popcountll(m->w[i]);
    return n;
}

static int count_both(const vmask *a, const vmask *b)
{
    int n = 0;
    for (int i = 0; i < MASK_WORDS; i++)
        n += __builtin_popcountll(a->w[i] & b->w[i]);
    return n;
}

/* How many more CPUs a borrower now on `now` may take; INT_MAX without a limit. */
static int room(const struct elastic_in *in, const vmask *now)
{
    if (in->most <= 0)
        return INT_MAX;
    int left = in->most - count(now);
    return left > 0 ? left : 0;
}

void elastic_plan(const struct elastic_in *in, size_t n, vmask *out)
{
    vmask lendable = {{0}}, busy_homes = {{0}};
    for (size_t i = 0; i < n; i++)
        for (int w = 0; w < MASK_WORDS; w++) {
            if (in[i].busy)
                busy_homes.w[w] |= in[i].home.w[w];
            else
                lendable.w[w] |= in[i].home.w[w];
        }
    for (int w = 0; w < MASK_WORDS; w++)
        lendable.w[w] &= ~busy_homes.w[w];
    for (size_t i = 0; i < n; i++)
        out[i] = in[i].home;

    /* Quotas: the lendable CPUs that busy contexts can use, split by
     * weight; a context never gets more than its bound offers. */
    unsigned long total_weight = 0;
    int wanted = 0;
    vmask reachable = {{0}};
    for (size_t i = 0; i < n; i++) {
        if (!in[i].busy || count_both(&lendable, &in[i].bound) == 0)
            continue;
        total_weight += in[i].weight ? in[i].weight : (unsigned)count(&in[i].home);
        for (int w = 0; w < MASK_WORDS; w++)
            reachable.w[w] |= lendable.w[w] & in[i].bound.w[w];
    }
    wanted = count(&reachable);
    if (wanted == 0 || total_weight == 0)
        return;

    /* Borrowers past the 256th keep their homes: a process has at most 16
     * namespaces, so more busy elastic contexts than that share libraries
     * with none, and a plan for them is not worth a heap allocation. */
    enum { MAX = 256 };
    int quota[MAX];
    unsigned long rem[MAX];
    size_t m = n < MAX ? n : MAX;
    int given = 0;
    for (size_t i = 0; i < m; i++) {
        quota[i] = 0;
        rem[i] = 0;
        if (!in[i].busy || count_both(&lendable, &in[i].bound) == 0)
            continue;
        unsigned long wt = in[i].weight ? in[i].weight : (unsigned)count(&in[i].home);
        unsigned long share = (unsigned long)wanted * wt;
        quota[i] = (int)(share / total_weight);
        rem[i] = share % total_weight;
        int r = room(&in[i], &out[i]);
        if (quota[i] >= r) {
            quota[i] = r;
            rem[i] = 0;
        }
        given += quota[i];
    }
    /* The CPUs the floors left over go to the largest remainders (the
     * lowest index first among equals). */
    for (; given < wanted; given++) {
        size_t best = m;
        for (size_t i = 0; i < m; i++)
            if (in[i].busy && rem[i] > 0 && quota[i] < room(&in[i], &out[i]) &&
                (best == m || rem[i] > rem[best]))
                best = i;
        if (best == m)
            break;
        quota[best]++;
        rem[best] = 0;
    }

    /* Each takes its quota from the lowest free CPUs of its bound; what a
     * bound left untaken goes to any borrower that can use it. */
    vmask free_cpus = reachable;
    for (size_t i = 0; i < m; i++)
        for (int cpu = 0; quota[i] > 0 && cpu < VLCS_MAX_CPUS; cpu++)
            if (has(&free_cpus, cpu) && has(&in[i].bound, cpu)) {
                set(&out[i], cpu);
                clear(&free_cpus, cpu);
                quota[i]--;
            }
    for (int cpu = 0; cpu < VLCS_MAX_CPUS; cpu++) {
        if (!has(&free_cpus, cpu))
            continue;
        for (size_t i = 0; i < m; i++)
            if (in[i].busy && has(&in[i].bound, cpu) && room(&in[i], &out[i]) > 0) {
                set(&out[i], cpu);
                break;
            }
    }
}

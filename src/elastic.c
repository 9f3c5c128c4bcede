/*
 * elastic.c - elastic contexts: idle contexts lend their CPUs to busy ones
 * and take them back when a thread enters.
 *
 * The decision is elastic_policy.c's, a pure function of who is busy; this
 * file keeps the list of elastic contexts, runs the plan whenever one of
 * them turns busy or idle (or changes its home or bound), and applies it:
 * the view of every context whose CPUs changed is switched (its threads
 * move), then its libraries' pools are resized (pools.c).  All of that
 * happens under one lock, in the thread whose enter or leave caused it,
 * before that call returns: an owner that enters finds its CPUs free.
 *
 * OpenMP teams are sized by the thread that starts a region, from its own
 * setting, which no other thread can change; so an elastic context runs
 * its OpenMP runtimes with dynamic adjustment (OMP_DYNAMIC=true) and the
 * bound's size as the most (OMP_NUM_THREADS): libgomp then sizes each team
 * by the CPUs the starting thread may run on, which vlcs keeps equal to the
 * context's current set, less the load average, which inside an elastic
 * context reads 0 (vlcs, not the load, decides what the context has).
 */
#include "common.h"
#include "elastic.h"
#include "context.h"
#include "cpuset.h"
#include "elastic_policy.h"
#include "env.h"
#include "error.h"
#include "families.h"
#include "node.h"
#include "places.h"
#include "pools.h"
#include "registry.h"
#include "thread.h"
#include "trace.h"
#include "view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_ELASTIC 256

static pthread_mutex_t elastic_mutex = PTHREAD_MUTEX_INITIALIZER;
/* Everything below, under elastic_mutex.  The arrays are static rather than
 * on the stack: a plan runs on any thread, and some library threads have
 * small stacks. */
static vlcs_ctx *members[MAX_ELASTIC];
static size_t nmembers;
static struct elastic_in plan_in[MAX_ELASTIC];
static vmask plan_out[MAX_ELASTIC];
static uint64_t plan_keys[MAX_ELASTIC];

void elastic_lock(void) { pthread_mutex_lock(&elastic_mutex); }
void elastic_unlock(void) { pthread_mutex_unlock(&elastic_mutex); }

/* ---- VLCS_TRACE=elastic ---------------------------------------------------- */

static int trace_on = -1;

static bool tracing(void)
{
    if (trace_on < 0) {
        const char *t = getenv("VLCS_TRACE");
        trace_on = t != NULL && strstr(t, "elastic") != NULL;
    }
    return trace_on;
}

/* One line per context whose CPUs changed, with a monotonic timestamp (the
 * clock of perf and of Python's time.monotonic). */
static void trace(const vlcs_ctx *c, const vmask *from, const vmask *to, const char *why,
                  const vlcs_ctx *cause)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    char a[256], b[256], home[256], line[1024];
    mask_format(from, a, sizeof a);
    mask_format(to, b, sizeof b);
    mask_format(&c->home, home, sizeof home);
    const char *what = mask_count(to) > mask_count(from) ? "borrows" : "gives back";
    char reason[160];
    if (cause != NULL)
        snprintf(reason, sizeof reason, "'%s' %s", cause->name, why);
    else
        snprintf(reason, sizeof reason, "%s", why);
    int n = snprintf(line, sizeof line,
                     "vlcs elastic %ld.%06ld: context '%s' %s: CPUs %s -> %s (home %s; %s)\n",
                     (long)ts.tv_sec, ts.tv_nsec / 1000, c->name, what, a, b, home, reason);
    if (n > 0)
        (void)!write(STDERR_FILENO, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* ---- the plan ------------------------------------------------------------ */

static bool subset(const vmask *a, const vmask *b) { return mask_first_outside(a, b) < 0; }

/* With elastic_mutex held: each member's state, into plan_in and keys. */
static size_t gather(uint64_t *keys)
{
    size_t n = nmembers;
    for (size_t i = 0; i < n; i++) {
        vlcs_ctx *c = members[i];
        pthread_mutex_lock(&c->lock);
        plan_in[i].home = c->home;
        plan_in[i].bound = c->el.bound;
        plan_in[i].weight = c->el.weight;
        plan_in[i].most = c->el.most;
        plan_in[i].busy = c->entered > 0 && c->magic == CTX_ALIVE;
        pthread_mutex_unlock(&c->lock);
        keys[i] = (uint64_t)(uintptr_t)c;
    }
    return n;
}

/* With elastic_mutex held: moves each member to plan_out[i].  `cause` (NULL:
 * another process) and `why` only name the event in the trace. */
static void apply(size_t n, const vlcs_ctx *cause, const char *why)
{
    for (size_t i = 0; i < n; i++) {
        vlcs_ctx *c = members[i];
        struct family_fn resize[MAX_POOLS];
        size_t nresize = 0;
        pthread_mutex_lock(&c->lock);
        vmask from = ctx_view(c)->mask;
        bool changed = !mask_eq(&from, &plan_out[i]);
        /* Out of memory for a new view: the context stays where it is and
         * the next plan tries again. */
        if (changed && ctx_switch_view(c, &plan_out[i]) != 0)
            changed = false;
        if (changed && c->backend != NULL)
            nresize = pools_find(c, resize, MAX_POOLS);
        pthread_mutex_unlock(&c->lock);
        if (!changed)
            continue;
        /* A rate measured across a change of CPUs says nothing of either. */
        __atomic_store_n(&c->el.window_ns, 0, __ATOMIC_RELEASE);
        if (tracing())
            trace(c, &from, &plan_out[i], why, cause);
        if (tracing_on())
            trace_cpus(c, &from, &plan_out[i], why, cause);
        /* Called without c->lock: a pool that grows starts threads, which
         * register with c as they begin.  The context cannot be unloaded
         * meanwhile: destroy waits for elastic_mutex (elastic_forget). */
        int count = mask_count(&plan_out[i]);
        for (size_t k = 0; k < nresize; k++) {
            family_fn_set(&resize[k], count);
            if (tracing_on())
                trace_pool(c, resize[k].family, count);
        }
    }
}

/* With elastic_mutex held: plans (with the whole node when node-wide mode
 * is on) and moves those whose CPUs change. */
static void rebalance(const vlcs_ctx *cause, const char *why)
{
    size_t n = gather(plan_keys);
    if (node_active())
        node_plan(plan_keys, plan_in, n, plan_out);
    else
        elastic_plan(plan_in, n, plan_out);
    apply(n, cause, why);
}

/* ---- whether a lend pays ------------------------------------------------- */

/* A window of the rate spans this much at least: two units, as one alone
 * is noise, and 30 ms, so that short units are not judged on a few
 * scheduler ticks.  The first window after a change of CPUs only lets the
 * libraries settle: one unit and 50 ms (a pool thread that lost its CPU
 * spins out its wait in the time of the others). */
#define WINDOW_UNITS 2
#define WINDOW_NS UINT64_C(30000000)
#define SETTLE_UNITS 1
#define SETTLE_NS UINT64_C(50000000)
/* A lend pays when it raises the rate by this much: less is within the
 * noise of one window against the next. */
#define PAYS 1.05
/* ... and fails at once, in its settling window, when it halves the rate:
 * judged first after one unit and 10 ms, then again at the window's end.
 * Each millisecond more on such a lend costs more than the lend can give,
 * and a lend that pays does not run at half the rate for its first unit. */
#define FAILS 0.5
#define FAILS_EARLY_NS UINT64_C(10000000)
#define RETRY_FIRST_NS UINT64_C(2000000000)
#define RETRY_MOST_NS UINT64_C(64000000000)

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

/* One line per verdict on a lend (VLCS_TRACE=elastic); `gain` 0: no rate
 * on fewer CPUs to compare with yet. */
static void trace_verdict(const vlcs_ctx *c, int cpus, double rate, double gain, const char *what)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    char compared[64] = "no rate on fewer CPUs yet";
    if (gain > 0)
        snprintf(compared, sizeof compared, "%.2fx its rate on %d", gain, c->el.known_cpus);
    char line[512];
    int n = snprintf(line, sizeof line, "vlcs elastic %ld.%06ld: context '%s' on %d CPUs: %.4g units/s, %s: %s\n",
                     (long)ts.tv_sec, ts.tv_nsec / 1000, c->name, cpus, rate, compared, what);
    if (n > 0)
        (void)!write(STDERR_FILENO, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* With elastic_mutex held: the next window of c opens now; reports judge
 * it from `wait` on. */
static void window_open(vlcs_ctx *c, uint64_t units, uint64_t now, int cpus, uint64_t wait)
{
    c->el.window_cpus = cpus;
    __atomic_store_n(&c->el.window_units, units, __ATOMIC_RELAXED);
    __atomic_store_n(&c->el.window_wait_ns, wait, __ATOMIC_RELAXED);
    __atomic_store_n(&c->el.window_ns, now, __ATOMIC_RELEASE);
}

/* With elastic_mutex held: the verdict on a lend that brought c from
 * known_cpus to `cpus`, where it ran at `rate`.  One that did not pay
 * shrinks to half of what it added (then half again, down to nothing), and
 * is tried whole again after a wait that doubles. */
static void verdict(vlcs_ctx *c, int cpus, double rate, uint64_t now)
{
    struct ctx_elastic *e = &c->el;
    double gain = rate / e->known_rate;
    if (gain >= PAYS) {
        if (tracing())
            trace_verdict(c, cpus, rate, gain, "keeps the lend");
        e->known_cpus = cpus;
        e->known_rate = rate;
        e->backoff_ns = 0;
        if (e->most != 0 && e->most < cpus) { /* it was measured on its home meanwhile */
            e->most = 0;
            rebalance(c, "gained from its lend");
        }
        return;
    }
    int added = cpus - e->known_cpus;
    e->most = added >= 2 ? e->known_cpus + added / 2 : e->known_cpus;
    e->backoff_ns = e->backoff_ns == 0 ? RETRY_FIRST_NS
                    : e->backoff_ns >= RETRY_MOST_NS / 2 ? RETRY_MOST_NS
                                                         : 2 * e->backoff_ns;
    __atomic_store_n(&e->retry_ns, now + e->backoff_ns, __ATOMIC_RELAXED);
    if (tracing()) {
        char what[96];
        snprintf(what, sizeof what, "runs on %d at most for %.0f s", e->most,
                 (double)e->backoff_ns / 1e9);
        trace_verdict(c, cpus, rate, gain, what);
    }
    rebalance(c, "did not gain from its lend");
}

/* With elastic_mutex held: c reported progress, and a window may have
 * closed or a refused lend may be due again.  A closed window's rate on
 * more CPUs than the last measured is judged against it (verdict); a
 * context lent CPUs before any rate of it was known runs one window on its
 * home first, so that the lend has something to be judged against. */
static void judge(vlcs_ctx *c)
{
    struct ctx_elastic *e = &c->el;
    if (!e->active)
        return;
    uint64_t now = now_ns();
    uint64_t units = __atomic_load_n(&e->units, __ATOMIC_RELAXED);
    uint64_t retry = __atomic_load_n(&e->retry_ns, __ATOMIC_RELAXED);
    if (retry != 0 && now >= retry) {
        __atomic_store_n(&e->retry_ns, 0, __ATOMIC_RELAXED);
        e->most = 0;
        rebalance(c, "tries its lend again");
        return;
    }
    int cpus = mask_count(&ctx_view(c)->mask);
    bool lent = e->known_cpus > 0 && cpus > e->known_cpus;
    uint64_t opened = __atomic_load_n(&e->window_ns, __ATOMIC_ACQUIRE);
    if (opened == 0 || cpus != e->window_cpus) { /* a settling window */
        window_open(c, units, now, cpus, lent ? FAILS_EARLY_NS : SETTLE_NS);
        e->window_settled = false;
        return;
    }
    uint64_t done = units - __atomic_load_n(&e->window_units, __ATOMIC_RELAXED);
    uint64_t took = now - opened;
    bool settling = !e->window_settled;
    if (done < (settling ? SETTLE_UNITS : WINDOW_UNITS) ||
        took < __atomic_load_n(&e->window_wait_ns, __ATOMIC_RELAXED))
        return;
    double rate = (double)done * 1e9 / (double)took;
    /* A settling window is not what the CPUs are worth, unless a lend
     * halved the rate already: settling costs far less than that. */
    bool failed = lent && rate < e->known_rate * FAILS;
    if (settling && !failed && took < SETTLE_NS) { /* judged early: it settles out its time */
        __atomic_store_n(&e->window_wait_ns, SETTLE_NS, __ATOMIC_RELAXED);
        return;
    }
    window_open(c, units, now, cpus, WINDOW_NS);
    e->window_settled = true;
    if (settling && !failed)
        return;
    e->last_rate = rate;
    e->last_cpus = cpus;
    int home = mask_count(&c->home);
    if (e->known_cpus == 0 && cpus > home) {
        e->untried_cpus = cpus;
        e->untried_rate = rate;
        e->most = home;
        if (tracing())
            trace_verdict(c, cpus, rate, 0, "runs one window on its home to judge the lend");
        rebalance(c, "measures its rate on its home");
        return;
    }
    if (e->known_cpus == 0 || cpus <= e->known_cpus) {
        e->known_cpus = cpus;
        e->known_rate = rate;
        if (e->untried_cpus > cpus) {
            int untried = e->untried_cpus;
            e->untried_cpus = 0;
            verdict(c, untried, e->untried_rate, now);
        }
        return;
    }
    verdict(c, cpus, rate, now);
}

/* Lock-free unless a window may close or a retry is due: a report costs an
 * atomic add and a clock read. */
static void progress_add(vlcs_ctx *c, uint64_t n)
{
    struct ctx_elastic *e = &c->el;
    __atomic_add_fetch(&e->units, n, __ATOMIC_RELAXED);
    if (!__atomic_load_n(&e->active, __ATOMIC_RELAXED))
        return;
    uint64_t opened = __atomic_load_n(&e->window_ns, __ATOMIC_ACQUIRE);
    uint64_t wait = __atomic_load_n(&e->window_wait_ns, __ATOMIC_RELAXED);
    uint64_t retry = __atomic_load_n(&e->retry_ns, __ATOMIC_RELAXED);
    uint64_t now = now_ns();
    if (opened != 0 && now - opened < wait && (retry == 0 || now < retry))
        return;
    elastic_lock();
    judge(c);
    elastic_unlock();
}

/* With elastic_mutex held: what was learnt of c's lends is forgotten (it
 * turned idle, its bound changed, or it stopped being elastic). */
static void progress_forget(vlcs_ctx *c)
{
    struct ctx_elastic *e = &c->el;
    __atomic_store_n(&e->window_ns, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&e->retry_ns, 0, __ATOMIC_RELAXED);
    e->known_cpus = 0;
    e->last_cpus = 0;
    e->last_rate = 0;
    e->untried_cpus = 0;
    e->most = 0;
    e->backoff_ns = 0;
}

void elastic_node_changed(uint32_t generation)
{
    elastic_lock();
    if (!node_planned_here(generation)) {
        size_t n = gather(plan_keys);
        node_read(plan_keys, plan_in, n, plan_out);
        apply(n, NULL, "planned in another process");
    }
    elastic_unlock();
}

void elastic_node_joined(void)
{
    elastic_lock();
    rebalance(NULL, "this process joined the node");
    elastic_unlock();
}

void elastic_busy_changed(vlcs_ctx *c, bool busy)
{
    elastic_lock();
    /* What its lends were worth belongs to the work it did: the next
     * thread to enter may bring other work. */
    if (!busy)
        progress_forget(c);
    if (c->el.active)
        rebalance(c, busy ? "entered" : "left");
    elastic_unlock();
}

void elastic_forget(vlcs_ctx *c)
{
    elastic_lock();
    for (size_t i = 0; i < nmembers; i++)
        if (members[i] == c) {
            members[i] = members[--nmembers];
            pthread_mutex_lock(&c->lock);
            __atomic_store_n(&c->el.active, false, __ATOMIC_RELAXED);
            pthread_mutex_unlock(&c->lock);
            rebalance(c, "destroyed");
            break;
        }
    elastic_unlock();
}

int elastic_set_home(vlcs_ctx *c, const vmask *m)
{
    elastic_lock();
    pthread_mutex_lock(&c->lock);
    int rc = 0;
    bool elastic = c->el.active;
    if (elastic && !subset(m, &c->el.bound)) {
        char bound[256];
        mask_format(&c->el.bound, bound, sizeof bound);
        set_error(VLCS_E_INVALID, "Error setting CPUs of context '%s': CPU %d is outside its elastic "
                  "bound %s; widen the bound with vlcs_ctx_set_elastic first",
                  c->name, mask_first_outside(m, &c->el.bound), bound);
        rc = -1;
    } else {
        c->home = *m;
        if (!elastic && ctx_switch_view(c, m) != 0) {
            set_error(VLCS_E_SYSTEM, "Error setting CPUs of context '%s': out of memory", c->name);
            rc = -1;
        }
    }
    pthread_mutex_unlock(&c->lock);
    if (rc == 0 && elastic)
        rebalance(c, "moved home");
    elastic_unlock();
    return rc;
}

void elastic_loaded(vlcs_ctx *c, void *handle)
{
    if (!__atomic_load_n(&c->el.active, __ATOMIC_RELAXED))
        return;
    struct family_fn resize[MAX_POOLS];
    size_t n = families_find(handle, FAMILY_RESIZE, resize, 0, MAX_POOLS);
    if (n == 0)
        return;
    /* Under the plan's lock, so that a plan running meanwhile cannot be
     * undone by an older count. */
    elastic_lock();
    int count = mask_count(&ctx_view(c)->mask);
    for (size_t k = 0; k < n; k++)
        family_fn_set(&resize[k], count);
    elastic_unlock();
}

int elastic_loadavg(vlcs_ctx *c, double *avg, int n)
{
    if (!__atomic_load_n(&c->el.active, __ATOMIC_RELAXED))
        return -2;
    if (n < 0)
        return -1;
    if (n > 3)
        n = 3;
    for (int i = 0; i < n; i++)
        avg[i] = 0.0;
    return n;
}

/* ---- public ------------------------------------------------------------- */

/* OpenMP runtimes follow the context's CPUs (see the top of this file);
 * oneMKL takes the count vlcs gives it. */
static int set_openmp_env(vlcs_ctx *c, const vmask *bound)
{
    char n[16];
    snprintf(n, sizeof n, "%d", mask_count(bound));
    if (ctx_setenv(c, "OMP_DYNAMIC", "true") != 0 || ctx_setenv(c, "OMP_NUM_THREADS", n) != 0)
        return -1;
    /* oneMKL otherwise caps its count at the cores it saw when it started;
     * vlcs sets the count itself (pools.c). */
    if (ctx_setenv(c, "MKL_DYNAMIC", "FALSE") != 0)
        return -1;
    return 0;
}

VLCS_API int vlcs_ctx_set_elastic(vlcs_ctx *h, const char *bound, unsigned weight)
{
    vlcs_ctx *c = ctx_get(h, "making a context elastic");
    if (c == NULL)
        return -1;
    bool off = bound == NULL || *bound == '\0';
    vmask b = {{0}};
    if (!off) {
        char why[256];
        if (cpus_parse(bound, &b, why, sizeof why) != 0) {
            set_error(VLCS_E_INVALID, "Error making context '%s' elastic: %s", c->name, why);
            return -1;
        }
        int outside = mask_first_outside(&b, process_mask());
        if (outside >= 0) {
            char have[256];
            mask_format(process_mask(), have, sizeof have);
            set_error(VLCS_E_INVALID, "Error making context '%s' elastic: CPU %d of the bound is not "
                      "available to this process (it may use %s)",
                      c->name, outside, have);
            return -1;
        }
    }
    elastic_lock();
    pthread_mutex_lock(&c->lock);
    int rc = 0;
    if (!ctx_still(c, h)) {
        rc = -2;
    } else if (!off && !subset(&c->home, &b)) {
        char home[256];
        mask_format(&c->home, home, sizeof home);
        set_error(VLCS_E_INVALID, "Error making context '%s' elastic: its home CPUs %s are not all in "
                  "the bound %s (CPU %d is missing); a bound contains the home",
                  c->name, home, bound, mask_first_outside(&c->home, &b));
        rc = -1;
    } else if (!off && !c->el.active && nmembers == MAX_ELASTIC) {
        set_error(LIMIT_CODE(VLCS_LIMIT_ELASTIC), "Error making context '%s' elastic: %d contexts are elastic already, "
                  "the most vlcs plans for",
                  c->name, MAX_ELASTIC);
        rc = -1;
    }
    bool was = c->el.active;
    if (rc == 0) {
        __atomic_store_n(&c->el.active, !off, __ATOMIC_RELAXED);
        c->el.bound = off ? c->home : b;
        c->el.weight = weight;
        progress_forget(c);
        if (off && was) /* home again; its view was made when the home was set */
            (void)ctx_switch_view(c, &c->home);
    }
    pthread_mutex_unlock(&c->lock);
    if (rc == 0) {
        if (!off && !was)
            members[nmembers++] = c;
        if (off && was)
            for (size_t i = 0; i < nmembers; i++)
                if (members[i] == c) {
                    members[i] = members[--nmembers];
                    break;
                }
        rebalance(c, off ? "made static" : "made elastic");
    }
    elastic_unlock();
    if (rc == -2)
        return ctx_gone(h, "making a context elastic");
    if (rc == 0 && !off)
        rc = set_openmp_env(c, &b);
    return rc;
}

VLCS_API int vlcs_ctx_get_cpuset(const vlcs_ctx *h, int which, char *buf, unsigned long size)
{
    vlcs_ctx *c = ctx_get(h, "reading CPUs");
    if (c == NULL)
        return -1;
    if (which < VLCS_CPUSET_CURRENT || which > VLCS_CPUSET_LENT) {
        set_error(VLCS_E_INVALID, "Error reading CPUs of context '%s': %d is not a vlcs_cpuset_t", c->name,
                  which);
        return -1;
    }
    vmask m = {{0}};
    elastic_lock();
    vlcs_ctx *self = (vlcs_ctx *)c;
    pthread_mutex_lock(&self->lock);
    if (which == VLCS_CPUSET_CURRENT)
        m = ctx_view(c)->mask;
    else if (which == VLCS_CPUSET_HOME)
        m = c->home;
    else if (which == VLCS_CPUSET_BOUND)
        m = c->el.active ? c->el.bound : c->home;
    vmask home = c->home;
    bool lends = c->el.active;
    pthread_mutex_unlock(&self->lock);
    if (which == VLCS_CPUSET_LENT && lends && node_active())
        node_lent((uint64_t)(uintptr_t)c, &home, &m);
    else if (which == VLCS_CPUSET_LENT && lends)
        for (size_t i = 0; i < nmembers; i++) {
            if (members[i] == c)
                continue;
            const vmask *v = &ctx_view(members[i])->mask;
            for (int w = 0; w < MASK_WORDS; w++)
                m.w[w] |= home.w[w] & v->w[w];
        }
    elastic_unlock();
    char list[4096];
    mask_format(&m, list, sizeof list);
    return snprintf(buf, size, "%s", list);
}

VLCS_API int vlcs_ctx_progress(vlcs_ctx *h, unsigned long long units)
{
    vlcs_ctx *c;
    if (h == NULL) {
        /* Outside any context a library's reports cost nothing and mean
         * nothing: the base has no lends to judge. */
        if ((c = thread_current()) == NULL)
            return 0;
    } else if ((c = ctx_get(h, "reporting progress")) == NULL) {
        return -1;
    }
    if (units > 0)
        progress_add(c, units);
    return 0;
}

VLCS_API int vlcs_ctx_get_progress(const vlcs_ctx *h, vlcs_progress_t *out)
{
    vlcs_ctx *c = ctx_get(h, "reading progress");
    if (c == NULL)
        return -1;
    if (out == NULL) {
        set_error(VLCS_E_INVALID, "Error reading progress of context '%s': the vlcs_progress_t is NULL",
                  c->name);
        return -1;
    }
    elastic_lock();
    out->units = __atomic_load_n(&c->el.units, __ATOMIC_RELAXED);
    out->rate = c->el.last_rate;
    out->rate_cpus = c->el.last_cpus;
    out->most_cpus = c->el.active ? c->el.most : 0;
    elastic_unlock();
    return 0;
}

/* Elastic lends judged by the progress a context reports: OpenBLAS, which
 * runs faster on the lend, keeps it; an OpenMP loop that a larger team runs
 * 7-8 times slower (one critical section) gives it back; leaving forgets
 * the verdict; bad input is refused.  (A single thread's loop, which gains
 * nothing, is too close to the VM's noise in 30 ms windows to be a test.)
 * Run alone (RUN_SERIAL): another test on the other CPU would change what
 * a lend is worth. */
#define _GNU_SOURCE
#include "check.h"

#include <sys/sysinfo.h>
#include <time.h>

#define CURRENT(c) ctx_cpus(c, VLCS_CPUSET_CURRENT)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A 400x400 dgemm on operands made once: the unit is OpenBLAS's work
 * alone (a sanitizer's allocations would otherwise weigh more). */
enum { N = 400 };
static double ga[N * N], gb[N * N], gc[N * N];
static void blas_unit(void *blas)
{
    int n = N;
    double one = 1, zero = 0;
    SYM(blas, check_dgemm_fn, "dgemm_")("N", "N", &n, &n, &n, &one, ga, &n, gb, &n, &zero, gc, &n);
}

/* 20,000 terms through one critical section, in b's libgomp: its team is
 * as large as b's CPUs (an elastic context's OpenMP is dynamic). */
typedef int (*contended_fn)(long, double *);
static contended_fn contended;
static int team_seen;
static void contended_unit(void *unused)
{
    (void)unused;
    double sum;
    team_seen = contended(20000, &sum);
    CHECK(sum == 0.5 * 19999.0 * 20000.0 / 2, "the sum (%g)", sum);
}

/* Inside b, units of `unit` reported one by one until vlcs has judged the
 * lend b got when it entered: a window on its home was measured, so the
 * verdict was given.  The deadline only bounds a failure. */
static vlcs_progress_t until_judged(vlcs_ctx *b, void (*unit)(void *), void *arg)
{
    vlcs_progress_t p;
    double deadline = now() + 60;
    do {
        unit(arg);
        CHECK_EQ(0, vlcs_ctx_progress(NULL, 1), "report");
        CHECK_EQ(0, vlcs_ctx_get_progress(b, &p), "read");
    } while (p.rate_cpus != 1 && now() < deadline);
    CHECK(p.rate_cpus == 1, "a window on b's home was measured within 60 s (%llu units)", p.units);
    CHECK(p.rate > 0, "a rate (%g)", p.rate);
    return p;
}

/* Inside b, after until_judged: units until a window on the lend was
 * measured with the lend kept.  One window against one can refuse a lend
 * that pays where the VM's other CPU is stolen meanwhile (one window in ten
 * on a bad hour here); vlcs tries a refused lend again after 2 s, then 4,
 * 8, 16, and that retry is what the user gets.  Returns how many times the
 * lend was refused on the way. */
static int until_kept(vlcs_ctx *b, void (*unit)(void *), void *arg, vlcs_progress_t *p)
{
    int refusals = p->most_cpus != 0;
    double deadline = now() + 60;
    while (!(p->most_cpus == 0 && p->rate_cpus == 2) && now() < deadline) {
        int was = p->most_cpus;
        unit(arg);
        CHECK_EQ(0, vlcs_ctx_progress(NULL, 1), "report");
        CHECK_EQ(0, vlcs_ctx_get_progress(b, p), "read");
        refusals += was == 0 && p->most_cpus != 0;
    }
    return refusals;
}

int main(void)
{
    if (get_nprocs() < 2) {
        printf("SKIP: needs 2 CPUs\n");
        return 77;
    }
    vlcs_ctx *a = vlcs_ctx_create("a"), *b = vlcs_ctx_create("b");
    CHECK_EQ(0, vlcs_ctx_set_cpus(a, "0"), "set");
    CHECK_EQ(0, vlcs_ctx_set_cpus(b, "1"), "set");
    CHECK_EQ(0, vlcs_ctx_set_elastic(a, "0-1", 0), "elastic");
    CHECK_EQ(0, vlcs_ctx_set_elastic(b, "0-1", 0), "elastic");
    void *blas = must_load(b, "libopenblas.so.0");

    /* OpenBLAS grows to two threads with the lend and keeps it. */
    CHECK_EQ(0, vlcs_enter(b), "enter b");
    CHECK_STR("0-1", CURRENT(b), "lent again");
    for (int i = 0; i < N * N; i++) {
        ga[i] = (i % 7) * 0.5;
        gb[i] = (i % 5) * 0.25;
    }
    vlcs_progress_t p = until_judged(b, blas_unit, blas);
    int refusals = until_kept(b, blas_unit, blas, &p);
    CHECK(p.most_cpus == 0 && p.rate_cpus == 2,
          "OpenBLAS's rate rose with the second CPU: b keeps the lend, no limit "
          "(refused %d times in 60 s; the last window %g units/s)", refusals, p.rate);
    CHECK_STR("0-1", CURRENT(b), "b runs on the lend again");
    CHECK(dgemm_right(blas, 300), "the product of a 300x300 dgemm, on the lend");
    CHECK_EQ(0, vlcs_leave(), "leave b");

    /* A library slower on more CPUs: its team of two on the lend runs the
     * critical section slower than one, so b gives the lend back and its
     * team is one again. */
    void *omp = must_load(b, OMP_LIB);
    contended = SYM(omp, contended_fn, "omp_probe_contended");
    CHECK_EQ(0, vlcs_enter(b), "enter b");
    contended_unit(NULL);
    CHECK_EQ(2, team_seen, "on the lend, a team of two");
    p = until_judged(b, contended_unit, NULL);
    CHECK_EQ(1, p.most_cpus, "the team of two was slower: b holds itself to 1 CPU");
    CHECK_STR("1", CURRENT(b), "b gave the lend back");
    contended_unit(NULL);
    CHECK_EQ(1, team_seen, "a team of one again");
    CHECK_STR("", ctx_cpus(a, VLCS_CPUSET_LENT), "a's CPU is its own again, idle");
    CHECK_EQ(0, vlcs_leave(), "leave b");
    CHECK_EQ(0, vlcs_ctx_get_progress(b, &p), "read");
    CHECK(p.most_cpus == 0 && p.rate_cpus == 0 && p.units > 6,
          "leaving forgets the verdict and the rate, the next work is judged afresh; units stay");

    /* Bad input, and reports that mean nothing. */
    CHECK_EQ(0, vlcs_ctx_progress(NULL, 1), "in the base a report does nothing");
    CHECK_ERRC(VLCS_E_INVALID, vlcs_ctx_get_progress(b, NULL));
    CHECK(strstr(vlcs_error(), "vlcs_progress_t is NULL") != NULL, "%s", vlcs_error());
    vlcs_ctx *still = vlcs_ctx_create("static");
    CHECK_EQ(0, vlcs_ctx_progress(still, 5), "a static context counts");
    CHECK_EQ(0, vlcs_ctx_get_progress(still, &p), "read");
    CHECK(p.units == 5 && p.most_cpus == 0 && p.rate == 0, "counted, nothing judged");
    CHECK_EQ(0, vlcs_ctx_destroy(still), "destroy");
    CHECK_ERRC(VLCS_E_DESTROYED, vlcs_ctx_progress(still, 1));
    CHECK_ERRC(VLCS_E_INVALID, vlcs_ctx_progress((vlcs_ctx *)&p, 1));
    PASS("elastic progress");
    return 0;
}

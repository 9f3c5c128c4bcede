/* A thousand contexts in one process, each with its own copy of an OpenMP
 * library and of libgomp (copy mode, under vlcs run --contexts 1024).
 * Every libgomp copy takes a thread-specific data key when it loads, and
 * ends the process if it gets none: glibc has 1,024 per process, and the
 * process died at about 500 contexts.  Each copy sizes its pool from its
 * own context's CPU, and parallel regions run in them. */
#define _GNU_SOURCE
#include "check.h"

#include <math.h>

enum { N = 1024 };

typedef int (*int_fn)(void);
typedef double (*sum_fn)(long);

int main(void)
{
    static vlcs_ctx *ctx[N];
    static void *lib[N];
    for (int i = 0; i < N; i++) {
        char name[16];
        snprintf(name, sizeof name, "t%d", i);
        ctx[i] = vlcs_ctx_create(name);
        CHECK(ctx[i] != NULL, "create %d: %s", i, vlcs_error());
        CHECK_EQ(0, vlcs_ctx_set_mode(ctx[i], VLCS_MODE_COPIES), vlcs_error());
        CHECK_EQ(0, vlcs_ctx_set_cpus(ctx[i], i % 2 ? "1" : "0"), vlcs_error());
        lib[i] = vlcs_ctx_load(ctx[i], OMP_LIB);
        CHECK(lib[i] != NULL, "context %d of %d: %s", i, N, vlcs_error());
    }
    printf("%d contexts hold libgomp\n", N);
    double expect = 0;
    for (long k = 0; k < 1000; k++)
        expect += 1.0 / (double)(k + 1);
    for (int i = 0; i < N; i++) {
        CHECK_EQ(1, SYM(lib[i], int_fn, "omp_probe_max_threads")(), "one CPU, one thread");
        if (i % 64 != 0)
            continue;
        CHECK_EQ(0, vlcs_enter(ctx[i]), vlcs_error());
        CHECK(fabs(SYM(lib[i], sum_fn, "omp_probe_sum")(1000) - expect) < 1e-9,
              "a parallel region in context %d", i);
        CHECK_EQ(0, vlcs_leave(), vlcs_error());
    }
    for (int i = 0; i < N; i++)
        vlcs_ctx_destroy(ctx[i]);
    PASS("a thousand contexts with libgomp");
    return 0;
}

/* Debian's OpenBLAS in a 1-CPU context runs 1 thread while a copy in a
 * 2-CPU context runs 2, both sized from what each copy sees at load. */
#define _GNU_SOURCE
#include "check.h"
#include "gemm.h"

#include <sys/sysinfo.h>

typedef int (*nthreads_fn)(void);
static void gemm(void *lib, int n, double *c) { gemm_fixed(SYM(lib, dgemm_fn, "dgemm_"), n, c); }

int main(void)
{
    if (get_nprocs() < 2) {
        printf("SKIP: needs 2 CPUs\n");
        return 77;
    }
    vlcs_ctx *one = vlcs_ctx_create("one"), *two = vlcs_ctx_create("two");
    CHECK_EQ(0, vlcs_ctx_set_cpus(one, "0"), "set");
    CHECK_EQ(0, vlcs_ctx_set_cpus(two, "0-1"), "set");
    void *b1 = must_load(one, "libopenblas.so.0"), *b2 = must_load(two, "libopenblas.so.0");
    CHECK(b1 != b2, "two copies");
    CHECK_EQ(1, SYM(b1, nthreads_fn, "openblas_get_num_threads")(), "1-CPU context");
    CHECK_EQ(2, SYM(b2, nthreads_fn, "openblas_get_num_threads")(), "2-CPU context");

    int n = 256;
    double *c1 = calloc((size_t)n * n, sizeof(double)), *c2 = calloc((size_t)n * n, sizeof(double));
    gemm(b1, n, c1);
    gemm(b2, n, c2);
    for (int i = 0; i < n * n; i++)
        CHECK(c1[i] == c2[i] || (c1[i] - c2[i]) * (c1[i] - c2[i]) < 1e-18, "same product at %d", i);
    /* OpenBLAS starts n-1 workers beside the calling thread. */
    CHECK_EQ(0, vlcs_ctx_thread_count(one), "no worker threads in the 1-CPU copy");
    CHECK_EQ(1, vlcs_ctx_thread_count(two), "one worker thread in the 2-CPU copy");
    free(c1);
    free(c2);
    PASS("openblas");
    return 0;
}

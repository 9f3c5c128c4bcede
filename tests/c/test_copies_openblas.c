/* Debian's OpenBLAS (with libgfortran and libquadmath) in 64 copy-mode
 * contexts: each copy sizes its pool from its own context's CPUs, computes
 * what the base's copy computes, and goes away with its context. */
#define _GNU_SOURCE
#include "check.h"
#include "gemm.h"

#include <dlfcn.h>
#include <sys/sysinfo.h>

#define N 64

typedef int (*nthreads_fn)(void);
int main(void)
{
    if (get_nprocs() < 2) {
        printf("SKIP: needs 2 CPUs\n");
        return 77;
    }
    void *base = dlopen("libopenblas.so.0", RTLD_NOW);
    CHECK(base != NULL, "%s", dlerror());
    int n = 128;
    double *want = calloc((size_t)n * n, sizeof(double)), *got = calloc((size_t)n * n, sizeof(double));
    gemm_fixed((dgemm_fn)dlsym(base, "dgemm_"), n, want);
    int base_threads = ((nthreads_fn)dlsym(base, "openblas_get_num_threads"))();

    vlcs_ctx *c[N];
    void *h[N];
    for (int i = 0; i < N; i++) {
        char name[16];
        snprintf(name, sizeof name, "blas%d", i);
        c[i] = vlcs_ctx_create(name);
        CHECK_EQ(0, vlcs_ctx_set_mode(c[i], VLCS_MODE_COPIES), "mode");
        CHECK_EQ(0, vlcs_ctx_set_cpus(c[i], i % 2 ? "0-1" : "1"), "cpus");
        h[i] = vlcs_ctx_load(c[i], "libopenblas.so.0");
        CHECK(h[i] != NULL, "load into %d", i);
        CHECK(h[i] != base, "a copy, not the base's");
    }
    for (int i = 0; i < N; i++) {
        CHECK_EQ(i % 2 ? 2 : 1, SYM(h[i], nthreads_fn, "openblas_get_num_threads")(),
                 "sized from its context's CPUs");
        CHECK_EQ(0, vlcs_enter(c[i]), "enter");
        memset(got, 0, sizeof(double) * (size_t)n * n);
        gemm_fixed(SYM(h[i], dgemm_fn, "dgemm_"), n, got);
        CHECK_EQ(0, vlcs_leave(), "leave");
        for (int k = 0; k < n * n; k++)
            CHECK((got[k] - want[k]) * (got[k] - want[k]) < 1e-18, "context %d: product at %d", i, k);
    }
    CHECK_EQ(base_threads, ((nthreads_fn)dlsym(base, "openblas_get_num_threads"))(),
             "the base's pool is untouched");
    /* (strict mode's filters on their code cannot be removed: destroy
     * leaves the copies loaded and says so) */
    int destroyed = vlcs_strict_active() ? 1 : 0;
    for (int i = 0; i < N; i++)
        CHECK_EQ(destroyed, vlcs_ctx_destroy(c[i]), "destroy: pool stopped, copies unloaded");
    gemm_fixed((dgemm_fn)dlsym(base, "dgemm_"), n, got);
    for (int k = 0; k < n * n; k++)
        CHECK(got[k] == want[k], "the base's product after");
    free(want);
    free(got);
    PASS("openblas in 64 copy-mode contexts");
    return 0;
}

/* gemm.h - one BLAS product with fixed operands, for the OpenBLAS tests
 * (test_openblas, test_copies_openblas): c = a * b, n x n. */
#ifndef VLCS_TEST_GEMM_H
#define VLCS_TEST_GEMM_H
#include <stdlib.h>

typedef void (*dgemm_fn)(const char *, const char *, const int *, const int *, const int *,
                         const double *, const double *, const int *, const double *,
                         const int *, const double *, double *, const int *);

static void gemm_fixed(dgemm_fn f, int n, double *c)
{
    double *a = malloc(sizeof(double) * (size_t)n * (size_t)n);
    double *b = malloc(sizeof(double) * (size_t)n * (size_t)n);
    for (int i = 0; i < n * n; i++) {
        a[i] = (i % 7) * 0.5;
        b[i] = (i % 5) * 0.25;
    }
    double one = 1, zero = 0;
    f("N", "N", &n, &n, &n, &one, a, &n, b, &n, &zero, c, &n);
    free(a);
    free(b);
}

#endif

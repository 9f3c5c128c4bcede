/* A 7-point 3-D stencil with OpenMP: a task for tests/python/test_tune.py. */
#include <stdlib.h>

double stencil(int n, int iters)
{
    size_t total = (size_t)n * n * n;
    double *a = calloc(total, sizeof *a), *b = calloc(total, sizeof *b);
    for (size_t i = 0; i < total; i++)
        a[i] = (double)(i % 17);
    for (int it = 0; it < iters; it++) {
#pragma omp parallel for
        for (int z = 1; z < n - 1; z++)
            for (int y = 1; y < n - 1; y++)
                for (int x = 1; x < n - 1; x++) {
                    size_t i = ((size_t)z * n + y) * n + x;
                    b[i] = (a[i] * 6 + a[i - 1] + a[i + 1] + a[i - n] + a[i + n] + a[i - (size_t)n * n] +
                            a[i + (size_t)n * n]) / 12;
                }
        double *t = a;
        a = b;
        b = t;
    }
    double s = a[total / 2];
    free(a);
    free(b);
    return s;
}

/* OpenMP kernels of the contention case, built at run time with -fopenmp:
 * a 7-point 3-D stencil (Hotspot3D-like) and k-means assignment + update.
 * Both return a checksum so strategies can be compared. */
#include <stdlib.h>
#include <string.h>

double stencil3d(int n, int iters)
{
    size_t total = (size_t)n * n * n;
    double *a = malloc(total * sizeof *a), *b = malloc(total * sizeof *b);
    if (!a || !b) {
        free(a);
        free(b);
        return -1;
    }
    for (size_t i = 0; i < total; i++)
        a[i] = (double)(i % 17) / 17.0;
    memcpy(b, a, total * sizeof *a);
    for (int it = 0; it < iters; it++) {
#pragma omp parallel for collapse(2) schedule(static)
        for (int z = 1; z < n - 1; z++)
            for (int y = 1; y < n - 1; y++)
                for (int x = 1; x < n - 1; x++) {
                    size_t i = ((size_t)z * n + y) * n + x;
                    b[i] = 0.4 * a[i] + 0.1 * (a[i - 1] + a[i + 1] + a[i - n] + a[i + n] +
                                               a[i - (size_t)n * n] + a[i + (size_t)n * n]);
                }
        double *t = a;
        a = b;
        b = t;
    }
    double s = 0;
    for (size_t i = 0; i < total; i++)
        s += a[i];
    free(a);
    free(b);
    return s;
}

double kmeans(int npoints, int dims, int k, int iters)
{
    double *p = malloc((size_t)npoints * dims * sizeof *p);
    double *c = malloc((size_t)k * dims * sizeof *c), *sum = calloc((size_t)k * dims, sizeof *sum);
    int *cnt = calloc(k, sizeof *cnt), *lab = malloc(npoints * sizeof *lab);
    if (!p || !c || !sum || !cnt || !lab)
        return -1;
    unsigned s = 12345;
    for (size_t i = 0; i < (size_t)npoints * dims; i++) {
        s = s * 1103515245u + 12345u;
        p[i] = (double)(s >> 8) / 16777216.0;
    }
    memcpy(c, p, (size_t)k * dims * sizeof *c);
    for (int it = 0; it < iters; it++) {
#pragma omp parallel for schedule(static)
        for (int i = 0; i < npoints; i++) {
            double best = 1e300;
            int bl = 0;
            for (int j = 0; j < k; j++) {
                double d = 0;
                for (int t = 0; t < dims; t++) {
                    double e = p[(size_t)i * dims + t] - c[(size_t)j * dims + t];
                    d += e * e;
                }
                if (d < best) {
                    best = d;
                    bl = j;
                }
            }
            lab[i] = bl;
        }
        memset(sum, 0, (size_t)k * dims * sizeof *sum);
        memset(cnt, 0, k * sizeof *cnt);
        for (int i = 0; i < npoints; i++) {
            cnt[lab[i]]++;
            for (int t = 0; t < dims; t++)
                sum[(size_t)lab[i] * dims + t] += p[(size_t)i * dims + t];
        }
        for (int j = 0; j < k; j++)
            for (int t = 0; t < dims; t++)
                if (cnt[j])
                    c[(size_t)j * dims + t] = sum[(size_t)j * dims + t] / cnt[j];
    }
    double r = 0;
    for (size_t i = 0; i < (size_t)k * dims; i++)
        r += c[i];
    free(p);
    free(c);
    free(sum);
    free(cnt);
    free(lab);
    return r;
}

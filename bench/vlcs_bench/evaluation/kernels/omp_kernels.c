/* OpenMP kernels of the contention case, built at run time with -fopenmp:
 * a 7-point 3-D stencil (Hotspot3D-like), k-means assignment + update, and a
 * CFD-like unstructured finite-volume update (euler3d-like).
 * Each returns a checksum so strategies can be compared.  The _p forms
 * report each iteration to `progress` (vlcs_ctx_progress, called with a NULL
 * context: the calling thread's), so that elastic contexts can judge what a
 * lend is worth; NULL reports nothing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef int (*progress_fn)(void *ctx, unsigned long long units);
#define REPORT(progress)             \
    do {                             \
        if (progress != NULL)        \
            (void)progress(NULL, 1); \
    } while (0)

double stencil3d_p(int n, int iters, progress_fn progress)
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
        REPORT(progress);
    }
    double s = 0;
    for (size_t i = 0; i < total; i++)
        s += a[i];
    free(a);
    free(b);
    return s;
}

double kmeans_p(int npoints, int dims, int k, int iters, progress_fn progress)
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
        REPORT(progress);
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

/* CFD-like (after Rodinia's euler3d): explicit finite-volume update of five
 * conserved variables (density, momentum x/y/z, energy) on an unstructured
 * mesh, each cell with four neighbours read through an index array.
 * Flux between two cells: the jump times the larger sound-plus-flow speed
 * (a Rusanov-style dissipation), so each face costs a sqrt and divisions. */
static double speed(const double *q)
{
    double rho = q[0], u2 = (q[1] * q[1] + q[2] * q[2] + q[3] * q[3]) / (rho * rho);
    double p = 0.4 * (q[4] - 0.5 * rho * u2);
    return sqrt(1.4 * (p > 1e-9 ? p : 1e-9) / rho) + sqrt(u2);
}

double cfd_p(int ncells, int iters, progress_fn progress)
{
    int *nb = malloc((size_t)ncells * 4 * sizeof *nb);
    double *v = malloc((size_t)ncells * 5 * sizeof *v), *flux = malloc((size_t)ncells * 5 * sizeof *flux);
    if (!nb || !v || !flux)
        return -1;
    for (int i = 0; i < ncells; i++) {
        nb[4 * i + 0] = (i + 1) % ncells;
        nb[4 * i + 1] = (i + ncells - 1) % ncells;
        nb[4 * i + 2] = (int)((i + 977u) % (unsigned)ncells);
        nb[4 * i + 3] = (int)((i * 2654435761u) % (unsigned)ncells);
        for (int k = 0; k < 5; k++)
            v[5 * i + k] = (k == 0 || k == 4 ? 2.0 : 0.1) + 0.1 * ((i * (k + 3)) % 7);
    }
    for (int it = 0; it < iters; it++) {
#pragma omp parallel for schedule(static)
        for (int i = 0; i < ncells; i++) {
            const double *q = v + 5 * (size_t)i;
            double si = speed(q), f[5] = {0, 0, 0, 0, 0};
            for (int j = 0; j < 4; j++) {
                const double *qn = v + 5 * (size_t)nb[4 * i + j];
                double sn = speed(qn), s = si > sn ? si : sn;
                for (int k = 0; k < 5; k++)
                    f[k] += 0.05 * s * (qn[k] - q[k]);
            }
            for (int k = 0; k < 5; k++)
                flux[5 * (size_t)i + k] = f[k];
        }
#pragma omp parallel for schedule(static)
        for (size_t c = 0; c < (size_t)ncells * 5; c++)
            v[c] += 0.2 * flux[c];
        REPORT(progress);
    }
    double r = 0;
    for (size_t c = 0; c < (size_t)ncells * 5; c++)
        r += v[c];
    free(nb);
    free(v);
    free(flux);
    return r;
}

/* A loop that a larger team runs slower: every term goes through one
 * critical section, whose lock two threads hand back and forth (7-8 times
 * slower than one thread on the 2-core VM).  What an elastic lend does to
 * a library past its scaling, made plain. */
double contended_p(int n, int iters, progress_fn progress)
{
    double s = 0;
    for (int it = 0; it < iters; it++) {
#pragma omp parallel for
        for (int i = 0; i < n; i++) {
            double x = (double)i * 0.5;
#pragma omp critical
            s += x;
        }
        REPORT(progress);
    }
    return s;
}

double stencil3d(int n, int iters) { return stencil3d_p(n, iters, NULL); }
double kmeans(int npoints, int dims, int k, int iters) { return kmeans_p(npoints, dims, k, iters, NULL); }
double cfd(int ncells, int iters) { return cfd_p(ncells, iters, NULL); }
double contended(int n, int iters) { return contended_p(n, iters, NULL); }

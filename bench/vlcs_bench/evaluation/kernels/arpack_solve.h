/* arpack_solve.h - a symmetric eigen-solve with arpack-ng's reverse
 * communication interface (dsaupd/dseupd), one step at a time so that two
 * solves can be interleaved deterministically.  The matrix is the 1-D
 * Laplacian tridiag(-1, 2, -1), whose eigenvalues are known:
 * 2 - 2 cos(k pi / (n + 1)), times a scale that tells two problems apart.
 * Shared by tests/c/test_arpack.c and the evaluation's arpack_pair.cpp;
 * valid C and C++.  The includer declares vlcs_ctx_sym (vlcs.h). */
#ifndef ARPACK_SOLVE_H
#define ARPACK_SOLVE_H
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef void (*dsaupd_fn)(int *, const char *, const int *, const char *, const int *,
                          const double *, double *, const int *, double *, const int *, int *,
                          int *, double *, double *, const int *, int *, size_t, size_t);
typedef void (*dseupd_fn)(const int *, const char *, int *, double *, double *, const int *,
                          const double *, const char *, const int *, const char *, const int *,
                          const double *, double *, const int *, double *, const int *, int *,
                          int *, double *, double *, const int *, int *, size_t, size_t, size_t);

#define NEV 4

struct solve {
    dsaupd_fn saupd;
    dseupd_fn seupd;
    int n, ncv, lworkl, ido, info, done;
    double scale;
    int iparam[11], ipntr[11];
    double tol, *resid, *v, *workd, *workl;
    double eig[NEV];
};

static void solve_init(struct solve *s, void *lib, int n, double scale)
{
    memset(s, 0, sizeof *s);
    s->scale = scale;
    s->saupd = (dsaupd_fn)vlcs_ctx_sym(lib, "dsaupd_");
    s->seupd = (dseupd_fn)vlcs_ctx_sym(lib, "dseupd_");
    s->n = n;
    s->ncv = 20;
    s->lworkl = s->ncv * (s->ncv + 8);
    s->resid = (double *)calloc((size_t)n, sizeof(double));
    s->v = (double *)calloc((size_t)n * (size_t)s->ncv, sizeof(double));
    s->workd = (double *)calloc(3 * (size_t)n, sizeof(double));
    s->workl = (double *)calloc((size_t)s->lworkl, sizeof(double));
    s->iparam[0] = 1;    /* exact shifts */
    s->iparam[2] = 3000; /* max iterations */
    s->iparam[6] = 1;    /* mode 1: standard problem */
}

static void laplacian(int n, double scale, const double *x, double *y)
{
    for (int i = 0; i < n; i++)
        y[i] = scale * (2 * x[i] - (i > 0 ? x[i - 1] : 0) - (i + 1 < n ? x[i + 1] : 0));
}

/* One reverse-communication step; returns 1 while more steps are needed. */
static int solve_step(struct solve *s)
{
    int nev = NEV;
    s->saupd(&s->ido, "I", &s->n, "LM", &nev, &s->tol, s->resid, &s->ncv, s->v, &s->n,
             s->iparam, s->ipntr, s->workd, s->workl, &s->lworkl, &s->info, 1, 2);
    if (s->ido == 1 || s->ido == -1) {
        laplacian(s->n, s->scale, s->workd + s->ipntr[0] - 1, s->workd + s->ipntr[1] - 1);
        return 1;
    }
    if (s->info == 0) {
        int rvec = 0, *select = (int *)calloc((size_t)s->ncv, sizeof(int));
        double sigma = 0;
        s->seupd(&rvec, "A", select, s->eig, NULL, &s->n, &sigma, "I", &s->n, "LM", &nev,
                 &s->tol, s->resid, &s->ncv, s->v, &s->n, s->iparam, s->ipntr, s->workd,
                 s->workl, &s->lworkl, &s->info, 1, 1, 2);
        free(select);
    }
    s->done = 1;
    return 0;
}

static void solve_run(struct solve *s)
{
    while (solve_step(s))
        ;
}

/* 1 when the solve converged to the exact largest eigenvalues. */
static int solve_correct(const struct solve *s)
{
    if (s->info != 0)
        return 0;
    for (int k = 0; k < NEV; k++) {
        int j = s->n - (NEV - 1) + k; /* eig is ascending */
        double exact = s->scale * (2 - 2 * cos(j * M_PI / (s->n + 1)));
        if (fabs(s->eig[k] - exact) > 1e-8 * s->scale)
            return 0;
    }
    return 1;
}

static void solve_free(struct solve *s)
{
    free(s->resid);
    free(s->v);
    free(s->workd);
    free(s->workl);
}
#endif

/* check.h - minimal assertions for the C tests: expected value first, and a
 * hint on failure; a test program exits non-zero on its first failure. */
#ifndef VLCS_CHECK_H
#define VLCS_CHECK_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vlcs.h"

#define FAIL(...)                                                                        \
    do {                                                                                 \
        fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__);                            \
        fprintf(stderr, __VA_ARGS__);                                                    \
        fprintf(stderr, "\n  last vlcs_error(): %s\n", vlcs_error());                    \
        exit(1);                                                                         \
    } while (0)

#define CHECK(cond, ...)                                                                 \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "%s:%d: FAIL: %s: ", __FILE__, __LINE__, #cond);             \
            fprintf(stderr, __VA_ARGS__);                                                \
            fprintf(stderr, "\n  last vlcs_error(): %s\n", vlcs_error());               \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

#define CHECK_EQ(expected, actual, hint)                                                 \
    do {                                                                                 \
        long long e_ = (long long)(expected), a_ = (long long)(actual);                  \
        if (e_ != a_)                                                                    \
            FAIL("%s: expected %lld, got %lld (%s)", #actual, e_, a_, hint);             \
    } while (0)

#define CHECK_STR(expected, actual, hint)                                                \
    do {                                                                                 \
        const char *e_ = (expected), *a_ = (actual);                                     \
        if (a_ == NULL || strcmp(e_, a_) != 0)                                           \
            FAIL("%s: expected \"%s\", got \"%s\" (%s)", #actual, e_, a_ ? a_ : "(null)", \
                 hint);                                                                  \
    } while (0)

/* The call must fail and its message must contain `needle`. */
#define CHECK_ERR(call, needle)                                                          \
    do {                                                                                 \
        if ((call) == 0)                                                                 \
            FAIL("%s succeeded; expected an error mentioning \"%s\"", #call, needle);    \
        if (strstr(vlcs_error(), needle) == NULL)                                        \
            FAIL("%s: error \"%s\" does not mention \"%s\"", #call, vlcs_error(), needle); \
    } while (0)

/* The call must return NULL and its message must contain `needle`. */
#define CHECK_NULL(call, needle)                                                         \
    do {                                                                                 \
        if ((call) != NULL)                                                              \
            FAIL("%s succeeded; expected an error mentioning \"%s\"", #call, needle);    \
        if (strstr(vlcs_error(), needle) == NULL)                                        \
            FAIL("%s: error \"%s\" does not mention \"%s\"", #call, vlcs_error(), needle); \
    } while (0)

/* The last failing call left code `expected` (VLCS_E_...). */
#define CHECK_CODE(expected, hint)                                                       \
    do {                                                                                 \
        int e_ = (expected), a_ = vlcs_errcode();                                        \
        if (e_ != a_)                                                                    \
            FAIL("vlcs_errcode(): expected %s (%d), got %d (%s)", #expected, e_, a_, hint); \
    } while (0)

/* The call (returning an int) must fail with code `code`. */
#define CHECK_ERRC(code, call)                                                           \
    do {                                                                                 \
        if ((call) == 0)                                                                 \
            FAIL("%s succeeded; expected it to fail with %s", #call, #code);             \
        CHECK_CODE(code, #call);                                                         \
    } while (0)

/* The call (returning a pointer) must return NULL with code `code`. */
#define CHECK_NULLC(code, call)                                                          \
    do {                                                                                 \
        if ((call) != NULL)                                                              \
            FAIL("%s succeeded; expected it to fail with %s", #call, #code);             \
        CHECK_CODE(code, #call);                                                         \
    } while (0)

#define SYM(lib, type, name) ((type)vlcs_ctx_sym(lib, name))

static inline void *must_load(vlcs_ctx *c, const char *path)
{
    void *h = vlcs_ctx_load(c, path);
    if (h == NULL)
        FAIL("loading %s: %s", path, vlcs_error());
    return h;
}

static inline void *must_sym(void *lib, const char *name)
{
    void *p = vlcs_ctx_sym(lib, name);
    if (p == NULL)
        FAIL("symbol %s: %s", name, vlcs_error());
    return p;
}

/* One of a context's CPU lists (vlcs_ctx_get_cpuset), in one of four
 * rotating buffers. */
static inline const char *ctx_cpus(const vlcs_ctx *c, int which)
{
    static char buf[4][64];
    static int k;
    char *b = buf[k++ % 4];
    CHECK(vlcs_ctx_get_cpuset(c, which, b, 64) >= 0, "get_cpuset");
    return b;
}

#define PASS(name) printf("ok - %s\n", name)
/* A dgemm_ (Fortran BLAS) of the copy `lib` on n x n operands, checked at
 * 16 entries against the plain product: 1 when right. */
typedef void (*check_dgemm_fn)(const char *, const char *, const int *, const int *, const int *,
                               const double *, const double *, const int *, const double *,
                               const int *, const double *, double *, const int *);
static inline int dgemm_right(void *lib, int n)
{
    /* casts: test_tbb.cpp includes this header too */
    size_t bytes = sizeof(double) * (size_t)n * (size_t)n;
    double *a = (double *)malloc(bytes), *b = (double *)malloc(bytes), *c = (double *)malloc(bytes);
    for (int i = 0; i < n * n; i++) {
        a[i] = (i % 7) * 0.5;
        b[i] = (i % 5) * 0.25;
    }
    double one = 1, zero = 0;
    SYM(lib, check_dgemm_fn, "dgemm_")("N", "N", &n, &n, &n, &one, a, &n, b, &n, &zero, c, &n);
    int ok = 1;
    for (int j = 0; j < n; j += n / 4)
        for (int i = 0; i < n; i += n / 4) {
            double sum = 0;
            for (int k = 0; k < n; k++)
                sum += a[i + k * n] * b[k + j * n];
            ok &= c[i + j * n] - sum < 1e-9 && sum - c[i + j * n] < 1e-9;
        }
    free(a);
    free(b);
    free(c);
    return ok;
}

#endif

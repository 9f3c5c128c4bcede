/* Many contexts: under `vlcs run` 15 contexts each hold libgomp and run
 * parallel regions in one process.  Without it, the first context past
 * glibc's default limits fails with a message naming the limit and the fix,
 * and every context made before keeps working. */
#define _GNU_SOURCE
#include "check.h"

#include <math.h>
#include <unistd.h>

typedef double (*sum_fn)(long);
typedef int (*int_fn)(void);

#define WANT 15

int main(int argc, char **argv)
{
    int launched = argc > 1 && strcmp(argv[1], "--launched") == 0;
    const char *t = getenv("GLIBC_TUNABLES");
    if (!launched && t != NULL) {
        /* Measure glibc's defaults, whatever the caller's environment. */
        unsetenv("GLIBC_TUNABLES");
        execv("/proc/self/exe", argv);
        FAIL("re-exec without GLIBC_TUNABLES failed");
    }
    if (launched)
        CHECK(t != NULL && strstr(t, "glibc.rtld.nns=16"), "run me through vlcs run");

    double expect = 0;
    for (long i = 0; i < 100000; i++)
        expect += 1.0 / (double)(i + 1);

    vlcs_ctx *ctx[WANT];
    sum_fn sum[WANT];
    int loaded = 0;
    char err[1024] = "";
    int code = VLCS_OK, limit = VLCS_LIMIT_NONE;
    for (int i = 0; i < WANT; i++) {
        char name[16];
        snprintf(name, sizeof name, "c%d", i);
        ctx[i] = vlcs_ctx_create(name);
        CHECK(ctx[i] != NULL, "create");
        vlcs_ctx_set_cpus(ctx[i], i % 2 ? "1" : "0");
        vlcs_ctx_setenv(ctx[i], "OMP_NUM_THREADS", "2");
        void *h = vlcs_ctx_load(ctx[i], OMP_LIB);
        if (h == NULL) {
            snprintf(err, sizeof err, "%s", vlcs_error());
            code = vlcs_errcode();
            limit = vlcs_errlimit();
            break;
        }
        sum[i] = SYM(h, sum_fn, "omp_probe_sum");
        loaded++;
    }
    if (launched) {
        CHECK_EQ(WANT, loaded, err);
    } else {
        CHECK(loaded < WANT, "glibc's defaults were expected to stop before %d", WANT);
        printf("without vlcs run: %d contexts loaded libgomp; then: %s\n", loaded, err);
        CHECK_EQ(VLCS_E_LIMIT, code, err);
        CHECK(strstr(err, "vlcs run") != NULL, "the error says how to fix it: %s", err);
        CHECK(strstr(err, "static TLS") != NULL || strstr(err, "namespace") != NULL,
              "the error names the limit: %s", err);
        CHECK(limit == VLCS_LIMIT_STATIC_TLS || limit == VLCS_LIMIT_NAMESPACES,
              "vlcs_errlimit() says which limit (%d): %s", limit, err);
        /* The context that failed still works for what fits. */
        CHECK(vlcs_ctx_load(ctx[loaded], PROBE_LIB) != NULL || strstr(vlcs_error(), "vlcs run"),
              "failed context still usable or cleanly refused");
    }
    for (int i = 0; i < loaded; i++) {
        CHECK_EQ(0, vlcs_enter(ctx[i]), "enter");
        CHECK(fabs(sum[i](100000) - expect) < 1e-9, "context %d computes", i);
        CHECK_EQ(0, vlcs_leave(), "leave");
    }
    printf("%d contexts with libgomp, each ran a parallel region\n", loaded);
    PASS(launched ? "many contexts under vlcs run" : "limits without vlcs run");
    return 0;
}

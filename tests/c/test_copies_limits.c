/* Copy mode's limits, started without the launcher: each is a clear error
 * before or instead of a load, and the process and the other contexts go
 * on working. */
#define _GNU_SOURCE
#include "check.h"

#include <stdint.h>

typedef int (*int_fn)(void);

int main(void)
{
    CHECK_EQ(0, vlcs_init(), "init");
    /* strict mode's filters on a copy's code cannot be removed: destroy
     * keeps the copies (and their static TLS) and says so */
    int destroyed = vlcs_strict_active() ? 1 : 0;

    /* A library whose soname leaves no room for a unique name. */
    vlcs_ctx *s = vlcs_ctx_create("short");
    CHECK_EQ(0, vlcs_ctx_set_mode(s, VLCS_MODE_COPIES), "mode");
    CHECK_NULL(vlcs_ctx_load(s, SHORTNAME_LIB), "too short to be renamed");
    CHECK_EQ(VLCS_E_INVALID, vlcs_errcode(), "an invalid library, not a system error");
    void *ok = vlcs_ctx_load(s, PROBE_LIB);
    CHECK(ok != NULL, "the context still loads what it can");
    CHECK_EQ(1, SYM(ok, int_fn, "probe_bump")(), "and uses it");
    CHECK_EQ(destroyed, vlcs_ctx_destroy(s), "destroy");

    /* Static TLS: without `vlcs run` a few copies of libgomp fill glibc's
     * reserve; the next load says so and names the launcher. */
    enum { MAX = 1000 };
    static vlcs_ctx *c[MAX];
    static void *h[MAX];
    int n = 0;
    for (; n < MAX; n++) {
        c[n] = vlcs_ctx_create("omp");
        CHECK_EQ(0, vlcs_ctx_set_mode(c[n], VLCS_MODE_COPIES), "mode");
        CHECK_EQ(0, vlcs_ctx_setenv(c[n], "OMP_NUM_THREADS", "1"), "env");
        if ((h[n] = vlcs_ctx_load(c[n], OMP_LIB)) == NULL)
            break;
    }
    CHECK(n < MAX, "%d copies of libgomp loaded: the reserve never ran out", n);
    CHECK_EQ(VLCS_E_LIMIT, vlcs_errcode(), "a limit");
    CHECK_EQ(VLCS_LIMIT_STATIC_TLS, vlcs_errlimit(), "static TLS");
    CHECK(strstr(vlcs_error(), "vlcs run") != NULL, "names the launcher: %s", vlcs_error());
    printf("static TLS full after %d copies of libgomp: %s\n", n, vlcs_error());
    /* The context that failed loads what needs no static TLS; the others work. */
    void *p = vlcs_ctx_load(c[n], PROBE_LIB);
    CHECK(p != NULL, "a library without TLS after the failure");
    for (int i = 0; i < n; i++)
        CHECK_EQ(1, SYM(h[i], int_fn, "omp_probe_max_threads")(), "earlier copies still work");
    for (int i = 0; i <= n; i++)
        CHECK_EQ(destroyed, vlcs_ctx_destroy(c[i]), "destroy");
    if (destroyed) {
        PASS("copy mode's limits (strict mode: copies kept)");
        return 0;
    }
    /* Their reserve is back: a new context loads libgomp again. */
    vlcs_ctx *again = vlcs_ctx_create("again");
    CHECK_EQ(0, vlcs_ctx_set_mode(again, VLCS_MODE_COPIES), "mode");
    CHECK(vlcs_ctx_load(again, OMP_LIB) != NULL, "static TLS given back on destroy");
    CHECK_EQ(0, vlcs_ctx_destroy(again), "destroy");
    PASS("copy mode's limits");
    return 0;
}

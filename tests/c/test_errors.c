/* Bad input gets one clear sentence and the right vlcs_errcode(), and loses
 * nothing: the code says what kind of failure it was, the sentence is
 * checked where its wording is the point. */
#define _GNU_SOURCE
#include "check.h"

#include <pthread.h>
#include <sys/sysinfo.h>

typedef int (*bump_fn)(void);

static void *fail_in_thread(void *arg)
{
    (void)arg;
    CHECK_EQ(VLCS_OK, vlcs_errcode(), "a new thread starts without an error");
    CHECK_ERRC(VLCS_E_INVALID, vlcs_leave());
    return NULL;
}

int main(void)
{
    CHECK_EQ(VLCS_OK, vlcs_errcode(), "no failure yet");
    CHECK_STR("", vlcs_error(), "no failure yet");
    vlcs_ctx *c = vlcs_ctx_create("c");
    vlcs_ctx *ok = vlcs_ctx_create("ok");
    void *lib = must_load(ok, PROBE_LIB);
    bump_fn bump = SYM(lib, bump_fn, "probe_bump");
    CHECK_EQ(1, bump(), "works before");
    CHECK_EQ(VLCS_OK, vlcs_errcode(), "successful calls set no code");

    /* Malformed CPU lists: VLCS_E_INVALID, and the sentence says what is wrong. */
    CHECK_ERR(vlcs_ctx_set_cpus(c, "3-1"), "ends before it starts");
    CHECK_CODE(VLCS_E_INVALID, "3-1");
    CHECK_ERR(vlcs_ctx_set_cpus(c, "a"), "malformed CPU list \"a\"");
    CHECK_CODE(VLCS_E_INVALID, "a");
    CHECK_ERRC(VLCS_E_INVALID, vlcs_ctx_set_cpus(c, ""));
    CHECK_ERR(vlcs_ctx_set_cpus(c, "1-"), "malformed CPU list \"1-\"");
    CHECK_CODE(VLCS_E_INVALID, "1-");
    CHECK_ERRC(VLCS_E_INVALID, vlcs_ctx_set_cpus(c, "0,,1"));
    CHECK_ERRC(VLCS_E_INVALID, vlcs_ctx_set_cpus(c, NULL));
    CHECK_ERR(vlcs_ctx_set_cpus(c, "99999"), "beyond");
    CHECK_CODE(VLCS_E_INVALID, "99999");
    char bad[32];
    snprintf(bad, sizeof bad, "%d", get_nprocs_conf() + 7);
    CHECK_ERR(vlcs_ctx_set_cpus(c, bad), "is not available to this process");
    CHECK_CODE(VLCS_E_INVALID, "a CPU the process may not use");
    char list[64];
    CHECK(vlcs_ctx_get_cpus(c, list, sizeof list) > 0, "get_cpus");
    CHECK_CODE(VLCS_E_INVALID, "a successful call leaves the last code alone");
    char all[64];
    snprintf(all, sizeof all, get_nprocs() > 1 ? "0-%d" : "%d", get_nprocs() - 1);
    CHECK_STR(all, list, "a failed set keeps the previous set");
    CHECK_EQ(0, vlcs_ctx_set_cpus(c, " 0 "), "spaces around are fine");
    CHECK_ERRC(VLCS_E_INVALID, vlcs_ctx_set_gpus(c, "0-"));
    CHECK_ERRC(VLCS_E_INVALID, vlcs_ctx_set_gpus(c, NULL));

    /* Environment names. */
    CHECK_ERRC(VLCS_E_INVALID, vlcs_ctx_setenv(c, "A=B", "1"));
    CHECK_ERRC(VLCS_E_INVALID, vlcs_ctx_setenv(c, "", "1"));
    CHECK_ERRC(VLCS_E_INVALID, vlcs_ctx_unsetenv(c, NULL));
    CHECK_NULLC(VLCS_E_INVALID, vlcs_ctx_getenv(c, "A=B"));

    /* Loading and symbols. */
    CHECK_NULL(vlcs_ctx_load(c, "libdoes-not-exist.so.7"), "libdoes-not-exist.so.7");
    CHECK_CODE(VLCS_E_NOT_FOUND, "a missing library");
    CHECK_NULLC(VLCS_E_NOT_FOUND, vlcs_ctx_load(c, "/nonexistent/dir/libx.so"));
    CHECK_NULLC(VLCS_E_INVALID, vlcs_ctx_load(c, ""));
    CHECK_NULLC(VLCS_E_INVALID, vlcs_ctx_load(NULL, PROBE_LIB));
    /* A library whose dependency binds to a symbol no one defines. */
    CHECK_NULLC(VLCS_E_NOT_FOUND, vlcs_ctx_load(c, PLUGIN_SINGLETON_LIB));
    CHECK(strstr(vlcs_error(), "undefined symbol") != NULL, "says which symbol: %s",
          vlcs_error());
    void *l = must_load(c, PROBE_LIB); /* the failed loads left c usable */
    CHECK_NULL(vlcs_ctx_sym(l, "no_such_symbol"), "no such symbol");
    CHECK_CODE(VLCS_E_NOT_FOUND, "a missing symbol");
    CHECK_NULLC(VLCS_E_INVALID, vlcs_ctx_sym(NULL, "x"));
    CHECK_NULLC(VLCS_E_INVALID, vlcs_ctx_sym(l, ""));
    CHECK_NULLC(VLCS_E_NOT_FOUND, vlcs_ctx_load_transparent(c, "libno-shim-for-this.so.1"));
    CHECK_NULLC(VLCS_E_INVALID, vlcs_ctx_load_transparent(c, NULL));

    /* Contexts and handles that are not. */
    CHECK_NULL(vlcs_ctx_create("a-name-that-is-far-too-long-for-a-context-because-it-goes-on-and-on"),
               "longer than");
    CHECK_CODE(VLCS_E_INVALID, "name too long");
    int x = 0;
    CHECK_ERR(vlcs_enter((vlcs_ctx *)&x), "is not a vlcs context");
    CHECK_CODE(VLCS_E_INVALID, "not a context");
    CHECK_ERRC(VLCS_E_INVALID, vlcs_enter(NULL));
    CHECK_NULLC(VLCS_E_INVALID, vlcs_ctx_name(NULL));
    CHECK_ERRC(VLCS_E_INVALID, vlcs_ctx_thread_count(NULL) >= 0 ? 0 : -1);
    CHECK_ERRC(VLCS_E_INVALID, vlcs_leave());
    CHECK_ERRC(VLCS_E_INVALID, vlcs_init_opts(NULL));
    CHECK_ERRC(VLCS_E_NOT_FOUND, vlcs_service_add("libno-such-service.so.1"));
    CHECK_ERRC(VLCS_E_INVALID, vlcs_service_add(""));

    /* The code is the calling thread's own. */
    CHECK_ERRC(VLCS_E_NOT_FOUND, vlcs_service_add("libno-such-service.so.1"));
    pthread_t t;
    pthread_create(&t, NULL, fail_in_thread, NULL);
    pthread_join(t, NULL);
    CHECK_CODE(VLCS_E_NOT_FOUND, "another thread's failure leaves this thread's code alone");

    CHECK_EQ(2, bump(), "other contexts kept working");
    CHECK(strcmp(vlcs_version(), VLCS_VERSION_STRING) == 0, "version");
    PASS("errors");
    return 0;
}

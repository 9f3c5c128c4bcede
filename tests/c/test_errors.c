/* Bad input gets one clear sentence and loses nothing. */
#define _GNU_SOURCE
#include "check.h"

#include <sys/sysinfo.h>

typedef int (*bump_fn)(void);

int main(void)
{
    vlcs_ctx *c = vlcs_ctx_create("c");
    vlcs_ctx *ok = vlcs_ctx_create("ok");
    void *lib = must_load(ok, PROBE_LIB);
    bump_fn bump = SYM(lib, bump_fn, "probe_bump");
    CHECK_EQ(1, bump(), "works before");

    CHECK_ERR(vlcs_ctx_set_cpus(c, "3-1"), "ends before it starts");
    CHECK_ERR(vlcs_ctx_set_cpus(c, "a"), "malformed CPU list \"a\"");
    CHECK_ERR(vlcs_ctx_set_cpus(c, ""), "empty");
    CHECK_ERR(vlcs_ctx_set_cpus(c, "1-"), "malformed CPU list \"1-\"");
    CHECK_ERR(vlcs_ctx_set_cpus(c, "0,,1"), "malformed");
    CHECK_ERR(vlcs_ctx_set_cpus(c, NULL), "NULL");
    CHECK_ERR(vlcs_ctx_set_cpus(c, "99999"), "beyond");
    char bad[32];
    snprintf(bad, sizeof bad, "%d", get_nprocs_conf() + 7);
    CHECK_ERR(vlcs_ctx_set_cpus(c, bad), "is not available to this process");
    char list[64];
    vlcs_ctx_get_cpus(c, list, sizeof list);
    char all[64];
    snprintf(all, sizeof all, get_nprocs() > 1 ? "0-%d" : "%d", get_nprocs() - 1);
    CHECK_STR(all, list, "a failed set keeps the previous set");
    CHECK_EQ(0, vlcs_ctx_set_cpus(c, " 0 "), "spaces around are fine");

    CHECK_NULL(vlcs_ctx_load(c, "libdoes-not-exist.so.7"), "libdoes-not-exist.so.7");
    CHECK_NULL(vlcs_ctx_load(c, ""), "empty");
    CHECK_NULL(vlcs_ctx_load(NULL, PROBE_LIB), "NULL");
    void *l = must_load(c, PROBE_LIB); /* the failed loads left c usable */
    CHECK_NULL(vlcs_ctx_sym(l, "no_such_symbol"), "no such symbol");
    CHECK_NULL(vlcs_ctx_sym(NULL, "x"), "handle is NULL");
    CHECK_NULL(vlcs_ctx_create("a-name-that-is-far-too-long-for-a-context-because-it-goes-on-and-on"),
               "longer than");
    int x = 0;
    CHECK_ERR(vlcs_enter((vlcs_ctx *)&x), "is not a vlcs context");

    CHECK_EQ(2, bump(), "other contexts kept working");
    CHECK(strcmp(vlcs_version(), VLCS_VERSION_STRING) == 0, "version");
    PASS("errors");
    return 0;
}

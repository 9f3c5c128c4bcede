/* vlcs_ctx_apply_plan: a context configured from a plan `vlcs tune` wrote
 * (CPUs and environment of one task); malformed plans, unknown tasks and
 * CPUs of another machine are refused with the context unchanged. */
#define _GNU_SOURCE
#include "check.h"

#include <stdio.h>
#include <sys/sysinfo.h>
#include <unistd.h>

static char dir[] = "/tmp/vlcs-test-plan-XXXXXX";

static const char *plan(const char *name, const char *text)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL && fputs(text, f) >= 0, "write %s", path);
    fclose(f);
    return path;
}

static const char *cpus(vlcs_ctx *c)
{
    static char buf[64];
    CHECK(vlcs_ctx_get_cpus(c, buf, sizeof buf) >= 0, "cpus");
    return buf;
}

int main(void)
{
    if (get_nprocs() < 2) {
        printf("SKIP: needs 2 CPUs\n");
        return 77;
    }
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    /* As vlcs tune writes it: other keys, nested values, escapes. */
    const char *good = plan(
        "plan.json",
        "{\n  \"version\": 1,\n  \"method\": \"smart\",\n  \"machine\": {\"hostname\": \"vm\", "
        "\"cpus_usable\": [0, 1]},\n  \"tasks\": [\n    {\"name\": \"gemm\", \"cpus\": \"0\", "
        "\"env\": {}},\n    {\"name\": \"solver \\\"b\\\"\", \"cpus\": \"1\", \"env\": "
        "{\"OMP_NUM_THREADS\": \"1\", \"NOTE\": \"a\\tb\\u0041\"}}\n  ],\n  \"makespan_s\": "
        "0.318, \"prediction_error\": null, \"failures\": {}, \"ok\": true, \"x\": -1.5e-3,\n"
        "  \"choices\": {\"gemm\": 2}, \"measured\": [{\"config\": [1, 1], \"env\": "
        "[{\"OPENBLAS_NUM_THREADS\": \"1\"}, {}]}],\n  \"without_contexts\": {\"pools\": "
        "{\"gemm\": [\"openblas\"]}, \"reachable\": [[1, 1], [2, 2]], \"best_s\": null}\n}\n");
    vlcs_ctx *c = vlcs_ctx_create("c");
    CHECK_EQ(0, vlcs_ctx_apply_plan(c, good, "solver \"b\""), "apply");
    CHECK_STR("1", cpus(c), "the task's CPUs");
    CHECK_STR("1", vlcs_ctx_getenv(c, "OMP_NUM_THREADS"), "its environment");
    CHECK_STR("a\tbA", vlcs_ctx_getenv(c, "NOTE"), "escapes decoded");
    CHECK_EQ(0, vlcs_ctx_apply_plan(c, good, "gemm"), "another task");
    CHECK_STR("0", cpus(c), "its CPUs");

    CHECK_ERRC(VLCS_E_NOT_FOUND, vlcs_ctx_apply_plan(c, good, "nope"));
    CHECK(strstr(vlcs_error(), "has no task 'nope'") != NULL, "%s", vlcs_error());
    CHECK_ERRC(VLCS_E_NOT_FOUND, vlcs_ctx_apply_plan(c, "/nonexistent/plan.json", "gemm"));
    const char *other = plan("other.json", "{\"version\": 1, \"machine\": {\"hostname\": \"big\"}, "
                                           "\"tasks\": [{\"name\": \"gemm\", \"cpus\": \"0-1023\"}]}");
    CHECK_ERRC(VLCS_E_INVALID, vlcs_ctx_apply_plan(c, other, "gemm"));
    CHECK(strstr(vlcs_error(), "made for another machine") != NULL, "%s", vlcs_error());
    const char *bad[] = {
        "{\"version\": 1, \"tasks\": [{\"name\": \"gemm\", \"cpus\": \"1\"}",  /* cut short */
        "{\"version\": 2, \"tasks\": []}",                                 /* another version */
        "{\"tasks\": [{\"name\": \"gemm\", \"cpus\": \"1\"}]}",                 /* no version */
        "[1, 2]",                                                          /* not an object */
        "{\"version\": 1, \"tasks\": [{\"name\": \"gemm\", \"cpus\": \"1\"}]} x", /* trailing */
        "{\"version\": 1, \"tasks\": [{\"name\": \"gemm\", \"cpus\": 1}]}",     /* cpus a number */
        "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK_ERRC(VLCS_E_INVALID, vlcs_ctx_apply_plan(c, plan("bad.json", bad[i]), "gemm"));
        CHECK(strstr(vlcs_error(), "not a plan written by vlcs tune") != NULL, "case %zu: %s", i,
              vlcs_error());
    }
    CHECK_STR("0", cpus(c), "every refused plan left the context as it was");
    CHECK_STR("1", vlcs_ctx_getenv(c, "OMP_NUM_THREADS"), "and its environment");
    CHECK_EQ(0, vlcs_ctx_destroy(c), "destroy");
    CHECK_ERRC(VLCS_E_DESTROYED, vlcs_ctx_apply_plan(c, good, "gemm"));
    /* plan() names every file in one buffer: good and other name the last */
    const char *files[] = {"plan.json", "other.json", "bad.json"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        CHECK_EQ(0, unlink(path), files[i]);
    }
    CHECK_EQ(0, rmdir(dir), "the test's folder");
    PASS("plan");
    return 0;
}

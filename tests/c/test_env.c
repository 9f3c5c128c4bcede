/* Each context has its own environment: set before a load it reaches the
 * library's constructors, set after it reaches later getenv calls; the
 * process environment never changes. */
#include "check.h"

typedef const char *(*getenv_fn)(const char *);
typedef int (*int_fn)(void);

int main(void)
{
    setenv("VLCS_TEST_BASE", "base", 1);
    vlcs_ctx *a = vlcs_ctx_create("a"), *b = vlcs_ctx_create("b");
    CHECK_EQ(0, vlcs_ctx_setenv(a, "VLCS_TEST_X", "from-a"), "setenv before load");
    CHECK_EQ(0, vlcs_ctx_setenv(a, "VLCS_TEST_BASE", "overridden"), "override");
    CHECK_EQ(0, vlcs_ctx_unsetenv(b, "VLCS_TEST_BASE"), "unsetenv before load");
    CHECK_STR("from-a", vlcs_ctx_getenv(a, "VLCS_TEST_X"), "getenv before load");
    CHECK(vlcs_ctx_getenv(b, "VLCS_TEST_BASE") == NULL, "unset before load");

    /* libgomp reads OMP_NUM_THREADS in its constructor. */
    CHECK_EQ(0, vlcs_ctx_setenv(a, "OMP_NUM_THREADS", "1"), "omp env");
    CHECK_EQ(0, vlcs_ctx_setenv(b, "OMP_NUM_THREADS", "3"), "omp env");
    void *la = must_load(a, PROBE_LIB), *lb = must_load(b, PROBE_LIB);
    void *oa = must_load(a, OMP_LIB), *ob = must_load(b, OMP_LIB);
    CHECK_EQ(1, SYM(oa, int_fn, "omp_probe_max_threads")(), "libgomp read a's OMP_NUM_THREADS");
    CHECK_EQ(3, SYM(ob, int_fn, "omp_probe_max_threads")(), "libgomp read b's OMP_NUM_THREADS");

    getenv_fn ga = SYM(la, getenv_fn, "probe_getenv"), gb = SYM(lb, getenv_fn, "probe_getenv");
    CHECK_STR("from-a", ga("VLCS_TEST_X"), "library in a sees a's variable");
    CHECK_STR("overridden", ga("VLCS_TEST_BASE"), "override seen");
    CHECK(gb("VLCS_TEST_X") == NULL, "b does not see a's variable");
    CHECK(gb("VLCS_TEST_BASE") == NULL, "b's unset is seen");

    /* After load: later getenv calls see changes. */
    CHECK_EQ(0, vlcs_ctx_setenv(b, "VLCS_TEST_LATE", "late"), "setenv after load");
    CHECK_STR("late", gb("VLCS_TEST_LATE"), "later getenv sees it");
    CHECK_EQ(0, vlcs_ctx_unsetenv(a, "VLCS_TEST_X"), "unsetenv after load");
    CHECK(ga("VLCS_TEST_X") == NULL, "unset after load");
    CHECK_STR("late", vlcs_ctx_getenv(b, "VLCS_TEST_LATE"), "vlcs_ctx_getenv after load");

    /* The base is untouched. */
    CHECK_STR("base", getenv("VLCS_TEST_BASE"), "base value kept");
    CHECK(getenv("VLCS_TEST_X") == NULL && getenv("VLCS_TEST_LATE") == NULL,
          "nothing leaked into the base");
    CHECK(getenv("OMP_NUM_THREADS") == NULL || strcmp(getenv("OMP_NUM_THREADS"), "1") != 0,
          "OMP_NUM_THREADS of a not in base");

    /* Bad names. */
    CHECK_ERR(vlcs_ctx_setenv(a, "", "x"), "invalid variable name");
    CHECK_ERR(vlcs_ctx_setenv(a, "A=B", "x"), "invalid variable name \"A=B\"");
    CHECK_ERR(vlcs_ctx_unsetenv(a, NULL), "invalid variable name");
    PASS("env");
    return 0;
}

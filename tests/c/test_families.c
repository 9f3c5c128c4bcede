/* Library families: the built-in table is listed; a family registered at
 * run time (a 64-bit thread count, a pool stopper) is resized by elastic
 * lending as its context grows and shrinks and stopped when the context is
 * destroyed; bad descriptors are refused with the table unchanged. */
#define _GNU_SOURCE
#include "check.h"

#include <stdint.h>
#include <sys/sysinfo.h>

typedef int64_t (*get64_fn)(void);
typedef void (*watch_fn)(int *);

static unsigned long count_families(void)
{
    unsigned long n = 0;
    while (vlcs_family_at(n) != NULL)
        n++;
    return n;
}

static const vlcs_family *find(const char *name)
{
    const vlcs_family *f;
    for (unsigned long i = 0; (f = vlcs_family_at(i)) != NULL; i++)
        if (strcmp(f->name, name) == 0)
            return f;
    return NULL;
}

int main(void)
{
    if (get_nprocs() < 2) {
        printf("SKIP: needs 2 CPUs\n");
        return 77;
    }
    /* The built-in rows. */
    const vlcs_family *blas = find("openblas");
    CHECK(blas != NULL && find("openmp") != NULL && find("mkl") != NULL, "built-in families");
    CHECK_STR("libopenblas", blas->prefixes[0], "OpenBLAS's file names");
    CHECK_STR("openblas_set_num_threads", blas->set_threads[0], "its setter");
    CHECK_EQ(1, blas->resize_when_elastic, "OpenBLAS follows elastic contexts");
    CHECK_EQ(0, find("openmp")->resize_when_elastic, "OpenMP's setter is per thread");
    unsigned long builtins = count_families();

    /* Bad descriptors: refused, nothing added. */
    CHECK_ERRC(VLCS_E_INVALID, vlcs_family_register(NULL));
    vlcs_family bad = {.size = sizeof bad, .name = ""};
    CHECK_ERRC(VLCS_E_INVALID, vlcs_family_register(&bad));
    bad.name = "bad";
    bad.count_type = 3;
    CHECK_ERRC(VLCS_E_INVALID, vlcs_family_register(&bad));
    bad.count_type = VLCS_COUNT_INT;
    bad.set_threads = (const char *const[]){"", NULL};
    CHECK_ERRC(VLCS_E_INVALID, vlcs_family_register(&bad));
    CHECK(strstr(vlcs_error(), "set_threads[0] is empty") != NULL, "says which: %s", vlcs_error());
    bad.set_threads = NULL;
    bad.size = 4;
    CHECK_ERRC(VLCS_E_INVALID, vlcs_family_register(&bad));
    CHECK_EQ(builtins, count_families(), "nothing added by refused descriptors");

    /* The strings are copied: the caller's may go. */
    char name[] = "family64", setter[] = "fam_set_threads";
    const char *setters[] = {"fam_set_threads_v2", setter, NULL};
    vlcs_family fam = {
        .size = sizeof fam,
        .name = name,
        .prefixes = (const char *const[]){"libvlcs_family64", NULL},
        .get_threads = (const char *const[]){"fam_get_threads", NULL},
        .set_threads = setters,
        .count_type = VLCS_COUNT_INT64,
        .resize_when_elastic = 1,
        .stop_pool = (const char *const[]){"fam_stop_pool", NULL},
    };
    CHECK_EQ(0, vlcs_family_register(&fam), "register");
    memset(setter, 'x', sizeof setter - 1);
    CHECK_EQ(0, vlcs_family_register(&fam), "registering the same name replaces it");
    CHECK_EQ(builtins + 1, count_families(), "one more family, not two");
    const vlcs_family *got = find("family64");
    CHECK(got != NULL && got->count_type == VLCS_COUNT_INT64, "listed with its count type");
    CHECK_STR("xxxxxxxxxxxxxxx", got->set_threads[1], "the second registration's copy");
    setter[0] = 'f';
    memcpy(setter, "fam_set_threads", sizeof setter);
    CHECK_EQ(0, vlcs_family_register(&fam), "and again, with the right name");

    /* Two elastic contexts: a holds the library; b lends it CPU 1 while idle. */
    vlcs_ctx *a = vlcs_ctx_create("a"), *b = vlcs_ctx_create("b");
    CHECK_EQ(0, vlcs_ctx_set_cpus(a, "0"), "a on CPU 0");
    CHECK_EQ(0, vlcs_ctx_set_cpus(b, "1"), "b on CPU 1");
    CHECK_EQ(0, vlcs_ctx_set_elastic(a, "0-1", 0), "a elastic");
    CHECK_EQ(0, vlcs_ctx_set_elastic(b, "0-1", 0), "b elastic");
    void *lib = must_load(a, FAMILY64_LIB);
    get64_fn threads = SYM(lib, get64_fn, "fam_get_threads");
    int stops = 0;
    SYM(lib, watch_fn, "fam_watch_stops")(&stops);
    CHECK_EQ(1, threads(), "loaded into an idle elastic context: sized to its 1 CPU");

    CHECK_EQ(0, vlcs_enter(a), "a busy");
    CHECK_EQ(2, threads(), "a grew to CPUs 0-1: its pool resized with a 64-bit count");
    CHECK_EQ(0, vlcs_enter(b), "b busy too (nested on this thread): its CPU comes back");
    CHECK_EQ(1, threads(), "a shrank to CPU 0");
    CHECK_EQ(0, vlcs_leave(), "b idle");
    CHECK_EQ(2, threads(), "a grew again");
    CHECK_EQ(0, vlcs_leave(), "a idle");
    CHECK_EQ(0, stops, "not stopped while the context lives");

    /* Strict mode (VLCS_STRICT=1) keeps every namespace, and what is not
     * unloaded is not stopped. */
    int strict = vlcs_strict_active();
    CHECK_EQ(strict ? 1 : 0, vlcs_ctx_destroy(a), "destroy a");
    CHECK_EQ(strict ? 0 : 1, stops, "its pool stopped once before unload");
    CHECK_EQ(0, vlcs_ctx_destroy(b), "destroy b (it loaded nothing)");
    PASS("a registered family follows elastic contexts and is stopped on destroy");
    return 0;
}

/* Strict mode while contexts unload: each load into a context covers the
 * code of every context, walking the objects each has loaded, and a
 * context that closes libraries meanwhile (its code's dlclose, or a
 * vlcs_ctx_exec run's program unloaded at its end) must not be read as they
 * go.  One thread opens and closes a tree of 12 libraries in one context,
 * over and over; the main thread loads into another context as often. */
#define _GNU_SOURCE
#include "check.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/sysinfo.h>

enum { ROUNDS = 1000 };

typedef void *(*open_fn)(const char *, int);

struct opener {
    open_fn open;
    int opened;
};

static void *open_and_close(void *arg)
{
    struct opener *o = arg;
    for (int i = 0; i < ROUNDS; i++) {
        void *h = o->open(CHAIN_LIB, 0); /* the context's code opens it */
        if (h == NULL)
            continue;
        o->opened++;
        dlclose(h);
    }
    return NULL;
}

int main(void)
{
    if (get_nprocs() < 2) {
        printf("SKIP: needs 2 CPUs\n");
        return 77;
    }
    vlcs_opts opts = {.size = sizeof opts, .strict = 1};
    CHECK_EQ(0, vlcs_init_opts(&opts), "enable strict mode");
    vlcs_ctx *opener = vlcs_ctx_create("opener");
    vlcs_ctx *loader = vlcs_ctx_create("loader");
    CHECK(opener != NULL && loader != NULL, "create");
    CHECK_EQ(0, vlcs_ctx_set_mode(opener, VLCS_MODE_NAMESPACE), "a namespace for the opener");
    CHECK_EQ(0, vlcs_ctx_set_mode(loader, VLCS_MODE_NAMESPACE), "a namespace for the loader");
    CHECK_EQ(0, vlcs_ctx_set_cpus(opener, "1"), "the opener's CPU");
    CHECK_EQ(0, vlcs_ctx_set_cpus(loader, "0"), "the loader's CPU");
    void *lib = vlcs_ctx_load(opener, DLOPENER_LIB);
    CHECK(lib != NULL, "load the opener");
    struct opener o = {(open_fn)vlcs_ctx_sym(lib, "dlopener_open"), 0};
    CHECK(o.open != NULL, "dlopener_open");
    pthread_t t;
    CHECK_EQ(0, pthread_create(&t, NULL, open_and_close, &o), "thread");
    int loaded = 0;
    for (int i = 0; i < ROUNDS; i++)
        loaded += vlcs_ctx_load(loader, PROBE_LIB) != NULL;
    pthread_join(t, NULL);
    CHECK_EQ(ROUNDS, loaded, "every load into the loader succeeded");
    CHECK_EQ(ROUNDS, o.opened, "every open of the opener's code succeeded");
    /* the table of whose code is where still answers: the loader's libc,
     * trapped, sees the loader's one CPU */
    typedef int (*count_fn)(void);
    count_fn count = (count_fn)vlcs_ctx_sym(vlcs_ctx_load(loader, PROBE_LIB),
                                            "probe_sched_getaffinity");
    CHECK(count != NULL, "probe_sched_getaffinity");
    CHECK_EQ(1, count(), "the loader's code sees its one CPU");
    puts("test_strict_unloads: ok");
    return 0;
}

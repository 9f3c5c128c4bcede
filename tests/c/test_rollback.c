/* A failed first load into a context gives its new namespace back (glibc has
 * few), keeping the environment set before it.  A failed vlcs_service_add or
 * shim registration undoes what it did: the
 * library it opened is closed, no forwarder or shim stays registered, and a
 * second, correct call succeeds while every context keeps working. */
#define _GNU_SOURCE
#define VLCS_INTERNAL_API /* vlcs_shim_register */
#include "check.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

typedef int (*bump_fn)(void);

#define SLOTS 64 /* rows of a shim's table (VLCS_SHIM_SLOTS) */

static void services(void)
{
    /* A context whose namespace exists before the failures. */
    vlcs_ctx *before = vlcs_ctx_create("before");
    void *p = must_load(before, PROBE_LIB);
    CHECK_EQ(1, SYM(p, bump_fn, "probe_bump")(), "works before");

    CHECK_ERRC(VLCS_E_NOT_FOUND, vlcs_service_add("libvlcs-no-such-service.so.1"));
    /* Fails after it opened the library: forwarders need a soname. */
    CHECK_ERR(vlcs_service_add(NOSONAME_LIB), "no soname");
    CHECK_CODE(VLCS_E_INVALID, "a library without a soname");
    CHECK(dlopen(NOSONAME_LIB, RTLD_NOW | RTLD_NOLOAD) == NULL,
          "the failed add closed the library it opened");

    /* The second, correct call succeeds, for namespaces old and new. */
    CHECK_EQ(0, vlcs_service_add(SINGLETON_LIB), "a correct add after the failed ones");
    bump_fn base_bump = (bump_fn)dlsym(RTLD_DEFAULT, "singleton_bump");
    CHECK(base_bump != NULL, "the service is in the base");
    vlcs_ctx *after = vlcs_ctx_create("after");
    void *ub = must_load(before, USES_SINGLETON_LIB), *ua = must_load(after, USES_SINGLETON_LIB);
    CHECK_EQ(1, base_bump(), "base");
    CHECK_EQ(2, SYM(ub, bump_fn, "uses_bump")(), "the older namespace reaches the one copy");
    CHECK_EQ(3, SYM(ua, bump_fn, "uses_bump")(), "a new namespace reaches the one copy");
    CHECK_EQ(2, SYM(p, bump_fn, "probe_bump")(), "the older context kept working");
    PASS("service rollback");
}

static void failed_loads(void)
{
    vlcs_ctx *e = vlcs_ctx_create("typos");
    CHECK_EQ(0, vlcs_ctx_setenv(e, "VLCS_ROLLBACK_VAR", "kept"), "setenv before any load");
    /* Far more than glibc's namespaces (16 with the base's), in one context
     * and in new ones. */
    for (int i = 0; i < 40; i++) {
        vlcs_ctx *c = i % 2 ? e : vlcs_ctx_create(NULL);
        CHECK_NULLC(VLCS_E_NOT_FOUND, vlcs_ctx_load(c, "/nonexistent/libvlcs_typo.so"));
        CHECK(strstr(vlcs_error(), "libvlcs_typo.so") != NULL, "the error names it: %s",
              vlcs_error());
    }
    /* A library whose dependency loads and which itself cannot: its
     * dependency goes with it, and so does the namespace its failure made
     * (else the 16th would find none). */
    for (int i = 0; i < 40; i++) {
        CHECK_NULLC(VLCS_E_NOT_FOUND, vlcs_ctx_load(e, NEEDS_MISSING_LIB));
        CHECK(strstr(vlcs_error(), "vlcs_test_nowhere") != NULL, "the error names it: %s",
              vlcs_error());
    }
    void *p = must_load(e, PROBE_LIB);
    CHECK_EQ(VLCS_MODE_NAMESPACE, vlcs_ctx_mode(e), "a namespace was left for it");
    CHECK_EQ(1, SYM(p, bump_fn, "probe_bump")(), "the context loads after its typos");
    const char *v = vlcs_ctx_getenv(e, "VLCS_ROLLBACK_VAR");
    CHECK(v != NULL && strcmp(v, "kept") == 0, "the environment set before: %s", v ? v : "unset");
    /* Namespaces (and static TLS) are left for more contexts. */
    for (int i = 0; i < 4; i++) {
        vlcs_ctx *c = vlcs_ctx_create(NULL);
        void *q = must_load(c, PROBE_LIB);
        CHECK(SYM(q, bump_fn, "probe_bump")() == 1, "context %d has its own copy", i);
        CHECK_EQ(0, vlcs_enter(c), "enter");
        CHECK_EQ(0, vlcs_leave(), "leave");
    }
    CHECK_EQ(2, SYM(p, bump_fn, "probe_bump")(), "the first context's copy counts on");
    PASS("a failed first load gives its namespace back");
}

/* Another thread inside a context while its first load fails: the
 * namespace made for the load and given back after it must never be run
 * by the thread inside (entering sets a thread up with the namespace's
 * libc once it has one). */
static vlcs_ctx *shared_ctx;
static atomic_bool typing_done;

static void *typist(void *arg)
{
    (void)arg;
    for (int i = 0; i < 300; i++)
        CHECK_NULLC(VLCS_E_NOT_FOUND, vlcs_ctx_load(shared_ctx, "/nonexistent/libvlcs_typo.so"));
    atomic_store(&typing_done, true);
    return NULL;
}

static void failed_loads_while_inside(void)
{
    shared_ctx = vlcs_ctx_create("typed-into");
    pthread_t t;
    CHECK_EQ(0, pthread_create(&t, NULL, typist, NULL), "pthread_create");
    long visits = 0;
    while (!atomic_load(&typing_done)) {
        CHECK_EQ(0, vlcs_enter(shared_ctx), "enter while loads fail");
        CHECK_EQ(0, vlcs_leave(), "leave");
        visits++;
    }
    pthread_join(t, NULL);
    void *p = must_load(shared_ctx, PROBE_LIB);
    CHECK_EQ(0, vlcs_enter(shared_ctx), "enter once it loaded");
    CHECK_EQ(1, SYM(p, bump_fn, "probe_bump")(), "its library works");
    CHECK_EQ(0, vlcs_leave(), "leave");
    /* 1 in strict mode: destroyed, its namespace kept (filters cover it) */
    CHECK(vlcs_ctx_destroy(shared_ctx) >= 0, "destroy");
    printf("# entered %ld times during 300 failed first loads\n", visits);
    PASS("a failed first load with another thread inside");
}

static void shims(void)
{
    static void *table[SLOTS * 2];
    const char *names[] = {"probe_bump", "no_such_function"};
    vlcs_ctx *c = vlcs_ctx_create("transparent");

    CHECK_ERRC(VLCS_E_NOT_FOUND,
               vlcs_shim_register("libvlcs_probe.so", "/nonexistent/libvlcs_probe.so", names, 1,
                                  table));
    CHECK_NULLC(VLCS_E_NOT_FOUND, vlcs_ctx_load_transparent(c, "libvlcs_probe.so"));
    CHECK(strstr(vlcs_error(), "no vlcs shim") != NULL, "the failed shim is not registered: %s",
          vlcs_error());

    /* The real library loads, but lacks a function the shim names: the
     * default context's row was filled in part. */
    CHECK_ERR(vlcs_shim_register("libvlcs_probe.so", PROBE_LIB, names, 2, table),
              "no_such_function");
    CHECK_CODE(VLCS_E_NOT_FOUND, "a function missing from the real library");
    for (int i = 0; i < SLOTS * 2; i++)
        CHECK(table[i] == NULL, "row entry %d of the failed shim was cleared", i);
    CHECK_NULLC(VLCS_E_NOT_FOUND, vlcs_ctx_load_transparent(c, "libvlcs_probe.so"));

    CHECK_EQ(0, vlcs_shim_register("libvlcs_probe.so", PROBE_LIB, names, 1, table),
             "a correct registration after the failed ones");
    bump_fn dflt = (bump_fn)table[0];
    CHECK(dflt != NULL, "row 0 points at the default context's copy");
    CHECK_EQ(1, dflt(), "the default copy");
    void *own = vlcs_ctx_load_transparent(c, "libvlcs_probe.so");
    CHECK(own != NULL, "a context gets its own copy behind the shim");
    bump_fn mine = SYM(own, bump_fn, "probe_bump");
    int rows_with_mine = 0;
    for (int slot = 0; slot < SLOTS; slot++)
        rows_with_mine += table[slot] == (void *)mine;
    CHECK_EQ(1, rows_with_mine, "one row points at the context's copy");
    CHECK_EQ(1, mine(), "the context's copy counts on its own");
    CHECK_EQ(2, dflt(), "the default copy");

    /* Past the 63 contexts with rows of their own, a new shim's default
     * context has none: the registration fails with VLCS_E_LIMIT. */
    vlcs_ctx *filler = NULL;
    for (int i = 0; i < SLOTS; i++)
        filler = vlcs_ctx_create(NULL);
    CHECK(filler != NULL, "contexts without a namespace are cheap");
    static void *table2[SLOTS];
    const char *one[] = {"singleton_value_addr"};
    CHECK_ERR(vlcs_shim_register("libvlcs_singleton.so", SINGLETON_LIB, one, 1, table2),
              "only the first 63 contexts");
    CHECK_CODE(VLCS_E_LIMIT, "no shim slot left");
    CHECK_NULLC(VLCS_E_NOT_FOUND, vlcs_ctx_load_transparent(c, "libvlcs_singleton.so"));
    CHECK(table2[0] == NULL, "the failed shim's row 0 was cleared");

    /* The registered shim and its contexts work on. */
    CHECK_EQ(3, dflt(), "the default copy after the failures");
    CHECK_EQ(0, vlcs_enter(c), "enter");
    CHECK_EQ(2, mine(), "the context's copy");
    CHECK_EQ(0, vlcs_leave(), "leave");
    PASS("shim rollback");
}

int main(void)
{
    failed_loads();
    failed_loads_while_inside();
    services();
    shims();
    return 0;
}

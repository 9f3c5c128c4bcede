/* dlopen called by a library inside a context: into the context's own
 * namespace, searched through the calling library's RUNPATH, and with
 * RTLD_GLOBAL (which crashes glibc inside a dlmopen namespace) working as
 * it does in a process: what a library opens that way is in the global
 * scope of its context's namespace (libraries loaded later bind to it,
 * dlsym(RTLD_DEFAULT) finds it), and of no other context nor the base.
 * The same in copy mode.  And oneMKL's order, in both: a library loaded
 * lazily first calls into one its caller opens RTLD_GLOBAL after it, and
 * reaches the context's copy, even where the base has one of its own. */
#define _GNU_SOURCE
#include "check.h"

#include <dlfcn.h>

typedef void *(*open_fn)(const char *, int);
typedef const char *(*err_fn)(void);
typedef int (*get_fn)(void);
typedef void *(*mode_fn)(const char *, int);
typedef void *(*default_fn)(const char *);

static void in_mode(int mode)
{
    int ns = mode == VLCS_MODE_NAMESPACE;
    vlcs_ctx *a = vlcs_ctx_create(ns ? "a" : "a-copies"), *b = vlcs_ctx_create(ns ? "b" : "b-copies");
    CHECK(a != NULL && b != NULL, "create");
    CHECK(vlcs_ctx_set_mode(a, mode) == 0 && vlcs_ctx_set_mode(b, mode) == 0, "mode %d", mode);
    void *oa = must_load(a, DLOPENER_LIB), *ob = must_load(b, DLOPENER_LIB);
    open_fn open_a = SYM(oa, open_fn, "dlopener_open"), open_b = SYM(ob, open_fn, "dlopener_open");

    /* Found only through the opener's RUNPATH: the caller's identity reached libc. */
    void *local = open_a("libvlcs_runpath_target.so", 0);
    CHECK(local != NULL, "RTLD_LOCAL by RUNPATH: %s", SYM(oa, err_fn, "dlopener_error")());
    void *global = open_b("libvlcs_runpath_target.so", 1);
    CHECK(global != NULL, "RTLD_GLOBAL by RUNPATH: %s", SYM(ob, err_fn, "dlopener_error")());
    CHECK(local != global, "each context opened its own copy");

    if (ns) {
        Lmid_t la = -1, lb = -1;
        void *ha = vlcs_ctx_load(a, "libc.so.6"), *hb = vlcs_ctx_load(b, "libc.so.6");
        CHECK(ha && hb, "namespace libcs");
        dlinfo(ha, RTLD_DI_LMID, &la);
        dlinfo(hb, RTLD_DI_LMID, &lb);
        Lmid_t l_local = -2, l_global = -2;
        dlinfo(local, RTLD_DI_LMID, &l_local);
        dlinfo(global, RTLD_DI_LMID, &l_global);
        CHECK_EQ(la, l_local, "the library opened in a is in a's namespace");
        CHECK_EQ(lb, l_global, "the library opened in b is in b's namespace");
    }

    /* The global scope: b opened the library RTLD_GLOBAL, a RTLD_LOCAL.
     * A plugin that uses its symbols without naming it loads in b only. */
    const char *(*err_a)(void) = SYM(oa, err_fn, "dlopener_error");
    const char *(*err_b)(void) = SYM(ob, err_fn, "dlopener_error");
    void *(*default_a)(const char *) = SYM(oa, default_fn, "dlopener_default");
    void *(*default_b)(const char *) = SYM(ob, default_fn, "dlopener_default");
    CHECK(open_a(PLUGIN_SINGLETON_LIB, 0) == NULL, "a: the plugin finds no singleton_bump");
    CHECK(strstr(err_a(), "singleton_bump") != NULL, "a: dlerror names the symbol: %s", err_a());
    void *plugin_b = open_b(PLUGIN_SINGLETON_LIB, 0);
    CHECK(plugin_b != NULL, "b: the plugin binds to the global library: %s", err_b());
    get_fn plugin_bump = SYM(plugin_b, get_fn, "plugin_bump");
    get_fn target_bump = SYM(global, get_fn, "singleton_bump");
    CHECK_EQ(plugin_bump(), 1, "b: the plugin's call reached b's library");
    CHECK_EQ(target_bump(), 2, "b: the same counter, one copy");
    CHECK(default_b("singleton_bump") == (void *)target_bump,
          "b: dlsym(RTLD_DEFAULT) finds the global library");
    CHECK(default_a("singleton_bump") == NULL, "a: its scope has none");
    CHECK(dlsym(RTLD_DEFAULT, "singleton_bump") == NULL, "the base's scope has none");

    /* RTLD_NOLOAD | RTLD_GLOBAL makes a's loaded copy global: the plugin
     * loads in a now, bound to a's copy, whose counter is a's own. */
    void *(*mode_a)(const char *, int) = SYM(oa, mode_fn, "dlopener_open_mode");
    CHECK(mode_a("libvlcs_runpath_target.so", RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL) == local,
          "a: promoted: %s", err_a());
    void *plugin_a = open_a(PLUGIN_SINGLETON_LIB, 0);
    CHECK(plugin_a != NULL && plugin_a != plugin_b, "a: its own plugin: %s", err_a());
    CHECK_EQ(SYM(plugin_a, get_fn, "plugin_bump")(), 1, "a: a's counter, not b's");
    CHECK_EQ(target_bump(), 3, "b's counter unchanged by a");
    CHECK(default_a("singleton_bump") == dlsym(local, "singleton_bump"),
          "a: dlsym(RTLD_DEFAULT) finds a's copy");
    CHECK(dlsym(RTLD_DEFAULT, "singleton_bump") == NULL, "the base's scope still has none");

    /* A global library stays while its context lives: closing the
     * caller's handle leaves the plugin bound to a mapped library. */
    dlclose(global);
    CHECK_EQ(plugin_bump(), 4, "b: the global library is still there");

    /* A missing library is an ordinary dlopen error, the context unharmed. */
    CHECK(open_a("libvlcs-no-such-lib.so", 1) == NULL, "missing library");
    CHECK(strstr(SYM(oa, err_fn, "dlopener_error")(), "libvlcs-no-such-lib.so") != NULL,
          "dlerror names it");
    CHECK(open_a("libvlcs_runpath_target.so", 1) != NULL, "the context still opens libraries");
    /* RTLD_NOLOAD of what the context has not loaded: NULL, nothing loaded */
    CHECK(mode_a(PROBE_LIB, RTLD_NOW | RTLD_NOLOAD) == NULL, "RTLD_NOLOAD: not loaded");
    CHECK(mode_a(PROBE_LIB, RTLD_NOW | RTLD_NOLOAD) == NULL, "RTLD_NOLOAD loaded nothing");
}

/* The plugin loaded lazily, then the library it calls opened RTLD_GLOBAL
 * (as libmkl_rt opens libmkl_core first, then the layers it calls): the
 * plugin's first call binds to the context's copy.  *base_calls: the
 * base's own copy's counter, which no context's call may move. */
static void lazy_then_global(int mode, const char *name, get_fn base_bump, int *base_calls)
{
    vlcs_ctx *c = vlcs_ctx_create(name);
    CHECK(c != NULL && vlcs_ctx_set_mode(c, mode) == 0, "%s: create", name);
    void *o = must_load(c, DLOPENER_LIB);
    mode_fn open_mode = SYM(o, mode_fn, "dlopener_open_mode");
    err_fn err = SYM(o, err_fn, "dlopener_error");
    void *plugin = open_mode(PLUGIN_SINGLETON_LIB, RTLD_LAZY);
    CHECK(plugin != NULL, "%s: the plugin loads lazily, its symbol not yet bound: %s", name, err());
    void *target = open_mode("libvlcs_runpath_target.so", RTLD_LAZY | RTLD_GLOBAL);
    CHECK(target != NULL, "%s: the library it calls: %s", name, err());
    int first = SYM(plugin, get_fn, "plugin_bump")();
    CHECK(first == 1, "%s: the plugin's call reached the context's copy: %d", name, first);
    int then = SYM(target, get_fn, "singleton_bump")();
    CHECK(then == 2, "%s: the same counter, one copy: %d", name, then);
    if (base_bump != NULL) {
        int in_base = base_bump();
        CHECK(in_base == ++*base_calls, "%s: the base's copy untouched: %d", name, in_base);
    }
    /* Closed by the host, as a plugin host closes its plugins: copy mode
     * unloads every copy (the one its earlier roots' lists named last); a
     * namespace keeps what its code opened itself, and strict mode every
     * context's code, saying so. */
    CHECK(dlclose(plugin) == 0 && dlclose(target) == 0, "%s: closed", name);
    int rc = vlcs_ctx_destroy(c);
    int unloads = mode == VLCS_MODE_COPIES && !vlcs_strict_active();
    CHECK(rc == (unloads ? 0 : 1), "%s: destroyed: %d (%s)", name, rc, vlcs_error());
}

int main(void)
{
    in_mode(VLCS_MODE_NAMESPACE);
    in_mode(VLCS_MODE_COPIES);
    /* first with nothing in the base's global scope, then with the base's
     * own copy there: a copy's lookups that miss its own libraries go on
     * to the base's global scope */
    int base_calls = 0;
    lazy_then_global(VLCS_MODE_NAMESPACE, "lazy-ns", NULL, &base_calls);
    lazy_then_global(VLCS_MODE_COPIES, "lazy-copies", NULL, &base_calls);
    void *base = dlopen(SINGLETON_LIB, RTLD_NOW | RTLD_GLOBAL);
    CHECK(base != NULL, "the base's own copy: %s", dlerror());
    get_fn base_bump = SYM(base, get_fn, "singleton_bump");
    CHECK_EQ(base_bump(), ++base_calls, "the base's copy counts");
    lazy_then_global(VLCS_MODE_NAMESPACE, "lazy-ns-2", base_bump, &base_calls);
    lazy_then_global(VLCS_MODE_COPIES, "lazy-copies-2", base_bump, &base_calls);
    PASS("dlopen");
    return 0;
}

/*
 * runtime.c - initialisation and the life of a context: creation, CPU set,
 * environment, loading, destruction.
 */
#include "common.h"
#include "context.h"
#include "copies.h"
#include "cpuset.h"
#include "elastic.h"
#include "env.h"
#include "error.h"
#include "families.h"
#include "fork.h"
#include "handles.h"
#include "interposer_path.h"
#include "namespace.h"
#include "node.h"
#include "places.h"
#include "registry.h"
#include "room.h"
#include "service.h"
#include "service_auto.h"
#include "shim_table.h"
#include "strict.h"
#include "thread.h"
#include "trace.h"
#include "unload.h"
#include "view.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_rc, init_code;
static char init_error[PATH_MAX + 512];

VLCS_API const char *vlcs_version(void) { return VLCS_VERSION_STRING; }

/* fork: the child gets a registry and a table of families no other thread
 * was changing. */
static void registry_prepare(void)
{
    elastic_lock();
    registry_lock();
    families_lock();
}
static void registry_parent(void)
{
    families_unlock();
    registry_unlock();
    elastic_unlock();
}
static void registry_child(void)
{
    thread_after_fork();
    node_after_fork();
    families_after_fork();
    registry_after_fork();
    room_after_fork();
    fd_path_after_fork();
    elastic_unlock(); /* the forking thread took it: its owner */
}

static void *noop_thread(void *arg) { return arg; }

static void do_init(void)
{
    int code = interposer_locate(init_error, sizeof init_error);
    if (code != 0) {
        init_rc = -1;
        init_code = code;
        return;
    }
    vmask allowed; /* CPUs the process may use, read once */
    if (mask_get_thread(getpid(), &allowed) != 0) {
        snprintf(init_error, sizeof init_error,
                 "Error initialising vlcs: sched_getaffinity failed: %s", strerror(errno));
        init_rc = -1;
        init_code = VLCS_E_SYSTEM;
        return;
    }
    registry_set_process_mask(&allowed);
    /* glibc skips locking in code paths it believes single-threaded; threads
     * that namespaces create are invisible to the base libc, so make it
     * multi-threaded for good before any exist. */
    pthread_t t;
    if (pthread_create(&t, NULL, noop_thread, NULL) == 0)
        pthread_join(t, NULL);
    fork_install();
    pthread_atfork(registry_prepare, registry_parent, registry_child);
}

static int init_core(void)
{
    pthread_once(&init_once, do_init);
    if (init_rc != 0)
        set_error(init_code, "%s", init_error);
    return init_rc;
}

VLCS_API int vlcs_init(void)
{
    if (init_core() != 0)
        return -1;
    static atomic_bool env_strict_done;
    if (!atomic_exchange(&env_strict_done, true)) {
        const char *s = getenv("VLCS_STRICT");
        if (s != NULL && strcmp(s, "1") == 0) {
            vlcs_opts o = {.size = sizeof o, .strict = 1};
            if (vlcs_init_opts(&o) != 0) {
                /* The symbol layer works on; say why strict mode does not. */
                fprintf(stderr, "vlcs: VLCS_STRICT=1 ignored: %s\n", vlcs_error());
            }
        }
        trace_from_env();
        s = getenv("VLCS_NODE");
        if (s != NULL && strcmp(s, "1") == 0) {
            vlcs_opts o = {.size = sizeof o, .node = 1};
            if (vlcs_init_opts(&o) != 0)
                fprintf(stderr, "vlcs: VLCS_NODE=1 ignored: %s\n", vlcs_error());
        }
    }
    return 0;
}

VLCS_API int vlcs_init_opts(const vlcs_opts *opts)
{
    if (init_core() != 0)
        return -1;
    if (opts == NULL || opts->size < sizeof(unsigned) + sizeof(int)) {
        set_error(VLCS_E_INVALID, "Error initialising vlcs: vlcs_opts is NULL or its size field is not set");
        return -1;
    }
    if (opts->strict) {
        char why[512];
        int code = strict_enable(why, sizeof why);
        if (code != VLCS_OK) {
            set_error(code, "Error enabling strict mode: %s; contexts keep working without it", why);
            return -1;
        }
    }
    /* `node` came after `strict`: a caller built against an older vlcs.h
     * passes a smaller size. */
    if (opts->size >= offsetof(vlcs_opts, node) + sizeof opts->node && opts->node) {
        char why[PATH_MAX + 256];
        int code = node_enable(elastic_node_changed, why, sizeof why);
        if (code != VLCS_OK) {
            set_error(code, "Error turning node-wide mode on: %s; elastic contexts keep lending "
                      "within this process", why);
            return -1;
        }
        elastic_node_joined();
    }
    return 0;
}

VLCS_API int vlcs_strict_active(void) { return strict_active() ? 1 : 0; }

VLCS_API int vlcs_service_add(const char *library)
{
    return vlcs_init() == 0 ? service_add_global(library) : -1;
}

VLCS_API int vlcs_service_add_program(const char *soname, const char *prefixes)
{
    return vlcs_init() == 0 ? service_add_program(soname, prefixes) : -1;
}

VLCS_API vlcs_ctx *vlcs_ctx_create(const char *name)
{
    if (vlcs_init() != 0)
        return NULL;
    if (name != NULL && strlen(name) >= sizeof((vlcs_ctx *)0)->name) {
        set_error(VLCS_E_INVALID, "Error creating context: name \"%.20s...\" is longer than %zu characters",
                  name, sizeof((vlcs_ctx *)0)->name - 1);
        return NULL;
    }
    struct cpuview *v = view_new(process_mask(), NULL);
    if (v == NULL) {
        set_error(VLCS_E_SYSTEM, "Error creating context: out of memory");
        return NULL;
    }
    vlcs_ctx *c = registry_take();
    if (c == NULL) {
        free(v);
        set_error(VLCS_E_SYSTEM, "Error creating context: out of memory");
        return NULL;
    }
    atomic_init(&c->view, v);
    c->views = v;
    c->home = *process_mask();
    c->gpu.first = -1;
    pthread_mutex_lock(&c->lock); /* a stale handle's error may read the name */
    if (name != NULL)
        snprintf(c->name, sizeof c->name, "%s", name);
    else
        snprintf(c->name, sizeof c->name, "ctx%d", c->id);
    c->name_gen = atomic_load(&c->gen);
    pthread_mutex_unlock(&c->lock);
    registry_add(c); /* alive from here on */
    return c->handle;
}

VLCS_API const char *vlcs_ctx_name(const vlcs_ctx *h)
{
    vlcs_ctx *c = ctx_get(h, "reading a context's name");
    if (c == NULL)
        return NULL;
    return c->name;
}

VLCS_API int vlcs_ctx_set_cpus(vlcs_ctx *h, const char *cpulist)
{
    vlcs_ctx *c = ctx_get(h, "setting CPUs");
    if (c == NULL)
        return -1;
    vmask m;
    char why[256];
    if (cpus_parse(cpulist, &m, why, sizeof why) != 0) {
        set_error(VLCS_E_INVALID, "Error setting CPUs of context '%s': %s", c->name, why);
        return -1;
    }
    int outside = mask_first_outside(&m, process_mask());
    if (outside >= 0) {
        char have[256];
        mask_format(process_mask(), have, sizeof have);
        if (strchr(cpulist, ':') != NULL) /* a place: say what it stands for */
            set_error(VLCS_E_INVALID,
                      "Error setting CPUs of context '%s': %s holds CPU %d, which is not available "
                      "to this process (it may use %s)",
                      c->name, cpulist, outside, have);
        else
            set_error(VLCS_E_INVALID,
                      "Error setting CPUs of context '%s': CPU %d is not available to this process "
                      "(it may use %s)",
                      c->name, outside, have);
        return -1;
    }
    /* A static context takes the set at once; an elastic one's is its
     * home, from which the lending plan moves it. */
    pthread_mutex_lock(&c->lock);
    if (!ctx_still(c, h)) {
        pthread_mutex_unlock(&c->lock);
        return ctx_gone(h, "setting CPUs");
    }
    if (!c->el.active) {
        c->home = m;
        int rc = ctx_switch_view(c, &m);
        pthread_mutex_unlock(&c->lock);
        if (rc != 0)
            set_error(VLCS_E_SYSTEM, "Error setting CPUs of context '%s': out of memory", c->name);
        return rc;
    }
    pthread_mutex_unlock(&c->lock);
    return elastic_set_home(c, &m);
}

VLCS_API int vlcs_ctx_get_cpus(const vlcs_ctx *h, char *buf, unsigned long size)
{
    vlcs_ctx *c = ctx_get(h, "reading CPUs");
    if (c == NULL)
        return -1;
    struct cpuview *v = ctx_view(c);
    return snprintf(buf, size, "%s", v->list);
}

static int check_env_name(const vlcs_ctx *c, const char *name, const char *doing)
{
    if (name == NULL || *name == '\0' || strchr(name, '=') != NULL) {
        set_error(VLCS_E_INVALID, "Error %s in context '%s': invalid variable name \"%s\" (it must be "
                  "non-empty and contain no '=')",
                  doing, c->name, name ? name : "(null)");
        return -1;
    }
    return 0;
}

/* The public setter and unsetter: the handle checked again under the lock. */
static int env_public(const vlcs_ctx *h, const char *name, const char *value, const char *doing)
{
    vlcs_ctx *c = ctx_get(h, doing);
    if (c == NULL || check_env_name(c, name, doing) != 0)
        return -1;
    pthread_mutex_lock(&c->lock);
    bool still = ctx_still(c, h);
    int rc = still ? env_change(c, name, value) : -1;
    pthread_mutex_unlock(&c->lock);
    return still ? rc : ctx_gone(h, doing);
}

VLCS_API int vlcs_ctx_setenv(vlcs_ctx *h, const char *name, const char *value)
{
    return env_public(h, name, value ? value : "", "setting an environment variable");
}

VLCS_API int vlcs_ctx_unsetenv(vlcs_ctx *h, const char *name)
{
    return env_public(h, name, NULL, "unsetting an environment variable");
}

VLCS_API const char *vlcs_ctx_getenv(vlcs_ctx *h, const char *name)
{
    vlcs_ctx *c = ctx_get(h, "reading an environment variable");
    if (c == NULL || check_env_name(c, name, "reading an environment variable") != 0)
        return NULL;
    pthread_mutex_lock(&c->lock);
    const char *v;
    bool still = ctx_still(c, h);
    if (!still) {
        v = NULL;
    } else {
        v = env_get(c, name);
    }
    pthread_mutex_unlock(&c->lock);
    if (!still)
        ctx_gone(h, "reading an environment variable");
    return v;
}

VLCS_API int vlcs_ctx_thread_count(const vlcs_ctx *h)
{
    vlcs_ctx *c = ctx_get(h, "counting threads");
    if (c == NULL)
        return -1;
    return __atomic_load_n(&c->created_live, __ATOMIC_ACQUIRE);
}

/* VLCS_MODE's mode, or -1 for a value that is none. */
static int env_mode(void)
{
    const char *v = getenv("VLCS_MODE");
    if (v == NULL || *v == '\0' || strcmp(v, "auto") == 0)
        return VLCS_MODE_AUTO;
    if (strcmp(v, "namespace") == 0)
        return VLCS_MODE_NAMESPACE;
    if (strcmp(v, "copies") == 0)
        return VLCS_MODE_COPIES;
    return -1;
}

/* The first load: a namespace, or copies (vlcs_mode).  With c->lock held. */
static int ctx_place(vlcs_ctx *c)
{
    int mode = c->mode_wanted ? c->mode_wanted : env_mode();
    if (mode < 0) {
        set_error(VLCS_E_INVALID, "Error loading into context '%s': VLCS_MODE=%s is none of "
                  "auto, namespace, copies", c->name, getenv("VLCS_MODE"));
        return -1;
    }
    /* What only a namespace of its own has: its own libc's streams, its
     * own global scope (a program run in copy mode has streams of its
     * own: exec_streams.c). */
    bool needs_ns = !c->loading_program &&
                    (c->ns.stdio_set[0] || c->ns.stdio_set[1] || c->ns.stdio_set[2]);
    if (mode == VLCS_MODE_COPIES && needs_ns) {
        set_error(VLCS_E_INVALID, "Error loading into context '%s': vlcs_ctx_set_stdio needs a "
                  "namespace of its own, and the context is in copy mode", c->name);
        return -1;
    }
    if (mode == VLCS_MODE_COPIES)
        return copies_create(c);
    if (ns_create(c) == 0) {
        c->backend = &ns_backend;
        return 0;
    }
    /* no namespace left, or no static TLS left for another libc: copies
     * need neither (only their libraries' own TLS) */
    int limit = vlcs_errlimit();
    if (mode == VLCS_MODE_AUTO && !needs_ns &&
        (limit == VLCS_LIMIT_NAMESPACES || limit == VLCS_LIMIT_STATIC_TLS))
        return copies_create(c);
    return -1;
}

VLCS_API int vlcs_ctx_set_mode(vlcs_ctx *h, int mode)
{
    vlcs_ctx *c = ctx_get(h, "setting its mode");
    if (c == NULL)
        return -1;
    if (mode != VLCS_MODE_AUTO && mode != VLCS_MODE_NAMESPACE && mode != VLCS_MODE_COPIES) {
        set_error(VLCS_E_INVALID, "Error setting the mode of context '%s': %d is not a vlcs_mode",
                  c->name, mode);
        return -1;
    }
    pthread_mutex_lock(&c->lock);
    if (!ctx_still(c, h)) {
        pthread_mutex_unlock(&c->lock);
        return ctx_gone(h, "setting its mode");
    }
    if (c->backend != NULL) {
        pthread_mutex_unlock(&c->lock);
        set_error(VLCS_E_INVALID, "Error setting the mode of context '%s': it has loaded "
                  "libraries already; set it before its first load", c->name);
        return -1;
    }
    c->mode_wanted = mode;
    pthread_mutex_unlock(&c->lock);
    return 0;
}

VLCS_API int vlcs_ctx_mode(const vlcs_ctx *h)
{
    vlcs_ctx *c = ctx_get(h, "asking its mode");
    if (c == NULL)
        return -1;
    pthread_mutex_lock(&c->lock);
    int mode = !ctx_still(c, h)      ? -1
               : c->backend != NULL ? c->backend->mode
                                    : VLCS_MODE_AUTO;
    pthread_mutex_unlock(&c->lock);
    return mode < 0 ? ctx_gone(h, "asking its mode") : mode;
}

VLCS_API void *vlcs_ctx_load(vlcs_ctx *ctx, const char *path)
{
    vlcs_ctx *c = ctx_get(ctx, "loading a library");
    if (c == NULL || ctx_broken(c, "loading a library"))
        return NULL;
    if (path == NULL || *path == '\0') {
        set_error(VLCS_E_INVALID, "Error loading into context '%s': the library name is empty",
                  c->name);
        return NULL;
    }
    services_auto_add(); /* before any lock: it takes the services' write lock */
    services_read_lock();
    pthread_mutex_lock(&c->lock);
    void *h = NULL;
    if (!ctx_still(c, ctx)) { /* destroyed by another thread meanwhile */
        pthread_mutex_unlock(&c->lock);
        services_unlock();
        ctx_gone(ctx, "loading a library");
        return NULL;
    }
    bool fresh = c->backend == NULL;
    if (fresh && ctx_place(c) != 0)
        goto out;
    /* A shimmed library: load the real one (the shim, found first on the
     * search path, must never enter a namespace) and point the shims at it. */
    const char *real = shim_real_path(path);
    if ((h = c->backend->load(c, real ? real : path, fresh)) == NULL)
        goto out;
    if (fresh) /* in the backend's environment for good */
        env_pending_clear(c);
    strict_note_load();
    if (real != NULL && shim_note_load(c, real, h) != 0)
        h = NULL; /* the copy stays loaded; the error says why it cannot be used */
out:
    pthread_mutex_unlock(&c->lock);
    services_unlock();
    if (h != NULL)
        elastic_loaded(c, h);
    return h;
}

VLCS_API void *vlcs_ctx_sym(void *lib, const char *symbol)
{
    if (lib == NULL) {
        set_error(VLCS_E_INVALID, "Error looking up symbol '%s': the library handle is NULL",
                  symbol ? symbol : "(null)");
        return NULL;
    }
    if (symbol == NULL || *symbol == '\0') {
        set_error(VLCS_E_INVALID, "Error looking up a symbol: the symbol name is empty");
        return NULL;
    }
    dlerror();
    void *p = dlsym(lib, symbol);
    if (p == NULL) {
        const char *err = dlerror();
        bool missing = err != NULL && strstr(err, "undefined symbol") != NULL;
        struct link_map *lm = NULL;
        const char *libname = "the library";
        if (dlinfo(lib, RTLD_DI_LINKMAP, &lm) == 0 && lm != NULL && lm->l_name[0])
            libname = base_name(lm->l_name);
        set_error(VLCS_E_NOT_FOUND, "Error looking up symbol '%s' in %s: %s", symbol, libname,
                  missing ? "no such symbol" : "its value is NULL");
    }
    return p;
}

/* Handles for the Python package (vlcs.h, VLCS_INTERNAL_API). */
VLCS_API void *vlcs_ctx_scope(vlcs_ctx *h)
{
    vlcs_ctx *c = ctx_get(h, "finding its scope");
    if (c == NULL)
        return NULL;
    pthread_mutex_lock(&c->lock);
    void *scope = c->backend != NULL ? c->backend->scope(c) : NULL;
    pthread_mutex_unlock(&c->lock);
    if (scope == NULL)
        set_error(VLCS_E_INVALID, "Error finding the scope of context '%s': it has loaded no "
                  "library yet", c->name);
    return scope;
}

VLCS_API void *vlcs_ctx_loaded(vlcs_ctx *h, const char *path)
{
    vlcs_ctx *c = ctx_get(h, "looking for a loaded library");
    if (c == NULL)
        return NULL;
    pthread_mutex_lock(&c->lock);
    void *found = c->backend != NULL ? c->backend->loaded(c, path) : NULL;
    if (found != NULL && ns_note_handle(c, found) != 0) {
        dlclose(found);
        found = NULL;
    }
    pthread_mutex_unlock(&c->lock);
    if (found == NULL)
        set_error(VLCS_E_NOT_FOUND, "Error looking for %s in context '%s': not loaded there",
                  path, c->name);
    return found;
}

/* What a destroyed context without a namespace still holds; its memory
 * goes to the free list, zeroed but for its lock, id and name. */
static void ctx_release(vlcs_ctx *c)
{
    for (struct cpuview *v = c->views, *older; v; v = older) {
        older = v->older;
        view_free_forged(v);
        free(v);
    }
    free(c->members);
    free(c->handles);
    free(c->ended);
    free(c->keep);
    free(c->global_lib);
    registry_release(c);
}

VLCS_API int vlcs_ctx_keep_loaded(vlcs_ctx *h, const char *reason)
{
    vlcs_ctx *c = ctx_get(h, "keeping a namespace loaded");
    if (c == NULL)
        return -1;
    char *copy = NULL;
    if (reason != NULL && (copy = strdup(*reason ? reason : "vlcs_ctx_keep_loaded")) == NULL) {
        set_error(VLCS_E_SYSTEM, "Error keeping the namespace of context '%s' loaded: out of memory",
                  c->name);
        return -1;
    }
    pthread_mutex_lock(&c->lock);
    if (!ctx_still(c, h)) { /* destroyed by another thread meanwhile */
        pthread_mutex_unlock(&c->lock);
        free(copy);
        return ctx_gone(h, "keeping a namespace loaded");
    }
    if (c->fault != NULL) { /* a broken context stays loaded whatever is asked */
        pthread_mutex_unlock(&c->lock);
        free(copy);
        return 0;
    }
    char *old = c->keep;
    c->keep = copy;
    pthread_mutex_unlock(&c->lock);
    free(old);
    return 0;
}

VLCS_API int vlcs_ctx_drop_library_opens(vlcs_ctx *h)
{
    vlcs_ctx *c = ctx_get(h, "dropping its libraries' own references");
    if (c == NULL)
        return -1;
    pthread_mutex_lock(&c->lock);
    if (!ctx_still(c, h)) {
        pthread_mutex_unlock(&c->lock);
        return ctx_gone(h, "dropping its libraries' own references");
    }
    c->drop_opens = true;
    pthread_mutex_unlock(&c->lock);
    return 0;
}

VLCS_API int vlcs_ctx_destroy(vlcs_ctx *h)
{
    vlcs_ctx *c = ctx_get(h, "destroying a context");
    if (c == NULL)
        return -1;
    pthread_mutex_lock(&c->lock);
    if (!ctx_still(c, h)) { /* destroyed by another thread meanwhile */
        pthread_mutex_unlock(&c->lock);
        return ctx_gone(h, "destroying a context");
    }
    if (c->entered > 0) {
        int n = c->entered;
        pthread_mutex_unlock(&c->lock);
        set_error(VLCS_E_BUSY, "Error destroying context '%s': %d thread(s) are inside it; they must "
                  "vlcs_leave() first",
                  c->name, n);
        return -1;
    }
    const struct ctx_backend *b = c->backend;
    if (b != NULL && b->closing != NULL)
        b->closing(c);
    env_pending_clear(c);
    c->magic = CTX_DEAD; /* from here on no one enters, loads or asks to keep */
    bool keep = c->keep != NULL, elastic = c->el.active;
    char why[1024];
    if (keep)
        snprintf(why, sizeof why, "%s", c->keep);
    pthread_mutex_unlock(&c->lock);
    /* Its CPUs go back to their owners before its libraries go: a plan
     * running now may still be resizing its pools. */
    if (elastic)
        elastic_forget(c);

    /* Unloading runs the libraries' destructors, which may join their
     * threads: those take c->lock on their way out. */
    if (b != NULL && (keep || b->unload(c, why, sizeof why) != 0)) {
        /* Its code may still run and call back into c: c stays, dead. */
        set_error(VLCS_E_BUSY, "Context '%s' is destroyed, but %s loaded: %s", c->name, b->kept,
                  why);
        return 1;
    }
    if (__atomic_load_n(&c->created_live, __ATOMIC_ACQUIRE) > 0) {
        /* Threads it adopted (vlcs_thread_adopt) still name it as theirs
         * until they end: its memory must not become another context. */
        set_error(VLCS_E_BUSY, "Context '%s' is destroyed, but %d thread(s) it adopted still "
                  "run; its memory stays with them", c->name,
                  __atomic_load_n(&c->created_live, __ATOMIC_ACQUIRE));
        return 1;
    }
    ctx_release(c);
    return 0;
}

/*
 * namespace.c - creating a context's linker namespace.
 *
 * Order matters here.  The interposer must be the first object of the
 * namespace, so that its definitions form the namespace's global scope for
 * every library loaded later.  The namespace's libc is then given its own
 * environment array (the user's changes applied), the base's stdio streams,
 * and is made to believe it is multi-threaded: all before any library
 * constructor of the user's runs.
 */
#include "common.h"
#include "namespace.h"
#include "context.h"
#include "copy_origins.h"
#include "copies.h"
#include "dl_why.h"
#include "elastic.h"
#include "elf_search.h"
#include "error.h"
#include "exec_instance.h"
#include "exec_signals.h"
#include "exec_streams.h"
#include "fork.h"
#include "hooks.h"
#include "interposer_path.h"
#include "keys.h"
#include "ns_global.h"
#include "ns_root.h"
#include "object_syms.h"
#include "own_names.h"
#include "registry.h"
#include "room.h"
#include "service.h"
#include "thread.h"
#include "view.h"

#include <dlfcn.h>
#include <gnu/lib-names.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

static void *ns_noop(void *arg) { return arg; }

/* A private copy of the process environment for the namespace's libc, with
 * the context's recorded changes applied.  The namespace's libc starts out
 * pointing at the base's array, and its setenv would overwrite entries of
 * that array in place; what its setenv allocates is its own.  *own gets
 * what vlcs allocated for it, NULL-terminated, to be freed with the
 * namespace: one block holding the process's strings, then each entry the
 * changes made (one a later change replaced included). */
static char **environ_copy(const struct envop *ops, char ***own)
{
    size_t n = 0, extra = 0, bytes = 1, nown = 0;
    for (; environ && environ[n]; n++)
        bytes += strlen(environ[n]) + 1;
    for (const struct envop *op = ops; op; op = op->next)
        extra++;
    char **copy = calloc(n + extra + 1, sizeof *copy);
    char **mine = calloc(extra + 2, sizeof *mine);
    char *block = malloc(bytes);
    if (copy == NULL || mine == NULL || block == NULL) {
        free(block);
        goto oom;
    }
    mine[nown++] = block;
    size_t k = 0;
    for (; k < n; k++) {
        size_t len = strlen(environ[k]) + 1;
        copy[k] = memcpy(block, environ[k], len);
        block += len;
    }
    for (const struct envop *op = ops; op; op = op->next) {
        size_t i = 0;
        while (i < k && !env_entry_is(copy[i], op->name))
            i++;
        if (i < k) { /* drop the old entry, keeping the order of the rest */
            memmove(copy + i, copy + i + 1, (k - i) * sizeof *copy);
            k--;
        }
        if (op->value == NULL)
            continue;
        size_t len = strlen(op->name) + strlen(op->value) + 2;
        if ((copy[k] = mine[nown] = malloc(len)) == NULL)
            goto oom;
        nown++;
        snprintf(copy[k++], len, "%s=%s", op->name, op->value);
    }
    copy[k] = NULL;
    *own = mine;
    return copy;
oom:
    for (size_t i = 0; mine && i < nown; i++)
        free(mine[i]);
    free(mine);
    free(copy);
    return NULL;
}

static void *libc_sym(vlcs_ctx *c, const char *name);

void ns_api_fill(vlcs_ctx *c, struct vlcs_ip_api *a)
{
    memset(a, 0, sizeof *a);
    a->abi_version = VLCS_IP_ABI_VERSION;
    a->ctx = c;
    a->malloc = malloc;
    a->free = free;
    a->calloc = calloc;
    a->realloc = realloc;
    a->posix_memalign = posix_memalign;
    a->aligned_alloc = aligned_alloc;
    a->memalign = memalign;
    a->valloc = valloc;
    a->pvalloc = pvalloc;
    a->malloc_usable_size = malloc_usable_size;
    a->filter_mask = view_filter_mask;
    a->clamp_mask = view_clamp_mask;
    a->filter_self = view_filter_self;
    a->clamp_self = view_clamp_self;
    a->ncpus = view_ncpus;
    a->loadavg = elastic_loadavg;
    a->open_forged = view_open_forged;
    a->forged_prefixes = view_forged_prefixes();
    a->key_create = ns_key_create;
    a->key_delete = ns_key_delete;
    a->getspecific = key_get;
    a->setspecific = (int (*)(pthread_key_t, void *))key_set;
    a->pthread_create = pthread_create;
    a->thread_created = thread_created;
    a->pthread_exit = pthread_exit;
    a->pthread_cancel = pthread_cancel;
    a->pthread_join = exec_pthread_join;
    a->pthread_detach = pthread_detach;
    a->thread_begin = thread_begin;
    a->exit = exec_exit;
    a->quick_exit = exec_quick_exit;
    a->exit_now = exec_exit_now;
    a->sig_end_pending = exec_signals_end_pending;
    a->abort = exec_abort;
    a->exec_instead = exec_instead;
    a->register_atfork = fork_register;
    a->fork = exec_fork;
    a->wait4 = exec_wait4_api;
    a->child_started = exec_child_started;
    a->sig_action = exec_sigaction;
    a->sig_kill = exec_kill;
    a->sig_raise = exec_raise;
    a->sig_setitimer = exec_setitimer;
    a->sig_timer_thread = exec_timer_thread;
    a->sig_timer_made = exec_timer_made;
    a->libc_sym = libc_sym;
    a->own_name = own_name;
}

/* glibc maps a new namespace's objects (or copy mode's copies) where
 * unloaded ones were, and orders the two under ld.so's own lock, which
 * ThreadSanitizer cannot see: this release/acquire pair states that order,
 * so that vlcs's reads and writes of new objects (a libc's environ and
 * stdio pointers, the symbol tables object_syms.c reads, a copy's pages
 * mapped again) are not reported as racing with those of the old ones at
 * the same addresses.  Every unload hands back, every load takes over. */
static atomic_uint ns_handover;
void ns_handed_back(void) { atomic_fetch_add_explicit(&ns_handover, 1, memory_order_release); }
void ns_handed_over(void) { (void)atomic_load_explicit(&ns_handover, memory_order_acquire); }

VLCS_API int vlcs_ctx_set_global_library(vlcs_ctx *ctx, const char *path)
{
    vlcs_ctx *c = ctx_get(ctx, "setting its global library");
    if (c == NULL)
        return -1;
    if (path == NULL || *path == '\0') {
        set_error(VLCS_E_INVALID, "Error setting the global library of context '%s': the path is empty",
                  c->name);
        return -1;
    }
    char *copy = strdup(path);
    if (copy == NULL) {
        set_error(VLCS_E_SYSTEM, "Error setting the global library of context '%s': out of memory",
                  c->name);
        return -1;
    }
    pthread_mutex_lock(&c->lock);
    if (!ctx_still(c, ctx)) {
        pthread_mutex_unlock(&c->lock);
        free(copy);
        return ctx_gone(ctx, "setting its global library");
    }
    if (c->backend != NULL) {
        pthread_mutex_unlock(&c->lock);
        free(copy);
        set_error(VLCS_E_INVALID,
                  "Error setting the global library of context '%s': it has loaded libraries "
                  "already; set it before its first load",
                  c->name);
        return -1;
    }
    free(c->global_lib);
    c->global_lib = copy;
    pthread_mutex_unlock(&c->lock);
    return 0;
}

/* libm's path when the base resolves libm's names through its global
 * scope (a Python's does, through the executable): libraries and
 * extension modules that use libm without naming it (pandas' tslibs,
 * mypyc helpers) then work, and must work in a context too.  Asked at
 * every namespace: a dlopen(RTLD_GLOBAL) may bring libm later. */
static const char *base_libm(char *out, size_t size)
{
    Dl_info info;
    void *f = dlsym(RTLD_DEFAULT, "nextafter");
    if (f == NULL || dladdr(f, &info) == 0 || info.dli_fname == NULL ||
        info.dli_fname[0] != '/' || strncmp(base_name(info.dli_fname), "libm.so", 7) != 0 ||
        (size_t)snprintf(out, size, "%s", info.dli_fname) >= size)
        return NULL;
    return out;
}

/* The base's libc, by the path it loaded it from (a NOLOAD open by soname
 * asks the file system nothing): found once. */
static char base_libc[PATH_MAX];
static struct link_map *base_libc_map;
static ElfW(Phdr) base_libc_tls; /* its PT_TLS (p_memsz 0: none found) */
static pthread_once_t base_libc_once = PTHREAD_ONCE_INIT;

static int find_tls(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    if (info->dlpi_addr != base_libc_map->l_addr)
        return 0;
    for (size_t i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_TLS)
            *(ElfW(Phdr) *)data = info->dlpi_phdr[i];
    return 1;
}

static void find_base_libc(void)
{
    void *h = dlopen(LIBC_SO, RTLD_NOLOAD | RTLD_LAZY);
    struct link_map *lm = NULL;
    if (h != NULL && dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm != NULL) {
        base_libc_map = lm; /* the base's libc is never unloaded */
        if (lm->l_name[0] == '/')
            snprintf(base_libc, sizeof base_libc, "%s", lm->l_name);
        dl_iterate_phdr(find_tls, &base_libc_tls);
    }
    if (h != NULL)
        dlclose(h);
}

/* The interposer's "next": its namespace's libc, or in copy mode the
 * process's. */
static void *libc_sym(vlcs_ctx *c, const char *name)
{
    if (c->ns.libc_map != NULL)
        return object_sym(c->ns.lmid, c->ns.libc_map, name);
    pthread_once(&base_libc_once, find_base_libc);
    return object_sym(LM_ID_BASE, base_libc_map, name);
}

/* The namespace's first objects are named in its root by descriptors of
 * their files, held for the process's life (copy_origins.c): ld.so opens
 * /proc/PID/fd/N, never searching (libc.so.6 in ld.so.cache) nor looking a
 * path up.  Once loaded each is named by its path again (what debuggers
 * and dladdr show, and what a later open by that path matches); the names
 * ld.so gave are kept in c->ns.given, freed with the namespace. */
struct first_file {
    const char *real;
    char path[FD_PATH_SIZE];
};

static bool hold_file(struct first_file *f, const char *real)
{
    int fd = real != NULL && real[0] == '/' ? origin_keep(real) : -1;
    if (fd < 0)
        return false;
    f->real = real;
    fd_path(f->path, sizeof f->path, fd);
    return true;
}

static void name_by_path(vlcs_ctx *c, void *h, const struct first_file *files, size_t n)
{
    struct link_map *lm = NULL;
    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || lm == NULL)
        return;
    while (lm->l_prev)
        lm = lm->l_prev;
    for (; lm != NULL; lm = lm->l_next)
        for (size_t i = 0; i < n; i++) {
            size_t k = c->ns.ngiven;
            if (strcmp(lm->l_name, files[i].path) != 0 || k == sizeof c->ns.given / sizeof *c->ns.given)
                continue;
            char *name = strdup(files[i].real);
            if (name == NULL)
                continue;
            c->ns.given[c->ns.ngiven++] = lm->l_name;
            __atomic_store_n(&lm->l_name, name, __ATOMIC_RELEASE); /* glibc frees it at dlclose */
        }
}

/* The namespace's libc and interposer: by the paths name_by_path gave them,
 * else (a file that could not be held) asked of ld.so by name. */
static void first_objects(vlcs_ctx *c, void *h, struct link_map **libc, struct link_map **ip)
{
    struct link_map *lm = NULL;
    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm != NULL) {
        while (lm->l_prev)
            lm = lm->l_prev;
        for (; lm != NULL; lm = lm->l_next)
            if (base_libc[0] != '\0' && strcmp(lm->l_name, base_libc) == 0)
                *libc = lm;
            else if (strcmp(lm->l_name, interposer_path()) == 0)
                *ip = lm;
    }
    const char *names[2] = {"libc.so.6", interposer_path()};
    struct link_map **found[2] = {libc, ip};
    for (int i = 0; i < 2; i++) {
        if (*found[i] != NULL)
            continue;
        /* the root h holds it: this reference goes at once, or it would
         * keep the namespace from ever being taken back */
        void *o = dlmopen(c->ns.lmid, names[i], RTLD_NOLOAD | RTLD_LAZY);
        if (o != NULL && dlinfo(o, RTLD_DI_LINKMAP, &lm) == 0)
            *found[i] = lm;
        if (o != NULL)
            dlclose(o);
    }
}

/* Whether addr is in lm itself (a lookup in an object without symbols
 * goes on to its dependencies). */
static bool defines(struct link_map *lm, void *addr)
{
    Dl_info info;
    struct link_map *owner = NULL;
    return addr != NULL && dladdr1(addr, &info, (void **)&owner, RTLD_DL_LINKMAP) != 0 &&
           owner == lm;
}

int ns_create(vlcs_ctx *c)
{
    /* The first object is the interposer's copy whose DT_NEEDED entries
     * are libm where the base has it in its scope, the context's own
     * global library, the services' forwarders, then libc: together they
     * are the namespace's global scope (ns_root.c). */
    char why[512], rootpath[FD_PATH_SIZE], libm[PATH_MAX], soname[256];
    struct first_file files[4]; /* interposer, libm, libc; the interposer's copy */
    size_t nfiles = 0;
    const char *first[3], *last[1], *except = NULL;
    size_t nfirst = 0, nlast = 0;
    pthread_once(&base_libc_once, find_base_libc);
    if (hold_file(&files[nfiles], interposer_path()))
        first[nfirst++] = files[nfiles++].path;
    else
        first[nfirst++] = interposer_path();
    if (base_libm(libm, sizeof libm) != NULL)
        first[nfirst++] = hold_file(&files[nfiles], libm) ? files[nfiles++].path : libm;
    if (c->global_lib != NULL) {
        /* its own global library, and not the service it stands in for
         * (its own libpython for the base's) */
        first[nfirst++] = c->global_lib;
        elf_soname_of(c->global_lib, soname, sizeof soname);
        except = soname;
    }
    /* libc last; ld.so itself, which every namespace shares, comes as
     * libc's DT_NEEDED (listed, by any name, it breaks ld.so's own
     * bookkeeping of the namespace) */
    if (hold_file(&files[nfiles], base_libc))
        last[nlast++] = files[nfiles++].path;
    int root = -1;
    int code = services_root(first, nfirst, last, nlast, except, &root, why, sizeof why);
    if (code != VLCS_OK) {
        set_error(code, "Error creating the namespace of context '%s': %s", c->name, why);
        return -1;
    }
    if (root >= 0)
        fd_path(rootpath, sizeof rootpath, root);
    /* Bound at once (RTLD_NOW): a lazily bound call of libc's that finds
     * the interposer's function (malloc) takes ld.so's lock to note the
     * new dependency, and a child of fork, or a signal handler, whose
     * parent thread held that lock, would wait for ever. */
    void *h = dlmopen(LM_ID_NEWLM, root >= 0 ? rootpath : interposer_path(),
                      RTLD_NOW | RTLD_LOCAL);
    /* The root is named by its descriptor's number in the namespace's link
     * map, and ld.so takes a later load of that name for it: the number
     * stays taken while the namespace lives, so that no forwarder made
     * later (loaded by /proc/PID/fd/N too) gets it. */
    c->ns.root_fd = root;
    if (h == NULL) {
        if (root >= 0)
            close(root);
        c->ns.root_fd = -1;
        load_error(c, "the vlcs interposer (creating its namespace)", dlerror());
        return -1;
    }
    ns_handed_over();
    struct link_map *libc = NULL, *ip = NULL, *first_lm = NULL;
    bool in_ns = dlinfo(h, RTLD_DI_LMID, &c->ns.lmid) == 0;
    /* The interposer's copy is named by the interposer's file too (the
     * generated object, which has no symbols, keeps its descriptor's). */
    if (in_ns && root >= 0 && dlinfo(h, RTLD_DI_LINKMAP, &first_lm) == 0 && first_lm != NULL &&
        defines(first_lm, object_sym(c->ns.lmid, first_lm, "vlcs_ip_bind"))) {
        files[nfiles].real = interposer_path();
        memcpy(files[nfiles++].path, rootpath, sizeof rootpath);
        ns_root_share(first_lm, origin_keep(interposer_path()));
    }
    name_by_path(c, h, files, nfiles);
    /* libc's own symbols, and the interposer's, looked up in those objects
     * (a service might export a name libc has), each name once for every
     * namespace (object_syms.c). */
    if (in_ns)
        first_objects(c, h, &libc, &ip);
    vlcs_ip_bind_fn bind = (vlcs_ip_bind_fn)object_sym(c->ns.lmid, ip, "vlcs_ip_bind");
    char ***ns_environ = object_sym(c->ns.lmid, libc, "__environ");
    FILE **ns_stdin = object_sym(c->ns.lmid, libc, "stdin");
    FILE **ns_stdout = object_sym(c->ns.lmid, libc, "stdout");
    FILE **ns_stderr = object_sym(c->ns.lmid, libc, "stderr");
    /* The namespace's libc itself, past the interposer: its pthread_create
     * must not register a thread of the context while we hold its lock. */
    int (*ns_pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *) =
        (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))object_sym(
            c->ns.lmid, libc, "pthread_create");
    int (*ns_pthread_join)(pthread_t, void **) =
        (int (*)(pthread_t, void **))object_sym(c->ns.lmid, libc, "pthread_join");
    c->ns.libc_setenv = (int (*)(const char *, const char *, int))object_sym(c->ns.lmid, libc, "setenv");
    c->ns.libc_unsetenv = (int (*)(const char *))object_sym(c->ns.lmid, libc, "unsetenv");
    c->ns.libc_getenv = (char *(*)(const char *))object_sym(c->ns.lmid, libc, "getenv");
    c->ns.libc_fflush = (int (*)(void *))object_sym(c->ns.lmid, libc, "fflush");
    void (*ctype_init)(void) = (void (*)(void))object_sym(c->ns.lmid, libc, "__ctype_init");
    void (*enable_locks)(void) = (void (*)(void))object_sym(c->ns.lmid, libc, "_IO_enable_locks");
    if (libc == NULL) {
        set_error(VLCS_E_NOT_FOUND,
                  "Error creating the namespace of context '%s': its libc cannot be found",
                  c->name);
        goto fail;
    }
    if (!bind || !ns_environ || !ns_stdin || !ns_stdout || !ns_stderr || !ns_pthread_create ||
        !ns_pthread_join || !c->ns.libc_setenv || !c->ns.libc_unsetenv || !c->ns.libc_getenv || !c->ns.libc_fflush) {
        set_error(VLCS_E_NOT_FOUND,
                  "Error creating the namespace of context '%s': %s lacks vlcs_ip_bind or its "
                  "libc lacks a function vlcs needs",
                  c->name, interposer_path());
        goto fail;
    }
    c->ns.libc_map = libc;
    /* a namespace's libc is the base's file (by its held descriptor) */
    if (base_libc[0] != '\0' && strcmp(libc->l_name, base_libc) == 0 &&
        object_tls_offset(libc, "errno", &c->ns.tls_errno) &&
        base_libc_tls.p_filesz <= base_libc_tls.p_memsz) {
        c->ns.errno_location = (int *(*)(void))object_sym(c->ns.lmid, libc, "__errno_location");
        c->ns.tls_image = (const char *)libc->l_addr + base_libc_tls.p_vaddr;
        c->ns.tls_image_size = base_libc_tls.p_filesz;
    }
    ns_api_fill(c, &c->api);
    c->api.dlopen_global = ns_global_dlopen;
    c->api.dl_error = dl_why_take;
    if (bind(&c->api) != 0) {
        /* The right interposer is not where it was looked for. */
        set_error(VLCS_E_NOT_FOUND,
                  "Error creating the namespace of context '%s': %s was built for another "
                  "version of vlcs",
                  c->name, interposer_path());
        goto fail;
    }
    /* vlcs_ctx_set_stdio's: streams of the base's libc (a namespace's libc
     * accepts another copy's FILE), on descriptors of their own */
    int failed = -1;
    if (context_streams_open(c, &failed) != 0) {
        set_error(VLCS_E_SYSTEM,
                  "Error creating the namespace of context '%s': descriptor %d given to "
                  "vlcs_ctx_set_stdio cannot be used: %s",
                  c->name, failed, strerror(errno));
        goto fail;
    }
    char **own = NULL, **env = environ_copy(c->pending_env, &own);
    if (env == NULL) {
        set_error(VLCS_E_SYSTEM, "Error creating the namespace of context '%s': out of memory",
                  c->name);
        goto fail;
    }
    *ns_environ = env;
    c->ns.environ_copy = env;
    c->ns.environ_own = own;
    /* Output of libraries in the context goes through the base's streams:
     * ordered with the program's own output, and flushed by its exit(). */
    *ns_stdin = stdin;
    *ns_stdout = stdout;
    *ns_stderr = stderr;
    FILE **slots[3] = {ns_stdin, ns_stdout, ns_stderr};
    for (int i = 0; i < 3; i++) {
        c->ns.stdio_slot[i] = (void **)slots[i];
        if (c->ns.stdio_file[i] != NULL)
            *slots[i] = c->ns.stdio_file[i];
    }

    /* A libc in a namespace of its own (glibc 2.34 and later) knows from
     * the start that it is not the process's only one, and locks; but its
     * streams skip their locks until it has created a thread, and threads
     * of the base call into it.  Its first pthread_create does no more for
     * such a libc than _IO_enable_locks, which glibc exports for its own
     * libraries; creating and joining a thread costs a wake-up of another
     * CPU, often more than the rest of the namespace. */
    if (enable_locks != NULL) {
        enable_locks();
    } else {
        pthread_t t;
        if (ns_pthread_create(&t, NULL, ns_noop, NULL) == 0)
            ns_pthread_join(t, NULL);
    }

    c->ns.environ_slot = ns_environ;
    c->ns.ip_handle = h;
    /* What closing h alone unloads: anything else found in the namespace
     * when it is destroyed is held by someone else (unload.c). */
    struct link_map *lm = NULL;
    c->ns.nstart = 0;
    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm != NULL) {
        while (lm->l_prev)
            lm = lm->l_prev;
        for (; lm && c->ns.nstart < sizeof c->ns.start / sizeof *c->ns.start; lm = lm->l_next)
            c->ns.start[c->ns.nstart++] = lm;
    }
    c->has_ns = true;
    room_namespaces(+1);
    thread_ns_created(c);
    /* Optional: a libc without it (not glibc's) has nothing to set up. */
    __atomic_store_n(&c->ns.thread_init, ctype_init, __ATOMIC_RELEASE);
    return 0;
fail:
    /* Nothing of the user's is loaded yet: the namespace can go. */
    c->ns.libc_map = NULL;
    c->ns.errno_location = NULL;
    c->ns.tls_image_size = 0;
    ns_handed_back();
    dlclose(h);
    if (c->ns.root_fd >= 0)
        close(c->ns.root_fd);
    c->ns.root_fd = -1;
    ns_forget_given(c);
    return -1;
}

void ns_forget_given(vlcs_ctx *c)
{
    for (size_t i = 0; i < c->ns.ngiven; i++)
        free(c->ns.given[i]);
    c->ns.ngiven = 0;
}

void ns_teardown(vlcs_ctx *c)
{
    ns_handed_back(); /* before: the next dlmopen may map here as soon as it returns */
    room_namespaces(-1);
    __atomic_store_n(&c->ns.thread_init, NULL, __ATOMIC_RELEASE); /* before its code goes */
    dlclose(c->ns.ip_handle);
    if (c->ns.root_fd >= 0)
        close(c->ns.root_fd);
    c->ns.root_fd = -1;
    c->has_ns = false;
    c->backend = NULL;
    thread_ns_gone(c);
    hooks_ns_gone(c);
    /* The namespace's libc is gone, and with it every reader of the copy.
     * Its setenv may have moved to an array of its own, or replaced entries
     * of ours (putenv even with the caller's memory): only the strings the
     * copy started with are ours to free. */
    if (c->ns.environ_own != NULL) {
        for (char **e = c->ns.environ_own; *e; e++)
            free(*e);
        free(c->ns.environ_own);
    }
    free(c->ns.environ_copy);
    c->ns.environ_copy = NULL;
    c->ns.environ_own = NULL;
    c->ns.environ_slot = NULL;
    c->ns.libc_map = NULL;
    c->ns.errno_location = NULL;
    c->ns.tls_image = NULL;
    c->ns.tls_image_size = 0;
    c->ns.ip_handle = NULL;
    ns_global_forget(c);
    keys_forget_retired(c);
    fork_forget(c);
    ns_forget_given(c);
    /* the namespace's libc is gone: its stream pointers with it, and all
     * that held its streams */
    for (int i = 0; i < 3; i++)
        c->ns.stdio_slot[i] = NULL;
    ns_streams_release(c, false);
    context_streams_close(c);
}

void ns_streams_release(vlcs_ctx *c, bool broken)
{
    FILE *process[3] = {stdin, stdout, stderr};
    for (int i = 0; i < 3; i++)
        if (c->ns.stdio_file[i] != NULL && c->ns.stdio_slot[i] != NULL)
            *c->ns.stdio_slot[i] = process[i];
    /* a namespace that stays (libstdc++ does) may flush them at the
     * process's exit: retired, closed at teardown */
    context_streams_retire(c, broken);
}

void ns_flush(vlcs_ctx *c) { c->ns.libc_fflush(NULL); }

/*
 * copies.c - copy mode: a context whose libraries are renamed copies in the
 * base namespace, for contexts past glibc's 16 linker namespaces.
 *
 * Each library of the context's tree, except glibc's own (the process has
 * one libc), is a byte copy in a memfd with its SONAME and DT_NEEDED names
 * rewritten to names no other object has (elf_copy.c): a new object with
 * globals of its own, whose dependants bind to the context's copies only.
 * A load is reached through a generated root whose DT_NEEDED lists first
 * the context's own copy of the interposer, bound to it, then the new
 * copies; opened with RTLD_DEEPBIND, every copy binds what the interposer
 * defines (the CPU view, threads, keys, fork handlers, the environment,
 * dlopen) to that copy before libc, and the rest to the base's libc.
 *
 * The memfds stay open while their copies are loaded: glibc matches a new
 * load by path before it looks at the file, and a closed memfd's number,
 * reused, would name the old copy.  Once loaded, a copy's read-only pages
 * are the original file's and it is named after it (copy_origins.c).
 */
#include "common.h"
#include "copies.h"
#include "context.h"
#include "copies_env.h"
#include "copy_origins.h"
#include "copy_owners.h"
#include "dl_why.h"
#include "elf_copy.h"
#include "elf_read.h"
#include "elf_search.h"
#include "env.h"
#include "error.h"
#include "exec_streams.h"
#include "fork.h"
#include "handles.h"
#include "interposer_path.h"
#include "namespace.h"
#include "objects.h"
#include "registry.h"
#include "room.h"
#include "service.h"
#include "shim_table.h"
#include "unload.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* ---- making a context's copies ------------------------------------------- */


static void copyset_free(struct copyset *cs)
{
    for (size_t i = 0; i < cs->ncopies; i++)
        owners_remove(cs->copies[i].path);
    for (size_t i = 0; i < cs->ncopies; i++) {
        free(cs->copies[i].origin);
        free(cs->copies[i].renamed);
        free(cs->copies[i].soname);
        free(cs->copies[i].load_name);
        if (cs->copies[i].fd >= 0)
            close(cs->copies[i].fd);
        origin_release(cs->copies[i].origin_fd);
    }
    for (size_t i = 0; i < cs->nroots; i++)
        close(cs->root_fds[i]);
    if (cs->ip_fd >= 0) {
        char ip[FD_PATH_SIZE];
        fd_path(ip, sizeof ip, cs->ip_fd);
        owners_remove(ip);
        close(cs->ip_fd);
    }
    origin_release(cs->ip_origin_fd);
    free(cs->ip_load_name);
    free(cs->global_real);
    free(cs->opened_global);
    free(cs->copies);
    free(cs->root_fds);
    free(cs->roots);
    search_lists_free(&cs->grown);
    pthread_mutex_destroy(&cs->lock);
    free(cs);
}

/* Each copy keeps a descriptor: allow what the hard limit allows. */
static void raise_fd_limit(void)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max && r.rlim_cur < 65536) {
        r.rlim_cur = r.rlim_max < 65536 ? r.rlim_max : 65536;
        setrlimit(RLIMIT_NOFILE, &r);
    }
}

static void *copy_dlopen(vlcs_ctx *c, const char *file, int mode, const void *caller);
static int copy_iterate_phdr(vlcs_ctx *c, int (*cb)(struct dl_phdr_info *, size_t, void *),
                             void *data);
static const char *object_file(vlcs_ctx *c, const void *lm);

int copies_create(vlcs_ctx *c)
{
    char why[PATH_MAX + 256];
    struct copyset *cs = calloc(1, sizeof *cs);
    if (cs == NULL) {
        set_error(VLCS_E_SYSTEM, "Error loading into context '%s': out of memory", c->name);
        return -1;
    }
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&cs->lock, &ma);
    pthread_mutexattr_destroy(&ma);
    cs->ip_fd = cs->ip_origin_fd = -1;
    cs->global_copy = -1;
    c->cp.set = cs;
    if (c->global_lib != NULL) {
        char real[PATH_MAX];
        if (realpath(c->global_lib, real) == NULL || (cs->global_real = strdup(real)) == NULL) {
            set_error(VLCS_E_NOT_FOUND, "Error loading into context '%s': its global library "
                      "%s cannot be found", c->name, c->global_lib);
            goto fail;
        }
        elf_soname_of(real, cs->global_soname, sizeof cs->global_soname);
    }
    raise_fd_limit();
    if (copy_env_start(c) != 0) {
        set_error(VLCS_E_SYSTEM, "Error loading into context '%s': out of memory", c->name);
        goto fail;
    }

    /* The context's own interposer: a renamed copy, so that its binding is
     * its own; DEEPBIND, so that its calls among its own functions
     * (__sysconf to sysconf) stay in it. */
    if (room_for_load(c, "vlcs's interposer", 1, 1) != 0)
        goto fail;
    const char *ip = interposer_path();
    struct elf_names e;
    cs->ip_origin_fd = origin_hold(ip, why, sizeof why);
    int code = cs->ip_origin_fd < 0 ? -cs->ip_origin_fd
                                    : elf_names_read(cs->ip_origin_fd, ip, &e, why, sizeof why);
    if (code != VLCS_OK) {
        set_error(code, "Error loading into context '%s': %s", c->name, why);
        goto fail;
    }
    char renamed[256];
    const char *soname = elf_str(&e, e.soname);
    if (soname == NULL || elf_new_name(soname, copies_serial(), renamed,
                                       sizeof renamed) != 0) {
        elf_names_free(&e);
        set_error(VLCS_E_INVALID, "Error loading into context '%s': %s has no name to rename",
                  c->name, ip);
        goto fail;
    }
    struct elf_rename r = {e.strtab_off + e.soname, renamed};
    cs->ip_fd = elf_copy(cs->ip_origin_fd, ip, "interposer", &r, 1, &e, false, why, sizeof why);
    if (cs->ip_fd < 0) {
        elf_names_free(&e);
        cs->ip_fd = -1;
        set_error(VLCS_E_SYSTEM, "Error loading into context '%s': %s", c->name, why);
        goto fail;
    }
    char path[FD_PATH_SIZE];
    fd_path(path, sizeof path, cs->ip_fd);
    dlerror();
    ns_handed_over(); /* it may be mapped where an unloaded object was */
    /* The context's own code, as a namespace's interposer is its
     * namespace's: a fault in it (a program's failed assert raises
     * SIGABRT there) is the context's to contain. */
    bool owned = owners_add(path, c) == 0;
    cs->ip = deep_open(path, RTLD_NOW);
    struct link_map *lm = NULL;
    bool placed; /* a full copy: its own pages stay where they are not */
    if (cs->ip != NULL && dlinfo(cs->ip, RTLD_DI_LINKMAP, &lm) == 0 && lm != NULL) {
        if (owned)
            owners_loaded(path, lm);
        cs->ip_load_name = share_with_origin(lm, &e, cs->ip_origin_fd, cs->ip_fd, &r, 1, &placed);
    }
    elf_names_free(&e);
    if (cs->ip == NULL) {
        load_error(c, "the vlcs interposer", dlerror());
        goto fail;
    }
    vlcs_ip_bind_fn bind = (vlcs_ip_bind_fn)dlsym(cs->ip, "vlcs_ip_bind");
    ns_api_fill(c, &c->api);
    c->api.env_get = copy_env_get;
    c->api.env_set = copy_env_set;
    c->api.env_put = copy_env_put;
    c->api.env_clear = copy_env_clear;
    c->api.env_block = copy_env_block;
    c->api.dlopen = copy_dlopen;
    c->api.dl_error = dl_why_take;
    c->api.iterate_phdr = copy_iterate_phdr;
    c->api.object_file = object_file;
    if (bind == NULL || bind(&c->api) != 0) {
        set_error(VLCS_E_NOT_FOUND,
                  "Error loading into context '%s': %s was built for another version of vlcs",
                  c->name, ip);
        dlclose(cs->ip);
        goto fail;
    }
    c->copy_mode = true;
    c->backend = &copies_backend;
    return 0;
fail:
    c->cp.set = NULL;
    copyset_free(cs);
    copy_env_free(c);
    return -1;
}

/* glibc as the context's code sees it: a new reference to its interposer,
 * whose lookups find its definitions first (getenv answers the context's
 * variables), then the process's glibc, which the interposer links. */
static void *glibc_scope(vlcs_ctx *c)
{
    char ip[FD_PATH_SIZE];
    fd_path(ip, sizeof ip, c->cp.set->ip_fd);
    return dlopen(ip, RTLD_NOW | RTLD_NOLOAD);
}

/* A failed load uses up nothing scarce: the context keeps its mode. */
static void *copies_load(vlcs_ctx *c, const char *path, bool fresh)
{
    (void)fresh;
    if (c->loading_program && c->program_file != NULL)
        path = c->program_file; /* not vlcs_ctx_exec's loadable copy: this is one */
    void *h = glibc_scoped(path)                   ? glibc_scope(c)
              : process_wide_in(c->cp.set, path) ? dlopen(path, RTLD_NOW | RTLD_LOCAL) /* a service */
                                                  : NULL;
    if (h != NULL) {
        if (ns_note_handle(c, h) == 0)
            return h;
        dlclose(h);
        set_error(VLCS_E_SYSTEM, "Error loading %s into context '%s': out of memory",
                  base_name(path), c->name);
        return NULL;
    }
    ns_handed_over(); /* its copies may be mapped where unloaded objects were */
    char *real = malloc(PATH_MAX); /* on the heap: see copies_tree.c's struct tree */
    if (real == NULL) {
        set_error(VLCS_E_SYSTEM, "Error loading %s into context '%s': out of memory",
                  base_name(path), c->name);
        return NULL;
    }
    if (elf_resolve(path, NULL, 0, real) != 0) {
        free(real);
        if (strchr(path, '/') != NULL)
            set_error(VLCS_E_NOT_FOUND, "Error loading %s into context '%s': %s", path, c->name,
                      strerror(errno));
        else
            set_error(VLCS_E_NOT_FOUND, "Error loading %s into context '%s': no such library "
                      "(copy mode looks where ld.so would: LD_LIBRARY_PATH, ld.so.cache, the "
                      "system's folders)", path, c->name);
        return NULL;
    }
    pthread_mutex_lock(&c->cp.set->lock);
    /* A program's run has globals of its own, as a process's: a new copy
     * each run.  The last run's stays loaded until the context goes, as
     * its tree's root holds it and the libraries it brought bind their
     * streams to that root (stdin, stdout, stderr); what they brought
     * is the context's, as a namespace keeps it. */
    bool program = c->loading_program && path == c->program_file;
    h = copies_load_tree(c, real, base_name(path), program ? COPIES_AGAIN : 0);
    pthread_mutex_unlock(&c->cp.set->lock);
    if (h == NULL)
        ns_handed_back(); /* what it mapped is gone again */
    free(real);
    /* the caller's reference, closed with the context as a namespace's */
    if (h != NULL && ns_note_handle(c, h) != 0) {
        dlclose(h);
        set_error(VLCS_E_SYSTEM, "Error loading %s into context '%s': out of memory",
                  base_name(path), c->name);
        return NULL;
    }
    return h;
}

/* h, a copy the context's code opened RTLD_GLOBAL, joins the context's
 * global scope: later roots list it, and so its dependencies, and the
 * earlier roots' search lists gain it and them, as glibc adds an
 * object's search list to the global scope for every object (so that a
 * library loaded before it, lazily, binds to it: oneMKL's core to the
 * layers opened after it, where the base's own copies would be found
 * next).  With cs->lock held.  Out of memory, it stays local. */
static void open_global(vlcs_ctx *c, struct copyset *cs, void *h)
{
    struct link_map *lm = NULL;
    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || lm == NULL)
        return;
    int found = -1;
    for (size_t i = 0; i < cs->ncopies && found < 0; i++)
        if (cs->copies[i].lm == lm)
            found = (int)i;
    if (found < 0 || found == cs->global_copy)
        return;
    for (size_t k = 0; k < cs->nopened_global; k++)
        if (cs->opened_global[k].copy == found)
            return;
    if (array_grow((void **)&cs->opened_global, &cs->capopened_global, cs->nopened_global,
                   sizeof *cs->opened_global) != 0)
        return;
    /* held until every root is unloaded: one whose list names it must not
     * outlive it (a destructor's lazy binding would read it freed) */
    cs->opened_global[cs->nopened_global++] = (struct opened_global){
        found, dlopen(cs->copies[found].path, RTLD_LAZY | RTLD_NOLOAD)};
    static bool warned;
    if (!search_lists_append(cs->roots, cs->nroot_maps, lm, NULL, NULL, &cs->grown) &&
        !__atomic_exchange_n(&warned, true, __ATOMIC_RELAXED))
        fprintf(stderr,
                "vlcs: %s was opened RTLD_GLOBAL in context '%s', but libraries it loaded before "
                "do not find its symbols: this C library's link maps are not laid out as vlcs "
                "reads them\n",
                base_name(cs->copies[found].origin), c->name);
}

/* dlopen called by one of the context's copies: a copy of what it names,
 * found from the caller's original file (its RUNPATH, its $ORIGIN). */
static void *copy_dlopen(vlcs_ctx *c, const char *file, int mode, const void *caller)
{
    /* RTLD_GLOBAL: the copy joins the context's own global scope
     * (open_global), never the base's */
    struct copyset *cs = c->cp.set;
    if (glibc_scoped(file))
        return glibc_scope(c);
    if (process_wide_in(cs, file)) {
        void *fwd = services_open_forwarder(file);
        return fwd != NULL ? fwd : dlopen(file, mode & ~RTLD_GLOBAL);
    }
    /* on the heap: see copies_tree.c's struct tree */
    struct {
        char real[PATH_MAX], msg[PATH_MAX + 64], why[256];
        struct elf_names from;
    } *b = malloc(sizeof *b);
    if (b == NULL) {
        dl_why_set("out of memory");
        return NULL;
    }
    pthread_mutex_lock(&cs->lock);
    const struct copy *from = NULL;
    bool have_from = false;
    struct link_map *lm = object_at(caller);
    for (size_t i = 0; lm != NULL && i < cs->ncopies && from == NULL; i++)
        if (lm == cs->copies[i].lm || strcmp(lm->l_name, cs->copies[i].path) == 0)
            from = &cs->copies[i];
    const char *from_path = from ? from->origin : NULL;
    if (from != NULL)
        have_from = elf_names_read(from->origin_fd, from_path, &b->from, b->why, sizeof b->why) ==
                    VLCS_OK;
    void *h = NULL;
    struct elf_from chain = {&b->from, from_path};
    if (elf_resolve(file, &chain, have_from ? 1 : 0, b->real) == 0) {
        /* RTLD_NOLOAD of what the context has not loaded: NULL, no error */
        if (!(mode & RTLD_NOLOAD) || find_copy(cs, b->real) >= 0) {
            ns_handed_over(); /* its copies may be mapped where unloaded objects were */
            h = copies_load_tree(c, b->real, base_name(file),
                                 (mode & RTLD_BINDING_MASK) == RTLD_LAZY ? COPIES_LAZY : 0);
            if (h == NULL) {
                ns_handed_back(); /* what it mapped is gone again */
                dl_why_set(vlcs_error());
            }
        }
        if (h != NULL && (mode & RTLD_GLOBAL))
            open_global(c, cs, h);
    } else {
        snprintf(b->msg, sizeof b->msg,
                 "%s: cannot open shared object file: No such file or directory", file);
        dl_why_set(b->msg);
    }
    if (have_from)
        elf_names_free(&b->from);
    pthread_mutex_unlock(&cs->lock);
    free(b);
    return h;
}

/* ---- giving the copies back ----------------------------------------------- */

static size_t copies_objects(vlcs_ctx *c, struct link_map **out, size_t cap)
{
    struct copyset *cs = c->cp.set;
    size_t n = 0;
    if (cs == NULL)
        return 0;
    pthread_mutex_lock(&cs->lock);
    if (cs->ip != NULL && n < cap && dlinfo(cs->ip, RTLD_DI_LINKMAP, &out[n]) == 0)
        n++;
    for (size_t i = 0; i < cs->ncopies && n < cap; i++) {
        /* known once loaded: a dlopen for each, at each load of a thousand
         * contexts' (strict mode asks for them all), took minutes */
        if (cs->copies[i].lm != NULL) {
            out[n++] = cs->copies[i].lm;
            continue;
        }
        /* a reference taken and given back at once: the copy is held by the
         * context's own handles meanwhile */
        void *h = dlopen(cs->copies[i].path, RTLD_LAZY | RTLD_NOLOAD);
        if (h == NULL)
            continue;
        if (dlinfo(h, RTLD_DI_LINKMAP, &out[n]) == 0)
            n++;
        dlclose(h);
    }
    pthread_mutex_unlock(&cs->lock);
    return n;
}


/* ---- what the context's code sees of the loaded objects -------------------- */

struct iterate {
    struct copyset *cs;
    int (*cb)(struct dl_phdr_info *, size_t, void *);
    void *data;
};

static int iterate_one(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct iterate *it = arg;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    if (strncmp(name, "/proc/", 6) == 0 && strstr(name, "/fd/") != NULL) {
        /* made by vlcs: this context's copies under their files' names;
         * roots, interposers, forwarders and other contexts' copies not
         * (a loaded copy is named after its original's descriptor, which
         * every context's copy of that file shares: known by its address) */
        for (size_t i = 0; i < it->cs->ncopies; i++)
            if ((it->cs->copies[i].addr != 0 && it->cs->copies[i].addr == info->dlpi_addr) ||
                strcmp(it->cs->copies[i].path, name) == 0) {
                struct dl_phdr_info shown = *info;
                shown.dlpi_name = it->cs->copies[i].origin;
                return it->cb(&shown, size < sizeof shown ? size : sizeof shown, it->data);
            }
        return 0;
    }
    /* of the base's objects, what a namespace of its own has too: the
     * program, the vDSO, glibc's libraries */
    if (name[0] == '\0' || strncmp(base_name(name), "linux-vdso", 10) == 0 ||
        process_wide_in(it->cs, name))
        return it->cb(info, size, it->data);
    return 0;
}

static int copy_iterate_phdr(vlcs_ctx *c, int (*cb)(struct dl_phdr_info *, size_t, void *),
                             void *data)
{
    struct iterate it = {c->cp.set, cb, data};
    pthread_mutex_lock(&it.cs->lock);
    int rc = dl_iterate_phdr(iterate_one, &it);
    pthread_mutex_unlock(&it.cs->lock);
    return rc;
}

/* The original file of c's copy lm (also while it loads: its
 * constructors may ask), for dladdr; NULL if lm is none of c's copies. */
static const char *object_file(vlcs_ctx *c, const void *lm)
{
    struct copyset *cs = c->cp.set;
    const struct link_map *m = lm;
    const char *found = NULL;
    pthread_mutex_lock(&cs->lock);
    for (size_t i = 0; i < cs->ncopies && found == NULL; i++)
        if (cs->copies[i].lm == lm || strcmp(cs->copies[i].path, m->l_name) == 0)
            found = cs->copies[i].origin;
    pthread_mutex_unlock(&cs->lock);
    return found;
}


static void *copies_scope(vlcs_ctx *c) { return c->cp.set->ip; }

/* path: a path (its copy, by the original's real path) or a file name
 * (the first copy of a file so named) */
static void *copies_loaded(vlcs_ctx *c, const char *path)
{
    struct copyset *cs = c->cp.set;
    char real[PATH_MAX];
    void *found = NULL;
    pthread_mutex_lock(&cs->lock);
    int i = -1;
    if (strchr(path, '/') != NULL && realpath(path, real) != NULL)
        i = find_copy(cs, real);
    for (size_t k = 0; i < 0 && strchr(path, '/') == NULL && k < cs->ncopies; k++)
        if (strcmp(base_name(cs->copies[k].origin), path) == 0)
            i = (int)k;
    if (i >= 0)
        found = dlopen(cs->copies[i].path, RTLD_NOW | RTLD_NOLOAD);
    pthread_mutex_unlock(&cs->lock);
    return found;
}

static bool copies_owns(const vlcs_ctx *c, const void *map) { return copies_owner_nowait(map) == c; }

static int copies_setenv(vlcs_ctx *c, const char *name, const char *value)
{
    return copy_env_set(c, name, value, 1);
}

static const char *copies_getenv(vlcs_ctx *c, const char *name) { return copy_env_get(c, name); }

VLCS_API const char *vlcs_ctx_object(vlcs_ctx *h, unsigned long i)
{
    vlcs_ctx *c = ctx_get(h, "listing its libraries");
    if (c == NULL)
        return NULL;
    const char *origin = NULL;
    pthread_mutex_lock(&c->lock);
    if (c->copy_mode) {
        pthread_mutex_lock(&c->cp.set->lock);
        if (i < c->cp.set->ncopies)
            origin = c->cp.set->copies[i].origin;
        pthread_mutex_unlock(&c->cp.set->lock);
    }
    pthread_mutex_unlock(&c->lock);
    return origin;
}

VLCS_API const char *vlcs_ctx_env_entry(vlcs_ctx *h, unsigned long i)
{
    vlcs_ctx *c = ctx_get(h, "listing its environment");
    if (c == NULL)
        return NULL;
    const char *entry = NULL;
    pthread_mutex_lock(&c->lock);
    if (c->copy_mode) /* strings vlcs keeps while the context lives */
        entry = copy_env_entry(c, i);
    pthread_mutex_unlock(&c->lock);
    return entry;
}

static void *reopen_copy(vlcs_ctx *c, const char *path)
{
    (void)c;
    return dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
}

static int copies_unload(vlcs_ctx *c, char *why, size_t size)
{
    struct copyset *cs = c->cp.set;
    ns_handed_back(); /* before: another load may map here as soon as they go */
    if (ctx_close_libraries(c, why, size) != 0)
        return -1;
    if (c->drop_opens) /* the last made first: it may hold those before */
        for (size_t i = cs->ncopies; i-- > 0;)
            drop_opens(reopen_copy, c, cs->copies[i].path);
    /* the roots are gone: what their grown lists named may go now */
    for (size_t k = cs->nopened_global; k-- > 0;)
        if (cs->opened_global[k].ref != NULL) {
            dlclose(cs->opened_global[k].ref);
            cs->opened_global[k].ref = NULL;
        }
    /* Anything still loaded is held by someone else: its memfd stays. */
    char left[512] = "";
    size_t nleft = 0, used = 0;
    for (size_t i = 0; i < cs->ncopies; i++) {
        void *still = dlopen(cs->copies[i].path, RTLD_LAZY | RTLD_NOLOAD);
        if (still == NULL)
            continue;
        dlclose(still);
        nleft++;
        if (used < sizeof left)
            used += (size_t)snprintf(left + used, sizeof left - used, "%s%s", used ? ", " : "",
                                     base_name(cs->copies[i].origin));
    }
    if (nleft > 0) {
        snprintf(why, size, "copies of %s %s loaded (opened by its libraries themselves and never "
                            "closed, or marked not to be unloaded)",
                 left, nleft > 1 ? "stay" : "stays");
        return -1;
    }
    dlclose(cs->ip);
    streams_for_copies_end(c); /* nothing bound to them is left */
    atomic_store(&c->cp.py_state_dict, NULL);
    fork_forget(c);
    shim_forget(c);
    c->cp.set = NULL;
    c->copy_mode = false;
    c->backend = NULL;
    copyset_free(cs);
    copy_env_free(c);
    return 0;
}

static void copies_closing(vlcs_ctx *c) { context_streams_retire(c, c->fault != NULL); }

const struct ctx_backend copies_backend = {
    .name = "copies",
    .mode = VLCS_MODE_COPIES,
    .kept = "its copies stay",
    .load = copies_load,
    .loaded = copies_loaded,
    .scope = copies_scope,
    .objects = copies_objects,
    .owns = copies_owns,
    .setenv = copies_setenv,
    .getenv = copies_getenv,
    .closing = copies_closing,
    .unload = copies_unload,
};

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
#include "internal.h"
#include "copies_env.h"
#include "shim_table.h"
#include "room.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

struct copy {
    char *origin;  /* the original file's real path */
    char *renamed; /* its SONAME in the copy (NULL: it had none) */
    char *soname;  /* the original's (NULL: none) */
    int fd;        /* the memfd */
    int origin_fd; /* the original's (copy_origins.c) */
    char path[FD_PATH_SIZE];
    void *lm;        /* its struct link_map while loaded */
    uintptr_t addr;  /* its load address (dl_iterate_phdr's dlpi_addr) */
    char *load_name; /* the name glibc gave it, kept while a reader may hold it */
};

struct copyset {
    pthread_mutex_t lock; /* recursive: a copy's constructor may dlopen */
    int ip_fd, ip_origin_fd;
    char *ip_load_name;
    void *ip;
    struct copy *copies;
    size_t ncopies, capcopies;
    int *root_fds;
    size_t nroots, caproots;
    /* vlcs_ctx_set_global_library (a Python of its own): that library is
     * copied even if it is a service's, and every root lists its copy
     * before the services' forwarders, in place of the one it stands in for */
    char *global_real;
    char global_soname[256]; /* the service it stands in for (services_paths) */
    int global_copy; /* index in copies, -1 until loaded */
};

static _Atomic unsigned long serial;

/* glibc's own libraries: one copy per process, shared by every context. */
static bool glibc_own(const char *name);

/* ... and the Service context's (a service is the base's object, which a
 * copy in the base namespace reaches by its unchanged name). */
static bool process_wide(const char *name)
{
    return services_has(name) || glibc_own(name);
}

/* What libc itself holds (the libraries that are stubs since glibc 2.34
 * and the loader), as the context sees it: its interposer first.  The
 * others (libm, libresolv, ...) are the process's own, as libvlcs is to
 * code in the context that opens it (a Python of its own importing vlcs). */
static bool glibc_scoped(const char *name)
{
    static const char *const prefixes[] = {"libc.so",   "libpthread.so", "libdl.so", "librt.so",
                                           "libutil.so", "libanl.so",    "ld-linux", "ld64.so",
                                           NULL};
    const char *base = base_name(name);
    for (const char *const *p = prefixes; *p; p++)
        if (strncmp(base, *p, strlen(*p)) == 0)
            return true;
    return false;
}

/* process_wide, but the context's own global library is its own copy */
static bool process_wide_in(const struct copyset *cs, const char *name)
{
    if (cs->global_real != NULL && strcmp(base_name(name), base_name(cs->global_real)) == 0)
        return false;
    return process_wide(name);
}

static bool glibc_own(const char *name)
{
    static const char *const prefixes[] = {
        "libc.so",  "libm.so",   "libpthread.so", "libdl.so",          "librt.so",
        "libresolv.so", "libutil.so", "libanl.so", "libmvec.so",       "libBrokenLocale.so",
        "ld-linux", "ld64.so",   "libnss_",       "libthread_db.so",   "libc_malloc_debug.so",
        "libvlcs.so", NULL};
    const char *base = base_name(name);
    for (const char *const *p = prefixes; *p; p++)
        if (strncmp(base, *p, strlen(*p)) == 0)
            return true;
    return false;
}

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
    if (cs->ip_fd >= 0)
        close(cs->ip_fd);
    origin_release(cs->ip_origin_fd);
    free(cs->ip_load_name);
    free(cs->global_real);
    free(cs->copies);
    free(cs->root_fds);
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

/* dlopen with RTLD_DEEPBIND, past a sanitizer's dlopen, which refuses the
 * flag lest the library bind malloc past the sanitizer's: a copy binds the
 * interposer's malloc first, which is the base's, the sanitizer's. */
static void *deep_open(const char *path)
{
    static void *(*real)(const char *, int);
    void *(*f)(const char *, int) = __atomic_load_n(&real, __ATOMIC_RELAXED);
    if (f == NULL) {
        f = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
        if (f == NULL)
            f = dlopen;
        __atomic_store_n(&real, f, __ATOMIC_RELAXED);
    }
    return f(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
}

/* A loaded copy's read-only pages mapped again from its original, and the
 * copy named after the original's descriptor (copy_origins.c).  Returns
 * the name glibc gave it: freed once the copy is gone, as another thread
 * may be reading it now (glibc frees the new one at dlclose).  *ok: its
 * code is in place. */
static char *share_with_origin(struct link_map *lm, const struct elf_names *e, int origin_fd,
                               int copy_fd, const struct elf_rename *rn, size_t nrn, bool *ok)
{
    char *name = malloc(FD_PATH_SIZE);
    *ok = elf_share_pages(e, origin_fd, copy_fd, lm->l_addr, rn, nrn) == 0;
    if (name == NULL) /* it keeps its memfd's name */
        return NULL;
    fd_path(name, FD_PATH_SIZE, origin_fd);
    char *was = lm->l_name;
    __atomic_store_n(&lm->l_name, name, __ATOMIC_RELEASE);
    return was;
}

static void *copy_dlopen(vlcs_ctx *c, const char *file, int mode, const void *caller);
static const char *dl_error(void);
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
    c->copyset = cs;
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
    if (soname == NULL || elf_new_name(soname, atomic_fetch_add(&serial, 1), renamed,
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
    cs->ip = deep_open(path);
    struct link_map *lm = NULL;
    bool placed; /* a full copy: its own pages stay where they are not */
    if (cs->ip != NULL && dlinfo(cs->ip, RTLD_DI_LINKMAP, &lm) == 0 && lm != NULL)
        cs->ip_load_name = share_with_origin(lm, &e, cs->ip_origin_fd, cs->ip_fd, &r, 1, &placed);
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
    c->api.dlopen = copy_dlopen;
    c->api.dl_error = dl_error;
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
    c->copyset = NULL;
    copyset_free(cs);
    copy_env_free(c);
    return -1;
}

/* One library of a load's tree. */
struct item {
    char origin[PATH_MAX];
    struct elf_names names;
    int existing; /* index of the context's copy, or -1: a new one */
    int loader;   /* the item that first needed it, -1: the one asked for */
    char renamed[256];
    int dep[ELF_MAX_NEEDED]; /* per DT_NEEDED: the item it names, -1: process-wide */
    int fd;  /* its copy's memfd */
    int ofd; /* its original's descriptor (held) */
    uintptr_t base; /* where its copy loaded */
    struct elf_rename *rn; /* what its copy changed: names, unique symbols' bindings */
    size_t nrn;
};

static int find_copy(struct copyset *cs, const char *origin)
{
    for (size_t i = 0; i < cs->ncopies; i++)
        if (strcmp(cs->copies[i].origin, origin) == 0)
            return (int)i;
    return -1;
}

/* ld.so takes a needed name that a loaded object has as its soname before
 * it searches: oneMKL's libmkl_def.so.3, opened by path, needs
 * libmkl_core.so.3, loaded already from a folder no search names. */
static int find_soname(struct copyset *cs, const char *soname)
{
    for (size_t i = 0; i < cs->ncopies; i++)
        if (cs->copies[i].soname != NULL && strcmp(cs->copies[i].soname, soname) == 0)
            return (int)i;
    return -1;
}

#define MAX_TREE 256
#define WHY_SIZE (PATH_MAX + 256)

/* A lazy load's constructors, in the order ld.so runs them: each copy's
 * after those of the copies it needs. */
static void init_tree(struct item *items, int i, char *done)
{
    if (done[i])
        return;
    done[i] = 1;
    struct item *it = &items[i];
    if (it->existing >= 0) /* loaded before, its constructors run then */
        return;
    for (size_t k = 0; k < it->names.nneeded; k++)
        if (it->dep[k] >= 0)
            init_tree(items, it->dep[k], done);
    if (it->base != 0)
        elf_run_init(&it->names, it->base);
}

/* glibc gives a library's constructors argc and argv: libvlcs keeps them
 * for the constructors of lazy copies, which it runs itself. */
__attribute__((constructor)) static void keep_args(int argc, char **argv)
{
    elf_keep_args(argc, argv);
}

/* The copies of path's tree that the context lacks, made and loaded; the
 * handle of path's copy.  With cs->lock held; sets the error. */
static void *load_tree(vlcs_ctx *c, const char *real, const char *shown)
{
    struct copyset *cs = c->copyset;
    int have = find_copy(cs, real);
    if (have >= 0)
        return dlopen(cs->copies[have].path, RTLD_NOW | RTLD_NOLOAD);

    /* Buffers on the heap, here and below: a library's constructor may
     * dlopen from a thread with a small stack (256 KiB seen), and the
     * copies it loads run constructors that dlopen in turn. */
    char *why = malloc(WHY_SIZE);
    struct item *items = why ? calloc(MAX_TREE, sizeof *items) : NULL;
    size_t n = 0, made = 0;
    void *h = NULL;
    int root = -1, code = VLCS_OK;
    if (items == NULL) {
        free(why);
        set_error(VLCS_E_SYSTEM, "Error loading %s into context '%s': out of memory", shown, c->name);
        return NULL;
    }
    snprintf(items[0].origin, sizeof items[0].origin, "%s", real);
    items[0].existing = -1;
    items[0].fd = items[0].ofd = -1;
    items[0].loader = -1;
    n = 1;
    /* Breadth first: each item read, its names resolved as ld.so would
     * from the original file, new ones queued. */
    for (size_t i = 0; i < n && code == VLCS_OK; i++) {
        struct item *it = &items[i];
        if (it->existing >= 0) /* its tree is the context's already */
            continue;
        it->ofd = origin_hold(it->origin, why, WHY_SIZE);
        if (it->ofd < 0) {
            code = -it->ofd;
            break;
        }
        code = elf_names_read(it->ofd, it->origin, &it->names, why, WHY_SIZE);
        if (code != VLCS_OK)
            break;
        const char *soname = elf_str(&it->names, it->names.soname);
        if (soname != NULL &&
            elf_new_name(soname, atomic_fetch_add(&serial, 1), it->renamed, sizeof it->renamed) != 0) {
            snprintf(why, WHY_SIZE, "%s's name %s is too short to be renamed (copy mode needs "
                                      "%d characters)", it->origin, soname, ELF_RENAME_TAIL + 1);
            code = VLCS_E_INVALID;
            break;
        }
        for (size_t k = 0; k < it->names.nneeded; k++) {
            const char *need = elf_str(&it->names, it->names.needed[k]);
            it->dep[k] = -1;
            if (process_wide_in(cs, need))
                continue;
            char dep[PATH_MAX];
            struct elf_from chain[64];
            size_t nchain = 0;
            for (int j = (int)i; j >= 0 && nchain < 64; j = items[j].loader)
                chain[nchain++] = (struct elf_from){&items[j].names, items[j].origin};
            int known = find_soname(cs, need);
            if (known >= 0) {
                snprintf(dep, sizeof dep, "%s", cs->copies[known].origin);
            } else if (elf_resolve(need, chain, nchain, dep) != 0) {
                snprintf(why, WHY_SIZE, "%s needs %s, which cannot be found", it->origin, need);
                code = VLCS_E_NOT_FOUND;
                break;
            }
            size_t j = 0;
            while (j < n && strcmp(items[j].origin, dep) != 0)
                j++;
            if (j == n) {
                if (n == MAX_TREE) {
                    snprintf(why, WHY_SIZE, "its tree holds more than %d libraries", MAX_TREE);
                    code = VLCS_E_LIMIT;
                    break;
                }
                snprintf(items[n].origin, sizeof items[n].origin, "%s", dep);
                items[n].existing = find_copy(cs, dep);
                items[n].fd = items[n].ofd = -1;
                items[n].loader = (int)i;
                n++;
            }
            it->dep[k] = (int)j;
        }
    }
    /* Copies without their code (mapped from the original once loaded) and
     * constructors run then, when nothing of any new copy's code runs in
     * dlopen: most of a library's file is code, copied only to be given
     * back (OpenBLAS: 33 of 36 MB). */
    /* Room for the new copies and the root: their maps, their memfds. */
    size_t fresh = 1;
    for (size_t i = 0; i < n; i++)
        fresh += items[i].existing < 0;
    if (code == VLCS_OK && room_for_load(c, shown, fresh, fresh) != 0)
        goto out;
    bool lazy = code == VLCS_OK;
    for (size_t i = 0; i < n && lazy; i++)
        lazy = items[i].existing >= 0 || elf_lazy_ok(items[i].ofd, &items[i].names);
    /* Every name a copy needs, rewritten to its dependency's new name. */
    for (size_t i = 0; i < n && code == VLCS_OK; i++) {
        struct item *it = &items[i];
        if (it->existing >= 0)
            continue;
        struct elf_rename *unique = NULL;
        size_t nunique = elf_unique_symbols(it->ofd, &it->names, &unique);
        struct elf_rename *rn = it->rn = malloc((1 + ELF_MAX_NEEDED + nunique) * sizeof *rn);
        if (rn == NULL) {
            free(unique);
            snprintf(why, WHY_SIZE, "out of memory");
            code = VLCS_E_SYSTEM;
            break;
        }
        size_t nr = 0;
        for (size_t k = 0; k < nunique; k++)
            rn[nr++] = unique[k];
        free(unique);
        if (it->renamed[0])
            rn[nr++] = (struct elf_rename){it->names.strtab_off + it->names.soname, it->renamed};
        for (size_t k = 0; k < it->names.nneeded && code == VLCS_OK; k++) {
            if (it->dep[k] < 0)
                continue;
            const struct item *d = &items[it->dep[k]];
            const char *to = d->existing >= 0 ? cs->copies[d->existing].renamed : d->renamed;
            const char *need = elf_str(&it->names, it->names.needed[k]);
            if (to == NULL || to[0] == '\0' || strlen(to) != strlen(need)) {
                snprintf(why, WHY_SIZE,
                         "%s needs %s, but that file calls itself %s: copy mode renames a "
                         "library only under the name it is needed by",
                         it->origin, need, d->existing >= 0 || d->names.soname == UINT64_MAX
                                               ? "nothing"
                                               : elf_str(&d->names, d->names.soname));
                code = VLCS_E_INVALID;
                break;
            }
            rn[nr++] = (struct elf_rename){it->names.strtab_off + it->names.needed[k], to};
        }
        if (code != VLCS_OK)
            break;
        it->nrn = nr;
        it->fd = elf_copy(it->ofd, it->origin, base_name(it->origin), rn, nr, &it->names, lazy,
                          why, WHY_SIZE);
        if (it->fd < 0) {
            code = -it->fd;
            it->fd = -1;
            break;
        }
        made++;
    }
    if (code != VLCS_OK) {
        set_error(code, "Error loading %s into context '%s': %s", shown, c->name, why);
        goto out;
    }
    /* The root: the interposer first, then the context's own global
     * library, then the services' forwarders (their entries that vlcs
     * replaces, libpython's PyDict_* on the module table, come before the
     * base's), then the new copies, path's first. */
    enum { MAX_SERVICES = 16 };
    const char **needed = calloc(made + 2 + MAX_SERVICES, sizeof *needed);
    char (*paths)[FD_PATH_SIZE] = calloc(made + 2 + MAX_SERVICES, sizeof *paths);
    if (needed == NULL || paths == NULL) {
        free(needed);
        free(paths);
        set_error(VLCS_E_SYSTEM, "Error loading %s into context '%s': out of memory", shown, c->name);
        goto out;
    }
    size_t nn = 0;
    fd_path(paths[nn], sizeof *paths, cs->ip_fd);
    needed[nn] = paths[nn];
    nn++;
    /* its own global library first, then the services it does not stand in for */
    if (cs->global_real != NULL && cs->global_copy >= 0) {
        snprintf(paths[nn], sizeof *paths, "%s", cs->copies[cs->global_copy].path);
        needed[nn] = paths[nn];
        nn++;
    }
    size_t nsvc = services_paths(paths + nn, MAX_SERVICES,
                                 cs->global_real != NULL ? cs->global_soname : NULL);
    for (size_t k = 0; k < nsvc; k++, nn++)
        needed[nn] = paths[nn];
    for (size_t i = 0; i < n; i++)
        if (items[i].existing < 0 && items[i].fd >= 0) {
            fd_path(paths[nn], sizeof *paths, items[i].fd);
            needed[nn] = paths[nn];
            nn++;
        }
    root = forwarder_root(needed, nn, why, WHY_SIZE);
    free(needed);
    free(paths);
    if (root < 0) {
        set_error(-root, "Error loading %s into context '%s': %s", shown, c->name, why);
        root = -1;
        goto out;
    }
    if (array_grow((void **)&cs->copies, &cs->capcopies, cs->ncopies + made, sizeof *cs->copies) ||
        array_grow((void **)&cs->root_fds, &cs->caproots, cs->nroots + 1, sizeof *cs->root_fds)) {
        set_error(VLCS_E_SYSTEM, "Error loading %s into context '%s': out of memory", shown, c->name);
        goto out;
    }
    /* The new copies join the context's before their constructors run: one
     * may dlopen its own library by name (oneTBB's tbbmalloc does), which
     * must find the copy being loaded; and one may ask whose copy it is
     * (owners: libpython's forwarder, for the interpreter dict). */
    size_t first = cs->ncopies;
    bool joined = true;
    for (size_t i = 0; i < n && joined; i++) {
        struct item *it = &items[i];
        if (it->existing >= 0 || it->fd < 0)
            continue;
        struct copy *cp = &cs->copies[cs->ncopies];
        memset(cp, 0, sizeof *cp);
        cp->fd = it->fd;
        cp->origin_fd = it->ofd;
        fd_path(cp->path, sizeof cp->path, it->fd);
        cp->origin = strdup(it->origin);
        cp->renamed = it->renamed[0] ? strdup(it->renamed) : NULL;
        const char *soname = elf_str(&it->names, it->names.soname);
        cp->soname = soname != NULL ? strdup(soname) : NULL;
        if (cp->origin == NULL || (it->renamed[0] && cp->renamed == NULL) ||
            (soname != NULL && cp->soname == NULL) || owners_add(cp->path, c) != 0) {
            free(cp->origin);
            free(cp->renamed);
            free(cp->soname);
            joined = false;
            break;
        }
        it->fd = it->ofd = -1;
        cs->ncopies++;
    }
    char rootpath[FD_PATH_SIZE];
    fd_path(rootpath, sizeof rootpath, root);
    dlerror();
    void *rh = joined ? deep_open(rootpath) : NULL;
    if (rh == NULL || ns_note_handle(c, rh) != 0) {
        if (rh != NULL) {
            dlclose(rh);
            set_error(VLCS_E_SYSTEM, "Error loading %s into context '%s': out of memory", shown,
                      c->name);
        } else if (joined) {
            load_error(c, shown, dlerror());
        } else {
            set_error(VLCS_E_SYSTEM, "Error loading %s into context '%s': out of memory", shown,
                      c->name);
        }
        while (cs->ncopies > first) { /* not loaded: they go */
            struct copy *cp = &cs->copies[--cs->ncopies];
            owners_remove(cp->path);
            close(cp->fd);
            origin_release(cp->origin_fd);
            free(cp->origin);
            free(cp->renamed);
            free(cp->soname);
        }
        goto out;
    }
    cs->root_fds[cs->nroots++] = root;
    root = -1;
    /* their read-only pages: the original file's, as a namespace's would be */
    bool placed = true;
    for (size_t i = 0, k = first; i < n && k < cs->ncopies; i++) {
        struct item *it = &items[i];
        if (it->existing >= 0 || it->names.strtab == NULL)
            continue;
        struct copy *cp = &cs->copies[k++];
        void *ch = dlopen(cp->path, RTLD_LAZY | RTLD_NOLOAD);
        struct link_map *lm = NULL;
        if (ch != NULL && dlinfo(ch, RTLD_DI_LINKMAP, &lm) == 0 && lm != NULL) {
            cp->addr = it->base = lm->l_addr;
            owners_loaded(cp->path, lm);
            bool ok;
            cp->load_name =
                share_with_origin(lm, &it->names, cp->origin_fd, cp->fd, it->rn, it->nrn, &ok);
            placed = placed && ok;
        } else {
            placed = false;
        }
        if (ch != NULL)
            dlclose(ch);
        cp->lm = lm;
    }
    if (lazy && !placed) {
        set_error(VLCS_E_SYSTEM, "Error loading %s into context '%s': its code could not be "
                  "mapped (out of memory?)", shown, c->name);
        goto out;
    }
    if (lazy) { /* their code is in place: their constructors, dependencies first */
        char *done = calloc(n, 1);
        if (done != NULL)
            init_tree(items, 0, done);
        free(done);
        if (done == NULL) {
            set_error(VLCS_E_SYSTEM, "Error loading %s into context '%s': out of memory", shown,
                      c->name);
            goto out; /* unloaded with the context: its constructors never ran */
        }
    }
    if (cs->global_real != NULL && cs->global_copy < 0)
        cs->global_copy = find_copy(cs, cs->global_real);
    h = dlopen(cs->copies[first].path, RTLD_NOW | RTLD_NOLOAD);
out:
    if (root >= 0)
        close(root);
    for (size_t i = 0; i < n; i++) {
        if (items[i].fd >= 0)
            close(items[i].fd);
        origin_release(items[i].ofd);
        if (items[i].names.strtab != NULL)
            elf_names_free(&items[i].names);
        free(items[i].rn);
    }
    free(items);
    free(why);
    return h;
}

/* glibc as the context's code sees it: a new reference to its interposer,
 * whose lookups find its definitions first (getenv answers the context's
 * variables), then the process's glibc, which the interposer links. */
static void *glibc_scope(vlcs_ctx *c)
{
    char ip[FD_PATH_SIZE];
    fd_path(ip, sizeof ip, c->copyset->ip_fd);
    return dlopen(ip, RTLD_NOW | RTLD_NOLOAD);
}

void *copies_load(vlcs_ctx *c, const char *path)
{
    void *h = glibc_scoped(path)                   ? glibc_scope(c)
              : process_wide_in(c->copyset, path) ? dlopen(path, RTLD_NOW | RTLD_LOCAL) /* a service */
                                                  : NULL;
    if (h != NULL) {
        if (ns_note_handle(c, h) == 0)
            return h;
        dlclose(h);
        set_error(VLCS_E_SYSTEM, "Error loading %s into context '%s': out of memory",
                  base_name(path), c->name);
        return NULL;
    }
    char *real = malloc(PATH_MAX); /* on the heap: see load_tree */
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
    pthread_mutex_lock(&c->copyset->lock);
    h = load_tree(c, real, base_name(path));
    pthread_mutex_unlock(&c->copyset->lock);
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

/* The failure a copy's dlerror() reports next, as glibc's would. */
static __thread char dl_why[PATH_MAX + 256];
static __thread bool dl_why_set;

static void dlerror_set(const char *why)
{
    snprintf(dl_why, sizeof dl_why, "%s", why);
    dl_why_set = true;
}

static const char *dl_error(void)
{
    if (!dl_why_set)
        return NULL;
    dl_why_set = false;
    return dl_why;
}

/* dlopen called by one of the context's copies: a copy of what it names,
 * found from the caller's original file (its RUNPATH, its $ORIGIN). */
static void *copy_dlopen(vlcs_ctx *c, const char *file, int mode, const void *caller)
{
    (void)mode; /* RTLD_GLOBAL would put a copy into the base's global scope */
    struct copyset *cs = c->copyset;
    if (glibc_scoped(file))
        return glibc_scope(c);
    if (process_wide_in(cs, file)) {
        void *fwd = services_open_forwarder(file);
        return fwd != NULL ? fwd : dlopen(file, mode & ~RTLD_GLOBAL);
    }
    /* on the heap: see load_tree */
    struct {
        char real[PATH_MAX], msg[PATH_MAX + 64], why[256];
        struct elf_names from;
    } *b = malloc(sizeof *b);
    if (b == NULL) {
        dlerror_set("out of memory");
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
        h = load_tree(c, b->real, base_name(file));
        if (h == NULL)
            dlerror_set(vlcs_error());
    } else {
        snprintf(b->msg, sizeof b->msg,
                 "%s: cannot open shared object file: No such file or directory", file);
        dlerror_set(b->msg);
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
    struct copyset *cs = c->copyset;
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

const struct ctx_backend copies_backend = {"copies", copies_objects};

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
    struct iterate it = {c->copyset, cb, data};
    pthread_mutex_lock(&it.cs->lock);
    int rc = dl_iterate_phdr(iterate_one, &it);
    pthread_mutex_unlock(&it.cs->lock);
    return rc;
}

/* The original file of c's copy lm (also while it loads: its
 * constructors may ask), for dladdr; NULL if lm is none of c's copies. */
static const char *object_file(vlcs_ctx *c, const void *lm)
{
    struct copyset *cs = c->copyset;
    const struct link_map *m = lm;
    const char *found = NULL;
    pthread_mutex_lock(&cs->lock);
    for (size_t i = 0; i < cs->ncopies && found == NULL; i++)
        if (cs->copies[i].lm == lm || strcmp(cs->copies[i].path, m->l_name) == 0)
            found = cs->copies[i].origin;
    pthread_mutex_unlock(&cs->lock);
    return found;
}


/* Handles for the Python package (vlcs.h, VLCS_INTERNAL_API). */
VLCS_API void *vlcs_ctx_scope(vlcs_ctx *h)
{
    vlcs_ctx *c = ctx_get(h, "finding its scope");
    if (c == NULL)
        return NULL;
    pthread_mutex_lock(&c->lock);
    void *scope = c->copy_mode ? c->copyset->ip : c->has_ns ? c->ip_handle : NULL;
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
    char real[PATH_MAX];
    void *found = NULL;
    pthread_mutex_lock(&c->lock);
    if (c->copy_mode) {
        struct copyset *cs = c->copyset;
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
    } else if (c->has_ns) {
        found = dlmopen(c->lmid, path, RTLD_NOW | RTLD_NOLOAD);
    }
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

VLCS_API const char *vlcs_ctx_object(vlcs_ctx *h, unsigned long i)
{
    vlcs_ctx *c = ctx_get(h, "listing its libraries");
    if (c == NULL)
        return NULL;
    const char *origin = NULL;
    pthread_mutex_lock(&c->lock);
    if (c->copy_mode) {
        pthread_mutex_lock(&c->copyset->lock);
        if (i < c->copyset->ncopies)
            origin = c->copyset->copies[i].origin;
        pthread_mutex_unlock(&c->copyset->lock);
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

int copies_unload(vlcs_ctx *c, char *why, size_t size)
{
    struct copyset *cs = c->copyset;
    if (ctx_close_libraries(c, why, size) != 0)
        return -1;
    if (c->drop_opens) /* the last made first: it may hold those before */
        for (size_t i = cs->ncopies; i-- > 0;)
            drop_opens(reopen_copy, c, cs->copies[i].path);
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
    atomic_store(&c->py_state_dict, NULL);
    fork_forget(c);
    shim_forget(c);
    c->copyset = NULL;
    c->copy_mode = false;
    c->backend = NULL;
    copyset_free(cs);
    copy_env_free(c);
    return 0;
}

/*
 * copies_tree.c - one load in copy mode: the tree of the file asked for,
 * read and resolved as ld.so would from the original files, each library
 * the context lacks copied with its names rewritten, loaded through a new
 * root, its read-only pages then the original's and its constructors run;
 * and which libraries are never copied (glibc's, the services').
 */
#include "common.h"
#include "context.h"
#include "copies.h"
#include "copy_origins.h"
#include "copy_owners.h"
#include "elf_copy.h"
#include "elf_read.h"
#include "elf_search.h"
#include "error.h"
#include "exec_streams.h"
#include "forwarder.h"
#include "handles.h"
#include "program_vars.h"
#include "registry.h"
#include "room.h"
#include "service.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static _Atomic unsigned long serial;

unsigned long copies_serial(void) { return atomic_fetch_add(&serial, 1); }

/* glibc's own libraries: one copy per process, shared by every context. */
static bool glibc_own(const char *name);

/* ... and the Service context's (a service is the base's object, which a
 * copy in the base namespace reaches by its unchanged name). */
static bool process_wide(const char *name)
{
    return services_has(name) || glibc_own(name);
}

/* What libc itself holds, as the context sees it (copies.h).  The
 * others (libm, libresolv, ...) are the process's own, as libvlcs is to
 * code in the context that opens it (a Python of its own importing vlcs). */
bool glibc_scoped(const char *name)
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
bool process_wide_in(const struct copyset *cs, const char *name)
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

int find_copy(struct copyset *cs, const char *origin)
{
    for (size_t i = 0; i < cs->ncopies; i++)
        if (strcmp(cs->copies[i].origin, origin) == 0)
            return (int)i;
    return -1;
}

/* ld.so takes a needed name that a loaded object has as its soname before
 * it searches: oneMKL's libmkl_def.so.3, opened by path, needs
 * libmkl_core.so.3, loaded already from a folder no search names. */
int find_soname(struct copyset *cs, const char *soname)
{
    for (size_t i = 0; i < cs->ncopies; i++)
        if (cs->copies[i].soname != NULL && strcmp(cs->copies[i].soname, soname) == 0)
            return (int)i;
    return -1;
}

/* dlopen with RTLD_DEEPBIND, past a sanitizer's dlopen, which refuses the
 * flag lest the library bind malloc past the sanitizer's: a copy binds the
 * interposer's malloc first, which is the base's, the sanitizer's. */
void *deep_open(const char *path, int bind)
{
    static void *(*real)(const char *, int);
    void *(*f)(const char *, int) = __atomic_load_n(&real, __ATOMIC_RELAXED);
    if (f == NULL) {
        f = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
        if (f == NULL)
            f = dlopen;
        __atomic_store_n(&real, f, __ATOMIC_RELAXED);
    }
    return f(path, bind | RTLD_LOCAL | RTLD_DEEPBIND);
}

/* A loaded copy's read-only pages mapped again from its original, and the
 * copy named after the original's descriptor (copy_origins.c).  Returns
 * the name glibc gave it: freed once the copy is gone, as another thread
 * may be reading it now (glibc frees the new one at dlclose).  *ok: its
 * code is in place. */
char *share_with_origin(struct link_map *lm, const struct elf_names *e, int origin_fd,
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

/* ---- a load's tree ---------------------------------------------------------- */

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

/* A load in the making: its tree, breadth first from the file asked for,
 * and why it failed.  The buffers are on the heap: a library's constructor
 * may dlopen from a thread with a small stack (256 KiB seen), and the
 * copies it loads run constructors that dlopen in turn. */
struct tree {
    vlcs_ctx *c;
    struct copyset *cs;
    const char *shown; /* the file asked for, in errors */
    char *why;         /* WHY_SIZE bytes */
    struct item *items;
    size_t n;    /* items in the tree */
    size_t cap;  /* items allocated: most trees are a few libraries */
    size_t made; /* new copies made */
    bool lazy;   /* copies without their code, constructors run by vlcs */
    int bind;    /* RTLD_NOW, or RTLD_LAZY as the context's code asked */
};

/* Room for one more item (zeroed), moving t->items: VLCS_OK, or a code
 * with t->why. */
static int tree_room(struct tree *t)
{
    if (t->n < t->cap)
        return VLCS_OK;
    if (t->cap == MAX_TREE) {
        snprintf(t->why, WHY_SIZE, "its tree holds more than %d libraries", MAX_TREE);
        return VLCS_E_LIMIT;
    }
    size_t cap = t->cap ? 2 * t->cap : 1;
    struct item *grown = realloc(t->items, cap * sizeof *grown);
    if (grown == NULL) {
        snprintf(t->why, WHY_SIZE, "out of memory");
        return VLCS_E_SYSTEM;
    }
    memset(grown + t->cap, 0, (cap - t->cap) * sizeof *grown);
    t->items = grown;
    t->cap = cap;
    return VLCS_OK;
}

/* Stage 1: each new item read, its names resolved as ld.so would from the
 * original file, new ones queued.  VLCS_OK, or a code with t->why. */
static int tree_read(struct tree *t)
{
    struct copyset *cs = t->cs;
    for (size_t i = 0; i < t->n; i++) {
        struct item *items = t->items, *it = &items[i];
        if (it->existing >= 0) /* its tree is the context's already */
            continue;
        it->ofd = origin_hold(it->origin, t->why, WHY_SIZE);
        if (it->ofd < 0)
            return -it->ofd;
        int code = elf_names_read(it->ofd, it->origin, &it->names, t->why, WHY_SIZE);
        if (code != VLCS_OK)
            return code;
        const char *soname = elf_str(&it->names, it->names.soname);
        if (soname != NULL &&
            elf_new_name(soname, copies_serial(), it->renamed, sizeof it->renamed) != 0) {
            snprintf(t->why, WHY_SIZE, "%s's name %s is too short to be renamed (copy mode needs "
                                       "%d characters)", it->origin, soname, ELF_RENAME_TAIL + 1);
            return VLCS_E_INVALID;
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
                snprintf(t->why, WHY_SIZE, "%s needs %s, which cannot be found", it->origin, need);
                return VLCS_E_NOT_FOUND;
            }
            size_t j = 0;
            while (j < t->n && strcmp(items[j].origin, dep) != 0)
                j++;
            if (j == t->n) {
                int code = tree_room(t);
                if (code != VLCS_OK)
                    return code;
                items = t->items;
                it = &items[i];
                snprintf(items[j].origin, sizeof items[j].origin, "%s", dep);
                items[j].existing = find_copy(cs, dep);
                items[j].fd = items[j].ofd = -1;
                items[j].loader = (int)i;
                t->n++;
            }
            it->dep[k] = (int)j;
        }
    }
    return VLCS_OK;
}

/* Stage 2: each new item's copy, every name it needs rewritten to its
 * dependency's new name (and its unique symbols' bindings made its own).
 * VLCS_OK, or a code with t->why. */
static int tree_copy(struct tree *t)
{
    for (size_t i = 0; i < t->n; i++) {
        struct item *it = &t->items[i];
        if (it->existing >= 0)
            continue;
        struct elf_rename *unique = NULL;
        size_t nunique = elf_unique_symbols(it->ofd, &it->names, &unique);
        struct elf_rename *rn = it->rn = malloc((1 + ELF_MAX_NEEDED + nunique) * sizeof *rn);
        if (rn == NULL) {
            free(unique);
            snprintf(t->why, WHY_SIZE, "out of memory");
            return VLCS_E_SYSTEM;
        }
        size_t nr = 0;
        for (size_t k = 0; k < nunique; k++)
            rn[nr++] = unique[k];
        free(unique);
        if (it->renamed[0])
            rn[nr++] = (struct elf_rename){it->names.strtab_off + it->names.soname, it->renamed};
        for (size_t k = 0; k < it->names.nneeded; k++) {
            if (it->dep[k] < 0)
                continue;
            const struct item *d = &t->items[it->dep[k]];
            const char *to = d->existing >= 0 ? t->cs->copies[d->existing].renamed : d->renamed;
            const char *need = elf_str(&it->names, it->names.needed[k]);
            if (to == NULL || to[0] == '\0' || strlen(to) != strlen(need)) {
                snprintf(t->why, WHY_SIZE,
                         "%s needs %s, but that file calls itself %s: copy mode renames a "
                         "library only under the name it is needed by",
                         it->origin, need, d->existing >= 0 || d->names.soname == UINT64_MAX
                                               ? "nothing"
                                               : elf_str(&d->names, d->names.soname));
                return VLCS_E_INVALID;
            }
            rn[nr++] = (struct elf_rename){it->names.strtab_off + it->names.needed[k], to};
        }
        it->nrn = nr;
        it->fd = elf_copy(it->ofd, it->origin, base_name(it->origin), rn, nr, &it->names, t->lazy,
                          t->why, WHY_SIZE);
        if (it->fd < 0) {
            int code = -it->fd;
            it->fd = -1;
            return code;
        }
        t->made++;
    }
    return VLCS_OK;
}

/* Stage 3: the root, a generated object whose DT_NEEDED lists the
 * interposer first, then the context's own global library, then the
 * services' forwarders (their entries that vlcs replaces, libpython's
 * PyDict_* on the module table, come before the base's), then the new
 * copies, the asked-for file's first.  Its memfd, or -1 with the error set. */
static int tree_root(struct tree *t)
{
    enum { MAX_SERVICES = 16 };
    struct copyset *cs = t->cs;
    size_t cap = t->made + 2 + cs->nopened_global + MAX_SERVICES;
    const char **needed = calloc(cap, sizeof *needed);
    char (*paths)[FD_PATH_SIZE] = calloc(cap, sizeof *paths);
    if (needed == NULL || paths == NULL) {
        free(needed);
        free(paths);
        set_error(VLCS_E_SYSTEM, "Error loading %s into context '%s': out of memory", t->shown,
                  t->c->name);
        return -1;
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
    /* then what its code opened RTLD_GLOBAL, in that order */
    for (size_t k = 0; k < cs->nopened_global; k++, nn++) {
        snprintf(paths[nn], sizeof *paths, "%s", cs->copies[cs->opened_global[k].copy].path);
        needed[nn] = paths[nn];
    }
    size_t nsvc = services_paths(paths + nn, MAX_SERVICES,
                                 cs->global_real != NULL ? cs->global_soname : NULL);
    for (size_t k = 0; k < nsvc; k++, nn++)
        needed[nn] = paths[nn];
    for (size_t i = 0; i < t->n; i++)
        if (t->items[i].existing < 0 && t->items[i].fd >= 0) {
            fd_path(paths[nn], sizeof *paths, t->items[i].fd);
            needed[nn] = paths[nn];
            nn++;
        }
    /* a context that runs programs: its libraries' stdin, stdout and
     * stderr are its own, defined first (exec_streams.c); glibc's other
     * variables that the program holds are the program's copies, which
     * glibc's code uses (program_vars.c) */
    struct root_var vars[3 + 24];
    size_t nvars = 0;
    if (t->c->cp.std_made) {
        static const char *const streams[3] = {"stdin", "stdout", "stderr"};
        for (int k = 0; k < 3; k++)
            vars[nvars++] = (struct root_var){streams[k], &t->c->cp.std[k], sizeof(FILE *)};
    }
    const struct program_var *pv;
    size_t npv = program_vars(&pv);
    for (size_t k = 0; k < npv && nvars < sizeof vars / sizeof *vars; k++) {
        bool defined = false;
        for (size_t j = 0; j < nvars && !defined; j++)
            defined = strcmp(vars[j].name, pv[k].name) == 0;
        if (!defined)
            vars[nvars++] = (struct root_var){pv[k].name, pv[k].addr, pv[k].size};
    }
    int root = forwarder_root_vars(needed, nn, vars, nvars, t->why, WHY_SIZE);
    free(needed);
    free(paths);
    if (root < 0) {
        set_error(-root, "Error loading %s into context '%s': %s", t->shown, t->c->name, t->why);
        return -1;
    }
    return root;
}

/* Stage 4: the new copies join the context's before their constructors
 * run: one may dlopen its own library by name (oneTBB's tbbmalloc does),
 * which must find the copy being loaded; and one may ask whose copy it is
 * (owners: libpython's forwarder, for the interpreter dict).  Room for
 * them in cs->copies is made already.  False when out of memory (those
 * that joined stay, for tree_unjoin). */
static bool tree_join(struct tree *t)
{
    struct copyset *cs = t->cs;
    for (size_t i = 0; i < t->n; i++) {
        struct item *it = &t->items[i];
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
            (soname != NULL && cp->soname == NULL) || owners_add(cp->path, t->c) != 0) {
            free(cp->origin);
            free(cp->renamed);
            free(cp->soname);
            return false;
        }
        it->fd = it->ofd = -1;
        cs->ncopies++;
    }
    return true;
}

/* The copies from first on were not loaded: they go. */
static void tree_unjoin(struct copyset *cs, size_t first)
{
    while (cs->ncopies > first) {
        struct copy *cp = &cs->copies[--cs->ncopies];
        owners_remove(cp->path);
        close(cp->fd);
        origin_release(cp->origin_fd);
        free(cp->origin);
        free(cp->renamed);
        free(cp->soname);
    }
}

/* The link map of the copy loaded from path: among the `made` objects
 * after root's in the list (ld.so appends a load's new objects together,
 * under its lock, and root holds them; past them the list may be
 * changing), else asked of ld.so by name, which compares it with every
 * object of the process (thousands in copy mode) and closes again. */
static struct link_map *loaded_map(struct link_map *root, size_t made, const char *path)
{
    struct link_map *lm = root != NULL ? root->l_next : NULL;
    for (size_t n = 0; lm != NULL && n < made; n++, lm = n < made ? lm->l_next : NULL)
        if (strcmp(lm->l_name, path) == 0)
            return lm;
    void *h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    lm = NULL;
    if (h != NULL && dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0)
        lm = NULL;
    if (h != NULL)
        dlclose(h); /* root holds it */
    return lm;
}

/* Stage 5: once loaded, the new copies' read-only pages are the original
 * file's, as a namespace's would be, and each is named after it.  Whether
 * every copy's code is in place. */
static bool tree_place(struct tree *t, size_t first, void *rh)
{
    struct copyset *cs = t->cs;
    bool placed = true;
    struct link_map *root = NULL;
    if (dlinfo(rh, RTLD_DI_LINKMAP, &root) != 0)
        root = NULL;
    for (size_t i = 0, k = first; i < t->n && k < cs->ncopies; i++) {
        struct item *it = &t->items[i];
        if (it->existing >= 0 || it->names.strtab == NULL)
            continue;
        struct copy *cp = &cs->copies[k++];
        struct link_map *lm = loaded_map(root, t->made, cp->path);
        if (lm != NULL) {
            cp->addr = it->base = lm->l_addr;
            owners_loaded(cp->path, lm);
            bool ok;
            cp->load_name =
                share_with_origin(lm, &it->names, cp->origin_fd, cp->fd, it->rn, it->nrn, &ok);
            placed = placed && ok;
        } else {
            placed = false;
        }
        cp->lm = lm;
    }
    return placed;
}

static void tree_free(struct tree *t)
{
    for (size_t i = 0; i < t->n; i++) {
        struct item *it = &t->items[i];
        if (it->fd >= 0)
            close(it->fd);
        origin_release(it->ofd);
        if (it->names.strtab != NULL)
            elf_names_free(&it->names);
        free(it->rn);
    }
    free(t->items);
    free(t->why);
}

/* Loaded through the new root (its memfd: kept, or closed when it cannot
 * be loaded) opened with RTLD_DEEPBIND; the handle of the first new copy,
 * or NULL with the error set. */
static void *tree_open(struct tree *t, int root, size_t first)
{
    vlcs_ctx *c = t->c;
    struct copyset *cs = t->cs;
    bool joined = tree_join(t);
    size_t globals = cs->nopened_global;
    char rootpath[FD_PATH_SIZE];
    fd_path(rootpath, sizeof rootpath, root);
    dlerror();
    void *rh = joined ? deep_open(rootpath, t->bind) : NULL;
    if (rh == NULL || ns_note_handle(c, rh) != 0) {
        if (rh != NULL) {
            dlclose(rh);
            set_error(VLCS_E_SYSTEM, "Error loading %s into context '%s': out of memory",
                      t->shown, c->name);
        } else if (joined) {
            load_error(c, t->shown, dlerror());
        } else {
            set_error(VLCS_E_SYSTEM, "Error loading %s into context '%s': out of memory",
                      t->shown, c->name);
        }
        tree_unjoin(cs, first);
        close(root);
        return NULL;
    }
    cs->root_fds[cs->nroots++] = root; /* open while the copies are loaded */
    struct link_map *rm = NULL;
    if (dlinfo(rh, RTLD_DI_LINKMAP, &rm) == 0 && rm != NULL) {
        cs->roots[cs->nroot_maps++] = rm;
        /* what constructors that ran in dlopen opened RTLD_GLOBAL (a copy
         * loaded whole runs them there), as open_global gives earlier roots */
        for (size_t k = globals; k < cs->nopened_global; k++)
            search_lists_append(&rm, 1, cs->copies[cs->opened_global[k].copy].lm, NULL, NULL,
                                &cs->grown);
    }
    if (!tree_place(t, first, rh) && t->lazy) {
        set_error(VLCS_E_SYSTEM, "Error loading %s into context '%s': its code could not be "
                  "mapped (out of memory?)", t->shown, c->name);
        return NULL;
    }
    if (t->lazy) { /* their code is in place: their constructors, dependencies first */
        char *done = calloc(t->n, 1);
        if (done == NULL) {
            set_error(VLCS_E_SYSTEM, "Error loading %s into context '%s': out of memory",
                      t->shown, c->name);
            return NULL; /* unloaded with the context: its constructors never ran */
        }
        init_tree(t->items, 0, done);
        free(done);
    }
    if (cs->global_real != NULL && cs->global_copy < 0)
        cs->global_copy = find_copy(cs, cs->global_real);
    return dlopen(cs->copies[first].path, t->bind | RTLD_NOLOAD);
}

void *copies_load_tree(vlcs_ctx *c, const char *real, const char *shown, int how)
{
    struct copyset *cs = c->cp.set;
    int have = how & COPIES_AGAIN ? -1 : find_copy(cs, real);
    if (have >= 0)
        return dlopen(cs->copies[have].path, RTLD_NOW | RTLD_NOLOAD);
    struct tree t = {.c = c, .cs = cs, .shown = shown, .why = malloc(WHY_SIZE),
                     .bind = how & COPIES_LAZY ? RTLD_LAZY : RTLD_NOW};
    if (t.why == NULL || tree_room(&t) != VLCS_OK) {
        free(t.why);
        set_error(VLCS_E_SYSTEM, "Error loading %s into context '%s': out of memory", shown, c->name);
        return NULL;
    }
    snprintf(t.items[0].origin, sizeof t.items[0].origin, "%s", real);
    t.items[0].existing = -1;
    t.items[0].fd = t.items[0].ofd = -1;
    t.items[0].loader = -1;
    t.n = 1;
    void *h = NULL;
    int code = tree_read(&t);
    /* A program's libraries bind to the context's streams, made before
     * any constructor runs (C++'s std::cout keeps what stdout is then). */
    if (code == VLCS_OK && c->loading_program && streams_for_copies(c) != 0)
        goto out;
    /* Room for the new copies and the root: their maps, their memfds. */
    size_t fresh = 1;
    for (size_t i = 0; i < t.n; i++)
        fresh += t.items[i].existing < 0;
    if (code == VLCS_OK && room_for_load(c, shown, fresh, fresh) != 0)
        goto out;
    /* Copies without their code (mapped from the original once loaded) and
     * constructors run then, when nothing of any new copy's code runs in
     * dlopen: most of a library's file is code, copied only to be given
     * back (OpenBLAS: 33 of 36 MB). */
    t.lazy = code == VLCS_OK;
    for (size_t i = 0; i < t.n && t.lazy; i++)
        t.lazy = t.items[i].existing >= 0 || elf_lazy_ok(t.items[i].ofd, &t.items[i].names);
    if (code == VLCS_OK)
        code = tree_copy(&t);
    if (code != VLCS_OK) {
        set_error(code, "Error loading %s into context '%s': %s", shown, c->name, t.why);
        goto out;
    }
    int root = tree_root(&t);
    if (root < 0)
        goto out;
    if (array_grow((void **)&cs->copies, &cs->capcopies, cs->ncopies + t.made, sizeof *cs->copies) ||
        array_grow((void **)&cs->root_fds, &cs->caproots, cs->nroots + 1, sizeof *cs->root_fds) ||
        array_grow((void **)&cs->roots, &cs->caproot_maps, cs->nroot_maps + 1, sizeof *cs->roots)) {
        close(root);
        set_error(VLCS_E_SYSTEM, "Error loading %s into context '%s': out of memory", shown, c->name);
        goto out;
    }
    h = tree_open(&t, root, cs->ncopies);
out:
    tree_free(&t);
    return h;
}

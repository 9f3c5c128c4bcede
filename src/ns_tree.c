/*
 * ns_tree.c - a load into a namespace asking the file system once per
 * library, and nothing it asked before.
 *
 * ld.so finds each library a file needs by searching: every RUNPATH
 * folder, LD_LIBRARY_PATH, ld.so.cache, the system's folders, for every
 * namespace again (for numpy, twenty calls a context, most of them
 * misses).  Here the first load of a file finds its tree as ld.so would
 * (elf_search.c, whose answers are remembered) and keeps it as a plan: its
 * libraries, dependencies first, each with the path ld.so would load it by
 * and its soname.  Every load of that file then loads the libraries of the
 * plan the namespace lacks by those paths before the file itself, so that
 * each name ld.so looks for is one a loaded object has as its soname: it
 * searches nothing, and opens each library once.  glibc's own stubs
 * (libpthread.so.0, libdl.so.2, ...) come from descriptors the process
 * holds, so they cost no call at all.
 *
 * A plan is made again after vlcs_invalidate_caches (resolved.c's
 * generation).  What cannot be planned (a file that cannot be read, a name
 * that cannot be found, a library that does not load on its own: one that
 * needs a symbol of a sibling it does not name) is left to ld.so.
 */
#include "common.h"
#include "context.h"
#include "copy_origins.h"
#include "elf_search.h"
#include "handles.h"
#include "ns_tree.h"
#include "registry.h"
#include "keyed.h"
#include "resolved.h"
#include "service.h"

#include <elf.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_ITEMS = 128 };

/* ---- plans ----------------------------------------------------------------- */

struct dep {
    char *path;   /* as ld.so would load it: the folder it searched, and the name */
    char *soname; /* NULL: none (ld.so then matches it by path only) */
};

struct plan {
    unsigned generation; /* resolved_generation() it was made at */
    bool unplannable;    /* ld.so finds its tree */
    struct dep *deps;    /* dependencies first; not the file itself */
    size_t ndeps;
};

static pthread_mutex_t plans_lock = PTHREAD_MUTEX_INITIALIZER;
static struct keyed plans; /* the file's real path and LD_LIBRARY_PATH -> struct plan */

static void plan_clear(struct plan *p)
{
    for (size_t i = 0; i < p->ndeps; i++) {
        free(p->deps[i].path);
        free(p->deps[i].soname);
    }
    free(p->deps);
    p->deps = NULL;
    p->ndeps = 0;
}

/* ---- making a plan ------------------------------------------------------------ */

struct item {
    char origin[PATH_MAX]; /* its real path */
    char path[PATH_MAX];   /* the path ld.so would load it by */
    struct elf_names names;
    int loader; /* the item that first needed it, -1: the file asked for */
    bool done;  /* placed in the load order */
};

/* What every namespace has already, or reaches through the Service
 * context: ld.so takes the name for it without a search. */
static bool everywhere(const char *name)
{
    return strncmp(name, "libc.so", 7) == 0 || strncmp(name, "ld-linux", 8) == 0 ||
           strncmp(name, "ld64.so", 7) == 0 || services_has(name);
}

/* Breadth first from items[0]: each item read (from the file copy mode
 * may hold already), the names it needs resolved and queued, into *count
 * items.  Whether the whole tree is known. */
static bool read_tree(struct item *items, size_t *count)
{
    char why[PATH_MAX + 256];
    size_t n = 1;
    *count = 1;
    for (size_t i = 0; i < n; i++, *count = n) {
        struct item *it = &items[i];
        int fd = origin_hold(it->origin, why, sizeof why);
        if (fd < 0)
            return false;
        int code = elf_names_read(fd, it->origin, &it->names, why, sizeof why);
        origin_release(fd);
        if (code != VLCS_OK)
            return false;
        for (size_t k = 0; k < it->names.nneeded; k++) {
            const char *need = elf_str(&it->names, it->names.needed[k]);
            if (everywhere(need))
                continue;
            struct elf_from chain[32];
            size_t nchain = 0;
            for (int j = (int)i; j >= 0 && nchain < 32; j = items[j].loader)
                chain[nchain++] = (struct elf_from){&items[j].names, items[j].origin};
            char dep[PATH_MAX], found[PATH_MAX];
            if (elf_resolve_found(need, chain, nchain, dep, found) != 0)
                return false; /* ld.so says what is missing */
            size_t j = 0;
            while (j < n && strcmp(items[j].origin, dep) != 0)
                j++;
            if (j < n)
                continue;
            if (n == MAX_ITEMS)
                return false;
            snprintf(items[n].origin, sizeof items[n].origin, "%s", dep);
            snprintf(items[n].path, sizeof items[n].path, "%s", found);
            items[n].loader = (int)i;
            n++;
        }
    }
    *count = n;
    return true;
}

/* items[i]'s dependencies, then items[i], into order. */
static void post_order(struct item *items, size_t n, size_t i, size_t *order, size_t *norder)
{
    if (items[i].done)
        return;
    items[i].done = true;
    for (size_t k = 0; k < items[i].names.nneeded; k++) {
        const char *need = elf_str(&items[i].names, items[i].names.needed[k]);
        for (size_t j = 1; j < n; j++) {
            const char *so = elf_str(&items[j].names, items[j].names.soname);
            if (!items[j].done && ((so != NULL && strcmp(so, need) == 0) ||
                                   strcmp(base_name(items[j].path), need) == 0))
                post_order(items, n, j, order, norder);
        }
    }
    order[(*norder)++] = i;
}

/* p's dependencies (p->deps), from the file at real; false when its tree
 * cannot be known (out of memory included). */
static bool make_plan(struct plan *p, const char *real)
{
    struct item *items = calloc(MAX_ITEMS, sizeof *items);
    size_t *order = calloc(MAX_ITEMS, sizeof *order);
    size_t n = 0, norder = 0;
    bool ok = items != NULL && order != NULL;
    if (ok) {
        snprintf(items[0].origin, sizeof items[0].origin, "%s", real);
        items[0].loader = -1;
        ok = read_tree(items, &n);
    }
    if (ok) {
        post_order(items, n, 0, order, &norder);
        p->deps = calloc(norder, sizeof *p->deps);
        ok = p->deps != NULL;
    }
    for (size_t k = 0; ok && k < norder; k++) {
        const struct item *it = &items[order[k]];
        if (order[k] == 0)
            continue; /* the file itself: the caller loads it as asked */
        const char *so = elf_str(&it->names, it->names.soname);
        struct dep *d = &p->deps[p->ndeps];
        d->path = strdup(it->path);
        d->soname = so != NULL ? strdup(so) : NULL;
        p->ndeps++;
        ok = d->path != NULL && (so == NULL || d->soname != NULL);
    }
    for (size_t i = 0; i < n; i++)
        if (items[i].names.strtab != NULL)
            elf_names_free(&items[i].names);
    free(items);
    free(order);
    if (!ok)
        plan_clear(p);
    return ok;
}

/* ---- loading by a plan -------------------------------------------------------- */

/* The SONAME of a loaded object, read from its dynamic section (ld.so has
 * made DT_STRTAB an address there, unless the section is read-only); NULL
 * if it has none. */
static const char *soname_of(const struct link_map *lm)
{
    uintptr_t strtab = 0;
    const ElfW(Dyn) *soname = NULL;
    for (const ElfW(Dyn) *d = lm->l_ld; d != NULL && d->d_tag != DT_NULL; d++)
        if (d->d_tag == DT_STRTAB)
            strtab = d->d_un.d_ptr;
        else if (d->d_tag == DT_SONAME)
            soname = d;
    if (strtab == 0 || soname == NULL)
        return NULL;
    if (strtab < lm->l_addr) /* not relocated in place */
        strtab += lm->l_addr;
    return (const char *)strtab + soname->d_un.d_val;
}

struct query {
    const vlcs_ctx *c;
    const char *name;
    bool found;
};

/* Called by dl_iterate_phdr, which holds the lock under which ld.so links
 * objects into a namespace's list and out of it: the walk is safe from a
 * dlclose in another thread.  Stops at once. */
static int walk_locked(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)info;
    (void)size;
    struct query *q = arg;
    const struct link_map *lm = q->c->ns.nstart > 0 ? q->c->ns.start[0] : NULL;
    while (lm != NULL && lm->l_prev != NULL)
        lm = lm->l_prev;
    for (; lm != NULL && !q->found; lm = lm->l_next) {
        const char *s = soname_of(lm);
        q->found = s != NULL && strcmp(s, q->name) == 0;
    }
    return 1;
}

/* Whether an object of c's namespace has name as its soname. */
static bool in_namespace(const vlcs_ctx *c, const char *name)
{
    struct query q = {c, name, false};
    dl_iterate_phdr(walk_locked, &q);
    return q.found;
}

/* glibc's stubs since 2.34 (and its small libraries before): held by the
 * process and loaded by /proc/PID/fd/N, which asks the file system
 * nothing; named so in the namespace (a debugger opens that path). */
static const char *const stubs[] = {"libpthread.so.0", "libdl.so.2", "librt.so.1",
                                    "libutil.so.1", "libanl.so.1", NULL};
static char stub_paths[sizeof stubs / sizeof *stubs][FD_PATH_SIZE];
static pthread_once_t stubs_once = PTHREAD_ONCE_INIT;

static void hold_stubs(void)
{
    char real[PATH_MAX];
    for (size_t i = 0; stubs[i] != NULL; i++) {
        int fd = elf_resolve(stubs[i], NULL, 0, real) == 0 ? origin_keep(real) : -1;
        if (fd >= 0)
            fd_path(stub_paths[i], sizeof stub_paths[i], fd);
    }
}

static const char *load_path(const struct dep *d)
{
    if (d->soname == NULL)
        return d->path;
    pthread_once(&stubs_once, hold_stubs);
    for (size_t i = 0; stubs[i] != NULL; i++)
        if (strcmp(d->soname, stubs[i]) == 0 && stub_paths[i][0] != '\0')
            return stub_paths[i];
    return d->path;
}

int ns_preload_tree(vlcs_ctx *c, const char *path)
{
    /* a name (not a path) ld.so looks up from libvlcs's own RUNPATH too;
     * a /proc/PID/fd/N (a program's copy) has no file to plan from */
    if (strchr(path, '/') == NULL || strncmp(path, "/proc/", 6) == 0)
        return -1;
    char *real = malloc(PATH_MAX), *key = malloc(PATH_MAX * 2);
    int rc = -1;
    if (real == NULL || key == NULL || elf_resolve(path, NULL, 0, real) != 0)
        goto out;
    const char *lib_path = getenv("LD_LIBRARY_PATH");
    if ((size_t)snprintf(key, PATH_MAX * 2, "%s\x1f%s", real, lib_path ? lib_path : "") >=
        PATH_MAX * 2)
        goto out;
    /* The plan's copy: made (once) and read under the lock, loaded without
     * it (a library's constructor may load in another context). */
    struct plan mine = {0};
    pthread_mutex_lock(&plans_lock);
    struct keyed_entry *e = keyed_put(&plans, key);
    struct plan *p = e != NULL ? e->value : NULL;
    if (e != NULL && p == NULL && (p = e->value = calloc(1, sizeof *p)) != NULL)
        p->generation = resolved_generation() - 1; /* made below */
    if (p != NULL && p->generation != resolved_generation()) {
        plan_clear(p);
        p->generation = resolved_generation();
        p->unplannable = !make_plan(p, real);
    }
    bool ok = p != NULL && !p->unplannable && (mine.deps = calloc(p->ndeps + 1, sizeof *mine.deps));
    for (size_t i = 0; ok && i < p->ndeps; i++, mine.ndeps++) {
        mine.deps[i].path = strdup(p->deps[i].path);
        mine.deps[i].soname = p->deps[i].soname ? strdup(p->deps[i].soname) : NULL;
        ok = mine.deps[i].path != NULL && (p->deps[i].soname == NULL || mine.deps[i].soname);
    }
    pthread_mutex_unlock(&plans_lock);
    if (!ok)
        goto done;
    size_t before = c->nhandles;
    rc = 0;
    for (size_t i = 0; i < mine.ndeps && rc == 0; i++) {
        const struct dep *d = &mine.deps[i];
        if (d->soname != NULL && (in_namespace(c, d->soname) || services_has(d->soname)))
            continue;
        void *h = dlmopen(c->ns.lmid, load_path(d), RTLD_NOW | RTLD_LOCAL);
        if (h == NULL || ns_note_handle(c, h) != 0) {
            if (h != NULL)
                dlclose(h);
            rc = -1; /* it needs more than its own tree: ld.so loads it with its loader's */
        }
    }
    if (rc != 0)
        ns_close_since(c, before);
    (void)dlerror();
done:
    plan_clear(&mine);
out:
    free(real);
    free(key);
    return rc;
}

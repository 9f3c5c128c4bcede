/*
 * ns_tree.c - a load into a namespace, asking the file system as little as
 * a second context should: the libraries the file needs are found as ld.so
 * would find them (elf_search.c, whose answers are remembered) and read
 * from descriptors held while the namespace lives (copy_origins.c), then
 * loaded by the paths ld.so would have found, dependencies first.  When ld.so then loads
 * the file, each name it needs is one a loaded object has as its soname:
 * it searches nothing (a miss in every RUNPATH folder, ld.so.cache, the
 * system's folders: 22 calls for numpy's second context before), and opens
 * each library once.
 *
 * Anything it cannot plan (a file it cannot read, a name it cannot find, a
 * library that does not load on its own: one that needs a symbol of a
 * sibling it does not name) is left to ld.so, as before.
 */
#include "common.h"
#include "context.h"
#include "copy_origins.h"
#include "elf_search.h"
#include "handles.h"
#include "ns_tree.h"
#include "registry.h"
#include "service.h"

#include <elf.h>
#include <link.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_ITEMS = 128 };

struct item {
    char origin[PATH_MAX]; /* its real path */
    char path[PATH_MAX];   /* the path ld.so would load it by (its name in the namespace) */
    struct elf_names names;
    int ofd;    /* held (copy_origins.c), or -1 */
    int loader; /* the item that first needed it, -1: the file asked for */
    bool done;  /* placed in the load order */
};

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

/* Whether an object of c's namespace has name as its soname: ld.so takes a
 * needed name for it without searching. */
static bool in_namespace(const vlcs_ctx *c, const char *name)
{
    struct query q = {c, name, false};
    dl_iterate_phdr(walk_locked, &q);
    return q.found;
}

int ns_hold(vlcs_ctx *c, int fd)
{
    for (size_t i = 0; i < c->ns.nheld; i++)
        if (c->ns.held[i] == fd) {
            origin_release(fd);
            return 0;
        }
    if (array_grow((void **)&c->ns.held, &c->ns.capheld, c->ns.nheld, sizeof *c->ns.held) != 0) {
        origin_release(fd);
        return -1;
    }
    c->ns.held[c->ns.nheld++] = fd;
    return 0;
}

/* Breadth first from items[0]: each item read, the names it needs that
 * the namespace lacks resolved and queued, into *n items.  Whether the
 * whole tree is planned. */
static bool plan(vlcs_ctx *c, struct item *items, size_t *count)
{
    char why[PATH_MAX + 256];
    size_t n = 1;
    *count = 1;
    for (size_t i = 0; i < n; i++, *count = n) {
        struct item *it = &items[i];
        it->ofd = origin_hold(it->origin, why, sizeof why);
        if (it->ofd < 0 || ns_hold(c, it->ofd) != 0 ||
            elf_names_read(it->ofd, it->origin, &it->names, why, sizeof why) != VLCS_OK)
            return false;
        for (size_t k = 0; k < it->names.nneeded; k++) {
            const char *need = elf_str(&it->names, it->names.needed[k]);
            if (in_namespace(c, need) || services_has(need))
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
            items[n].ofd = -1;
            items[n].loader = (int)i;
            n++;
        }
    }
    *count = n;
    return true;
}

/* items[i]'s dependencies, then items[i], into order (loads of the same
 * file once). */
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
                                   strcmp(base_name(items[j].origin), need) == 0))
                post_order(items, n, j, order, norder);
        }
    }
    order[(*norder)++] = i;
}

int ns_preload_tree(vlcs_ctx *c, const char *path)
{
    struct item *items = calloc(MAX_ITEMS, sizeof *items);
    size_t *order = calloc(MAX_ITEMS, sizeof *order);
    void **handles = calloc(MAX_ITEMS, sizeof *handles);
    size_t n = 0, norder = 0, loaded = 0;
    int rc = -1;
    /* a name (not a path) ld.so looks up from libvlcs's own RUNPATH too;
     * a /proc/PID/fd/N (a program's copy) has no file to hold */
    if (strchr(path, '/') == NULL || strncmp(path, "/proc/", 6) == 0)
        goto out;
    if (items == NULL || order == NULL || handles == NULL ||
        elf_resolve(path, NULL, 0, items[0].origin) != 0)
        goto out;
    items[0].ofd = -1;
    items[0].loader = -1;
    if (!plan(c, items, &n))
        goto out;
    post_order(items, n, 0, order, &norder);
    rc = 0;
    for (size_t k = 0; k < norder && rc == 0; k++) {
        if (order[k] == 0)
            continue; /* the file asked for: the caller loads it as asked */
        void *h = dlmopen(c->ns.lmid, items[order[k]].path, RTLD_NOW | RTLD_LOCAL);
        if (h == NULL)
            rc = -1; /* it needs more than its own tree: ld.so loads it with its loader's */
        else
            handles[loaded++] = h;
    }
    for (size_t k = 0; k < loaded; k++)
        if (rc == 0 && ns_note_handle(c, handles[k]) != 0)
            dlclose(handles[k]);
    for (size_t k = loaded; rc != 0 && k-- > 0;) /* dependents first */
        dlclose(handles[k]);
    (void)dlerror();
out:
    for (size_t i = 0; i < n; i++)
        if (items[i].names.strtab != NULL)
            elf_names_free(&items[i].names);
    free(items);
    free(order);
    free(handles);
    return rc;
}

void ns_release_held(vlcs_ctx *c)
{
    for (size_t i = 0; i < c->ns.nheld; i++)
        origin_release(c->ns.held[i]);
    free(c->ns.held);
    c->ns.held = NULL;
    c->ns.nheld = c->ns.capheld = 0;
}

/*
 * ns_global.c - dlopen(RTLD_GLOBAL) by code inside a context's namespace.
 *
 * glibc keeps the list that RTLD_GLOBAL adds to for the base namespace
 * only: in a dlmopen namespace, add_to_global_resize dereferences the
 * missing list and ends the process (glibc 2.36), so the interposer never
 * lets the flag through to it.  Libraries rely on the flag all the same:
 * oneMKL's libmkl_rt opens libmkl_core, its threading and interface
 * libraries RTLD_GLOBAL, and the kernels it opens next need their symbols
 * (without them MKL prints "Cannot load libmkl_intel_thread" and ends the
 * process).
 *
 * A namespace has a scope that every object in it searches first all the
 * same: the search list of its first object, the root (every later
 * object's first scope points to it).  A load with RTLD_GLOBAL is made
 * here: the library loaded into the namespace without the flag, then it
 * and what it needs appended to the root's list, the way glibc appends to
 * the base's (a new array first, its count raised after: glibc's lookups
 * read the count first), so objects loaded before and after bind to its
 * symbols, and dlsym(RTLD_DEFAULT) in the namespace finds them.  The
 * objects appended are made RTLD_NODELETE: glibc does not know they are in
 * that list, and would leave it pointing at them once unloaded.
 *
 * The list is a field of glibc's private struct link_map (l_searchlist, a
 * struct r_scope_elem, unchanged since glibc 2.3); its offset is found
 * once, from what it holds: the only pointer from one object's link map
 * into the middle of another's is its first scope, which points into the
 * root's at the list, and the list there starts with the root and names
 * objects of the namespace.  Where that is not found (another libc, a
 * glibc laid out differently), the library loads without the flag, as
 * before, and one line on stderr says so.
 */
#include "common.h"
#include "ns_global.h"
#include "context.h"
#include "dl_why.h"
#include "elf_read.h"
#include "elf_search.h"
#include "objects.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* glibc's struct r_scope_elem (include/link.h) */
struct scope {
    struct link_map **list;
    unsigned int n;
};

/* The lists this file made for a namespace's root, newest first: kept
 * until the namespace goes (a lookup may still read a replaced one). */
struct grown {
    struct grown *prev;
    struct link_map *maps[];
};

/* How far into a link map the search list is looked for: past the
 * public fields and l_info[], before the TLS fields (about 730 bytes in
 * glibc 2.34-2.43); every link map is larger. */
#define MAP_SCAN 1024
/* more objects than a namespace's scope is taken to hold: a guard
 * against reading a count that is not one (and a list that fits a pipe) */
#define MAX_SCOPE 4096

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long list_at; /* l_searchlist's offset; 0: not looked for yet, -1: not found */
static bool warned;

/* size bytes at addr, read by the kernel (a write to a pipe): false where
 * they are not all mapped, instead of a fault, or do not fit the pipe
 * (which never blocks). */
static bool peek(const void *addr, void *out, size_t size)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0)
        return false;
    bool ok = write(p[1], addr, size) == (ssize_t)size && read(p[0], out, size) == (ssize_t)size;
    close(p[0]);
    close(p[1]);
    return ok;
}

static bool in_namespace(struct link_map *root, const struct link_map *m)
{
    for (struct link_map *l = root; l != NULL; l = l->l_next)
        if (l == m)
            return true;
    return false;
}

/* The search list at offset at of map: it starts with map and names
 * objects of root's namespace, each once.  Read whole into *s (list
 * malloc'd, the caller frees it) when it does. */
static bool read_list(struct link_map *root, struct link_map *map, long at, struct scope *s)
{
    struct scope head;
    if (!peek((char *)map + at, &head, sizeof head) || head.n == 0 || head.n > MAX_SCOPE ||
        head.list == NULL)
        return false;
    struct link_map **copy = malloc(head.n * sizeof *copy);
    if (copy == NULL || !peek(head.list, copy, head.n * sizeof *copy) || copy[0] != map) {
        free(copy);
        return false;
    }
    for (unsigned i = 0; i < head.n; i++) {
        bool twice = false;
        for (unsigned j = 0; j < i && !twice; j++)
            twice = copy[j] == copy[i];
        if (twice || !in_namespace(root, copy[i])) {
            free(copy);
            return false;
        }
    }
    s->list = copy;
    s->n = head.n;
    return true;
}

/* The offset of l_searchlist, from the root and the objects after it:
 * each holds one pointer into the middle of the root's link map, the
 * same in all, and the list there is the root's.  -1: not found. */
static long find_list_at(struct link_map *root)
{
    long at = -1;
    int seen = 0;
    for (struct link_map *m = root->l_next; m != NULL && seen < 2; m = m->l_next, seen++) {
        uintptr_t words[MAP_SCAN / sizeof(uintptr_t)];
        if (!peek(m, words, sizeof words))
            return -1;
        long here = -1;
        for (size_t i = 0; i < sizeof words / sizeof *words; i++) {
            uintptr_t w = words[i], r = (uintptr_t)root;
            /* past the public fields: l_prev and l_loader point at the root itself */
            if (w <= r + sizeof(struct link_map) || w >= r + MAP_SCAN || (w - r) % sizeof w != 0)
                continue;
            if (here >= 0 && here != (long)(w - r))
                return -1; /* two such pointers: not sure which is the list */
            here = (long)(w - r);
        }
        if (here < 0 || (at >= 0 && here != at))
            return -1;
        at = here;
    }
    struct scope s;
    if (at < 0 || !read_list(root, root, at, &s))
        return -1;
    free(s.list);
    return at;
}

/* m made RTLD_NODELETE: it stays as long as the root's list names it. */
static bool pin(Lmid_t lmid, const struct link_map *m)
{
    void *h = dlmopen(lmid, m->l_name, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
    if (h == NULL)
        return false;
    dlclose(h); /* the flag stays; the reference was only this call's */
    return true;
}

/* Appends the objects of h's search list (h and what it needs) that the
 * root's lacks; false where the lists cannot be read. */
static bool add(vlcs_ctx *c, void *h)
{
    struct link_map *root = NULL, *map = NULL;
    if (dlinfo(c->ns.ip_handle, RTLD_DI_LINKMAP, &root) != 0 || root == NULL ||
        dlinfo(h, RTLD_DI_LINKMAP, &map) != 0 || map == NULL)
        return false;
    pthread_mutex_lock(&lock);
    if (list_at == 0)
        list_at = find_list_at(root);
    struct scope mine = {NULL, 0}, theirs = {NULL, 0};
    bool ok = list_at > 0 && read_list(root, root, list_at, &mine) &&
              read_list(root, map, list_at, &theirs);
    struct grown *g = NULL;
    if (ok)
        g = malloc(sizeof *g + (mine.n + theirs.n) * sizeof(struct link_map *));
    ok = ok && g != NULL;
    if (ok) {
        memcpy(g->maps, mine.list, mine.n * sizeof *mine.list);
        unsigned n = mine.n;
        for (unsigned i = 0; i < theirs.n; i++) {
            bool there = false;
            for (unsigned j = 0; j < n && !there; j++)
                there = g->maps[j] == theirs.list[i];
            if (!there && pin(c->ns.lmid, theirs.list[i]))
                g->maps[n++] = theirs.list[i];
        }
        if (n > mine.n) {
            /* glibc's order (add_to_global_update): a lookup reads the
             * count, then the list, so the longer list goes in first */
            struct scope *s = (struct scope *)((char *)root + list_at);
            __atomic_store_n(&s->list, g->maps, __ATOMIC_RELEASE);
            __atomic_store_n(&s->n, n, __ATOMIC_RELEASE);
            g->prev = c->ns.global_lists;
            c->ns.global_lists = g;
        } else {
            free(g);
        }
    }
    pthread_mutex_unlock(&lock);
    free(mine.list);
    free(theirs.list);
    return ok;
}

/* Where ld.so would find file for the object at caller (its RUNPATH and
 * $ORIGIN, LD_LIBRARY_PATH, the cache, the system's folders), in path;
 * file itself where it names a path or is not found. */
static const char *find(const char *file, const void *caller, char *path)
{
    if (strchr(file, '/') != NULL)
        return file;
    const struct link_map *from = object_at(caller);
    if (from == NULL || from->l_name == NULL || from->l_name[0] == '\0')
        return file;
    const char *found = file;
    int fd = open(from->l_name, O_RDONLY | O_CLOEXEC);
    struct elf_names e;
    char why[256];
    if (fd >= 0 && elf_names_read(fd, from->l_name, &e, why, sizeof why) == VLCS_OK) {
        struct elf_from chain = {&e, from->l_name};
        if (elf_resolve(file, &chain, 1, path) == 0)
            found = path;
        elf_names_free(&e);
    }
    if (fd >= 0)
        close(fd);
    return found;
}

void *ns_global_dlopen(vlcs_ctx *c, const char *file, int mode, const void *caller)
{
    int local = mode & ~RTLD_GLOBAL;
    bool named = strchr(file, '/') == NULL;
    void *h = NULL;
    if (named) /* loaded under that name already: that object, as ld.so */
        h = dlmopen(c->ns.lmid, file, local | RTLD_NOLOAD);
    if (h == NULL && (!named || !(mode & RTLD_NOLOAD))) {
        char *path = malloc(PATH_MAX);
        h = dlmopen(c->ns.lmid, path != NULL ? find(file, caller, path) : file, local);
        free(path);
    }
    if (h == NULL) {
        const char *why = dlerror();
        if (why != NULL)
            dl_why_set(why);
        return NULL;
    }
    if (!add(c, h) && !__atomic_exchange_n(&warned, true, __ATOMIC_RELAXED))
        fprintf(stderr,
                "vlcs: %s was loaded into context '%s' without RTLD_GLOBAL: this C library's "
                "link maps are not laid out as vlcs reads them, so libraries loaded after it "
                "do not find its symbols\n",
                file, c->name);
    return h;
}

void ns_global_forget(vlcs_ctx *c)
{
    for (struct grown *g = c->ns.global_lists, *prev; g != NULL; g = prev) {
        prev = g->prev;
        free(g);
    }
    c->ns.global_lists = NULL;
}

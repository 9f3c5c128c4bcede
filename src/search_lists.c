/*
 * search_lists.c - glibc's search lists of dlopened objects, grown as its
 * global scope grows.
 *
 * Each object dlopen loads searches, for the symbols it binds, the search
 * list of the object dlopen was asked for (its root: it and what it
 * needs, breadth first), and the global scope.  glibc grows the global
 * scope with each RTLD_GLOBAL load, so that objects loaded before bind
 * to what is loaded after (oneMKL's core, opened first, calls into the
 * interface and threading layers its caller opens after it).  A context
 * has no global scope glibc grows: a namespace's would end the process
 * (../ns_global.c), and copy mode's objects share the base's.  So vlcs
 * grows the roots' lists instead, the way glibc grows its global scope
 * (add_to_global_update: a new array first, its count raised after, as a
 * lookup reads the count first), and keeps the arrays it replaced, which
 * a lookup may still be reading.
 *
 * The list is a field of glibc's private struct link_map (l_searchlist, a
 * struct r_scope_elem, unchanged since glibc 2.3); its offset is found
 * once, from what it holds: the only pointer from one object's link map
 * into the middle of another's is its first scope, which points into the
 * root's at the list, and the list there starts with the root and names
 * objects of its namespace.  Lists are read under ld.so's lock (inside
 * dl_iterate_phdr, which dlclose takes to unlink an object), so that no
 * object read is freed meanwhile.
 */
#include "common.h"
#include "search_lists.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* glibc's struct r_scope_elem (include/link.h) */
struct scope {
    struct link_map **list;
    unsigned int n;
};

struct search_grown {
    struct search_grown *prev;
    struct link_map *maps[];
};

/* How far into a link map the search list is looked for: past the
 * public fields and l_info[], before the TLS fields (about 730 bytes in
 * glibc 2.34-2.43); every link map is larger. */
#define MAP_SCAN 1024
/* more objects than a search list is taken to hold: a guard against
 * reading a count that is not one (and a list that fits a pipe) */
#define MAX_SCOPE 4096

/* one growth at a time: each reads the lists it replaces */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long list_at; /* l_searchlist's offset; 0: not found yet */

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

/* The objects of a namespace, sorted by address. */
struct members {
    struct link_map **maps;
    size_t n;
};

static int by_address(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (struct link_map *const *)a;
    uintptr_t y = (uintptr_t) * (struct link_map *const *)b;
    return (x > y) - (x < y);
}

/* The objects of m's namespace: its list of loaded objects, from its head. */
static bool members_of(struct link_map *m, struct members *ms)
{
    struct link_map *head = m;
    while (head->l_prev != NULL)
        head = head->l_prev;
    size_t n = 0;
    for (struct link_map *l = head; l != NULL; l = l->l_next)
        n++;
    ms->maps = malloc(n * sizeof *ms->maps);
    if (ms->maps == NULL)
        return false;
    ms->n = 0;
    for (struct link_map *l = head; l != NULL; l = l->l_next)
        ms->maps[ms->n++] = l;
    qsort(ms->maps, ms->n, sizeof *ms->maps, by_address);
    return true;
}

static bool member(const struct members *ms, const struct link_map *m)
{
    return bsearch(&m, ms->maps, ms->n, sizeof *ms->maps, by_address) != NULL;
}

/* The search list at offset at of map: it starts with map and names
 * objects each once (of its namespace, where ms is not NULL: while the
 * offset is a guess).  Read whole into *s (list malloc'd, the caller
 * frees it) when it does. */
static bool read_list(const struct members *ms, struct link_map *map, long at, struct scope *s)
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
        if (twice || (ms != NULL && !member(ms, copy[i]))) {
            free(copy);
            return false;
        }
    }
    s->list = copy;
    s->n = head.n;
    return true;
}

/* The offset of l_searchlist, from root and the objects its load brought,
 * which follow it in the list of loaded objects: each holds one pointer
 * into the middle of the root's link map, the same in all, and the list
 * there is the root's.  -1: not found. */
static long find_list_at(const struct members *ms, struct link_map *root)
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
        if (here < 0 && at >= 0)
            break; /* loaded after root's load, by another */
        if (here < 0 || (at >= 0 && here != at))
            return -1;
        at = here;
    }
    struct scope s;
    if (at < 0 || !read_list(ms, root, at, &s))
        return -1;
    free(s.list);
    return at;
}

/* The lists to grow and the one to add, read under ld.so's lock. */
struct reading {
    struct link_map *const *roots;
    size_t n;
    struct link_map *add;
    struct scope *mine; /* n of them */
    struct scope theirs;
    bool ok;
};

/* Called by dl_iterate_phdr, which holds the lock under which ld.so
 * unlinks and frees an object: once, for everything. */
static int read_locked(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)info;
    (void)size;
    struct reading *r = arg;
    /* The offset is found once, from lists checked against the objects
     * of their namespace (a walk of thousands in copy mode): lists read
     * at it after are the roots' own. */
    struct members ms = {NULL, 0}, *check = NULL;
    if (list_at <= 0) {
        if (!members_of(r->roots[0], &ms))
            return 1;
        check = &ms;
        for (size_t i = 0; i < r->n && list_at <= 0; i++)
            list_at = find_list_at(check, r->roots[i]);
    }
    size_t done = 0;
    bool ok = list_at > 0 && read_list(check, r->add, list_at, &r->theirs);
    for (; ok && done < r->n; done++)
        ok = read_list(check, r->roots[done], list_at, &r->mine[done]);
    if (!ok) {
        while (done-- > 0)
            free(r->mine[done].list);
        free(r->theirs.list);
        r->theirs.list = NULL;
    }
    r->ok = ok;
    free(ms.maps);
    return 1;
}

/* root's list made mine and those of theirs it lacks that keep takes. */
static void grow(struct link_map *root, const struct scope *mine, const struct scope *theirs,
                 bool (*keep)(struct link_map *, void *), void *arg, struct search_grown **grown)
{
    struct search_grown *g = malloc(sizeof *g + (mine->n + theirs->n) * sizeof(struct link_map *));
    if (g == NULL)
        return; /* out of memory: the list stays as it was */
    memcpy(g->maps, mine->list, mine->n * sizeof *mine->list);
    unsigned n = mine->n;
    for (unsigned i = 0; i < theirs->n; i++) {
        bool there = false;
        for (unsigned j = 0; j < n && !there; j++)
            there = g->maps[j] == theirs->list[i];
        if (!there && (keep == NULL || keep(theirs->list[i], arg)))
            g->maps[n++] = theirs->list[i];
    }
    if (n == mine->n) {
        free(g);
        return;
    }
    /* glibc's order: a lookup reads the count, then the list, so the
     * longer list goes in first */
    struct scope *s = (struct scope *)((char *)root + list_at);
    __atomic_store_n(&s->list, g->maps, __ATOMIC_RELEASE);
    __atomic_store_n(&s->n, n, __ATOMIC_RELEASE);
    g->prev = *grown;
    *grown = g;
}

bool search_lists_append(struct link_map *const *roots, size_t n, struct link_map *add,
                         bool (*keep)(struct link_map *m, void *arg), void *arg,
                         struct search_grown **grown)
{
    if (n == 0)
        return true;
    struct reading r = {.roots = roots, .n = n, .add = add, .mine = calloc(n, sizeof *r.mine)};
    if (r.mine == NULL)
        return false;
    pthread_mutex_lock(&lock);
    dl_iterate_phdr(read_locked, &r);
    if (r.ok) {
        for (size_t i = 0; i < n; i++) {
            grow(roots[i], &r.mine[i], &r.theirs, keep, arg, grown);
            free(r.mine[i].list);
        }
        free(r.theirs.list);
    }
    pthread_mutex_unlock(&lock);
    free(r.mine);
    return r.ok;
}

void search_lists_free(struct search_grown **grown)
{
    for (struct search_grown *g = *grown, *prev; g != NULL; g = prev) {
        prev = g->prev;
        free(g);
    }
    *grown = NULL;
}

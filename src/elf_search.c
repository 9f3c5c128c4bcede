/*
 * elf_search.c - where ld.so would find a library by name: DT_RPATH of the
 * needing object and its loaders, LD_LIBRARY_PATH, DT_RUNPATH ($ORIGIN
 * replaced by the needing file's folder), /etc/ld.so.cache, the default
 * folders; answers remembered (resolved.c).  Copy mode resolves each name
 * of a tree here, from the original files, as ld.so would for them.
 */
#include "common.h"
#include "elf_search.h"
#include "context.h"
#include "elf_read.h"
#include "registry.h"
#include "resolved.h"

#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__x86_64__)
#define CACHE_ARCH 0x0300 /* FLAG_X8664_LIB64 */
static const char *const default_dirs[] = {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
                                           "/lib64", "/usr/lib64", "/lib", "/usr/lib", NULL};
#elif defined(__aarch64__)
#define CACHE_ARCH 0x0a00 /* FLAG_AARCH64_LIB64 */
static const char *const default_dirs[] = {"/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
                                           "/lib64", "/usr/lib64", "/lib", "/usr/lib", NULL};
#else
#error "copy mode knows x86-64 and AArch64 only"
#endif

/* /etc/ld.so.cache, new format (glibc 2.32 writes only that): a header,
 * then entries whose key and value are offsets from the header. */
struct cache_header {
    char magic[17]; /* "glibc-ld.so.cache" */
    char version[3]; /* "1.1" */
    uint32_t nlibs, len_strings;
    uint8_t flags, pad[3];
    uint32_t extension_offset, unused[3];
};
struct cache_entry {
    int32_t flags;
    uint32_t key, value, osversion;
    uint64_t hwcap;
};

static pthread_once_t cache_once = PTHREAD_ONCE_INIT;
static const char *cache; /* from its header on */
static size_t cache_size;

static void cache_map(void)
{
    int fd = open("/etc/ld.so.cache", O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return;
    if (fstat(fd, &st) == 0 && st.st_size > (off_t)sizeof(struct cache_header)) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p != MAP_FAILED) {
            /* an old-format part may come first: the new header follows it */
            const char *m = memmem(p, (size_t)st.st_size, "glibc-ld.so.cache1.1", 20);
            if (m != NULL) {
                cache = m;
                cache_size = (size_t)st.st_size - (size_t)(m - (const char *)p);
            }
        }
    }
    close(fd);
}

static const char *cache_lookup(const char *name)
{
    pthread_once(&cache_once, cache_map);
    if (cache == NULL)
        return NULL;
    const struct cache_header *h = (const void *)cache;
    size_t n = h->nlibs;
    if (sizeof *h + n * sizeof(struct cache_entry) > cache_size)
        return NULL;
    const struct cache_entry *ent = (const void *)(cache + sizeof *h);
    for (size_t i = 0; i < n; i++) {
        if ((ent[i].flags & 0xff) != 3 /* FLAG_ELF_LIBC6 */ ||
            (ent[i].flags & 0xff00) != CACHE_ARCH || ent[i].key >= cache_size ||
            ent[i].value >= cache_size)
            continue;
        if (strcmp(cache + ent[i].key, name) == 0 && access(cache + ent[i].value, R_OK) == 0)
            return cache + ent[i].value;
    }
    return NULL;
}

/* Is path a shared library for this machine?  Then its real path in out,
 * path itself at out + PATH_MAX. */
static bool usable(const char *path, char *out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    bool ok = elf_is_library(fd);
    close(fd);
    if (!ok || realpath(path, out) == NULL)
        return false;
    snprintf(out + PATH_MAX, PATH_MAX, "%s", path); /* as ld.so names it */
    return true;
}

/* Tries name in each directory of a ':'-separated list, $ORIGIN replaced by
 * origin (the folder of the file that needs it: the original's). */
static bool search_list(const char *list, const char *origin, const char *name, char *out)
{
    if (list == NULL || *list == '\0')
        return false;
    /* on the heap: a constructor may dlopen on a small stack (copies_tree.c) */
    char *dir = malloc(PATH_MAX), *cand = malloc(PATH_MAX);
    if (dir == NULL || cand == NULL) {
        free(dir);
        free(cand);
        return false;
    }
    bool found = false;
    for (const char *p = list; p && *p && !found;) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        size_t d = 0;
        for (size_t i = 0; i < len && d < PATH_MAX - 1;) {
            const char *rest = p + i;
            size_t skip = strncmp(rest, "${ORIGIN}", 9) == 0 ? 9
                          : strncmp(rest, "$ORIGIN", 7) == 0 ? 7
                                                             : 0;
            if (skip && origin != NULL && i + skip <= len) {
                d += (size_t)snprintf(dir + d, PATH_MAX - d, "%s", origin);
                if (d >= PATH_MAX)
                    d = PATH_MAX - 1;
                i += skip;
            } else {
                dir[d++] = p[i++];
            }
        }
        dir[d] = '\0';
        found = d > 0 && (size_t)snprintf(cand, PATH_MAX, "%s/%s", dir, name) < PATH_MAX &&
                usable(cand, out);
        p = end ? end + 1 : NULL;
    }
    free(dir);
    free(cand);
    return found;
}

/* The folder of path, for $ORIGIN. */
static void origin_of(const char *path, char *out, size_t size)
{
    snprintf(out, size, "%s", path ? path : "");
    char *slash = strrchr(out, '/');
    if (slash != NULL)
        *(slash == out ? slash + 1 : slash) = '\0';
}

/* out: PATH_MAX bytes for the real path, then PATH_MAX for the path found */
static int resolve_in(const char *name, const struct elf_from *chain, size_t nchain, char *out,
                      char *origin);

/* What elf_resolve's answer depends on, as one string (resolved.h), in
 * key (PATH_MAX * 2 bytes); false when it does not fit or depends on the
 * current directory. */
static bool resolve_key(const char *name, const struct elf_from *chain, size_t nchain, char *key)
{
    size_t room = PATH_MAX * 2, n;
    if (strchr(name, '/') != NULL) {
        n = (size_t)snprintf(key, room, "path\x1f%s", name);
        return name[0] == '/' && n < room;
    }
    const char *lib_path = getenv("LD_LIBRARY_PATH");
    n = (size_t)snprintf(key, room, "name\x1f%s\x1f%s", name, lib_path ? lib_path : "");
    for (size_t i = 0; i < nchain && n < room; i++)
        n += (size_t)snprintf(key + n, room - n, "\x1f%s", chain[i].path ? chain[i].path : "");
    return n < room;
}

int elf_resolve_found(const char *name, const struct elf_from *chain, size_t nchain, char *real,
                      char *found)
{
    char *key = malloc(PATH_MAX * 2); /* on the heap: see search_list */
    char *out = malloc(PATH_MAX * 2); /* the real path, then the path found */
    bool keyed = key != NULL && resolve_key(name, chain, nchain, key);
    int rc = -1;
    if (out == NULL) {
        free(key);
        return -1;
    }
    if (keyed && resolved_lookup(key, out, out + PATH_MAX)) {
        rc = 0;
    } else if (strchr(name, '/') != NULL) { /* as given: reading it says what is wrong with it */
        rc = realpath(name, out) != NULL ? 0 : -1;
        snprintf(out + PATH_MAX, PATH_MAX, "%s", name);
    } else {
        char *origin = malloc(PATH_MAX);
        rc = origin != NULL ? resolve_in(name, chain, nchain, out, origin) : -1;
        free(origin);
    }
    if (rc == 0 && keyed)
        resolved_remember(key, out, out + PATH_MAX);
    if (rc == 0) {
        memcpy(real, out, PATH_MAX);
        if (found != NULL)
            memcpy(found, out + PATH_MAX, PATH_MAX);
    }
    free(out);
    free(key);
    return rc;
}

int elf_resolve(const char *name, const struct elf_from *chain, size_t nchain, char *out)
{
    return elf_resolve_found(name, chain, nchain, out, NULL);
}

static int resolve_in(const char *name, const struct elf_from *chain, size_t nchain, char *out,
                      char *origin)
{
    const char *runpath = nchain ? elf_str(chain[0].e, chain[0].e->runpath) : NULL;
    /* DT_RPATH of the object and of the objects that loaded it, in turn
     * (auditwheel's libraries find their neighbours so), unless the object
     * has a DT_RUNPATH */
    for (size_t i = 0; runpath == NULL && i < nchain; i++) {
        const char *rpath = elf_str(chain[i].e, chain[i].e->rpath);
        if (rpath == NULL)
            continue;
        origin_of(chain[i].path, origin, PATH_MAX);
        if (search_list(rpath, origin, name, out))
            return 0;
    }
    if (search_list(getenv("LD_LIBRARY_PATH"), NULL, name, out))
        return 0;
    if (runpath != NULL) {
        origin_of(chain[0].path, origin, PATH_MAX);
        if (search_list(runpath, origin, name, out))
            return 0;
    }
    const char *cached = cache_lookup(name);
    if (cached != NULL && usable(cached, out))
        return 0;
    for (const char *const *d = default_dirs; *d; d++) /* origin's buffer, free by now */
        if ((size_t)snprintf(origin, PATH_MAX, "%s/%s", *d, name) < PATH_MAX &&
            usable(origin, out))
            return 0;
    return -1;
}

/* The soname of the library at path, else its file name: the name
 * dependants find it by. */
void elf_soname_of(const char *path, char *out, size_t size)
{
    snprintf(out, size, "%s", base_name(path));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct elf_names e;
    char why[128];
    if (fd >= 0 && elf_names_read(fd, path, &e, why, sizeof why) == VLCS_OK) {
        if (e.soname != UINT64_MAX && elf_str(&e, e.soname) != NULL)
            snprintf(out, size, "%s", elf_str(&e, e.soname));
        elf_names_free(&e);
    }
    if (fd >= 0)
        close(fd);
}

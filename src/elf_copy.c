/*
 * elf_copy.c - what copy mode needs of a shared object's file: its dynamic
 * section's names (SONAME, DT_NEEDED, RUNPATH/RPATH), where ld.so would
 * find a library it needs by name, and a byte copy in a memfd whose names
 * are rewritten in place.
 *
 * glibc knows a loaded object by its file (device and inode) and by its
 * soname.  A copy in a memfd is a new file; with its SONAME and the
 * DT_NEEDED names of its tree rewritten to names no other object has, no
 * dependant can be bound to the original or to another context's copy.
 * The new names have the old names' lengths, so only .dynstr's bytes
 * change: the copy's code and data are the file's.
 */
#include "internal.h"
#include "resolved.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__x86_64__)
#define OWN_MACHINE EM_X86_64
#define CACHE_ARCH 0x0300 /* FLAG_X8664_LIB64 */
static const char *const default_dirs[] = {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
                                           "/lib64", "/usr/lib64", "/lib", "/usr/lib", NULL};
#elif defined(__aarch64__)
#define OWN_MACHINE EM_AARCH64
#define CACHE_ARCH 0x0a00 /* FLAG_AARCH64_LIB64 */
static const char *const default_dirs[] = {"/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
                                           "/lib64", "/usr/lib64", "/lib", "/usr/lib", NULL};
#else
#error "copy mode knows x86-64 and AArch64 only"
#endif

void elf_names_free(struct elf_names *e)
{
    free(e->strtab);
    memset(e, 0, sizeof *e);
}

static int read_at(int fd, void *buf, size_t n, off_t off)
{
    size_t done = 0;
    while (done < n) {
        ssize_t r = pread(fd, (char *)buf + done, n - done, off + (off_t)done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        done += (size_t)r;
    }
    return 0;
}

/* The file offset of virtual address v, through the PT_LOAD holding it. */
static int vaddr_offset(const ElfW(Phdr) *ph, size_t n, uint64_t v, uint64_t *off)
{
    for (size_t i = 0; i < n; i++)
        if (ph[i].p_type == PT_LOAD && v >= ph[i].p_vaddr && v < ph[i].p_vaddr + ph[i].p_filesz) {
            *off = v - ph[i].p_vaddr + ph[i].p_offset;
            return 0;
        }
    return -1;
}

int elf_names_read(int fd, const char *path, struct elf_names *e, char *why, size_t size)
{
    memset(e, 0, sizeof *e);
    e->soname = e->runpath = e->rpath = UINT64_MAX;
    ElfW(Ehdr) eh;
    if (read_at(fd, &eh, sizeof eh, 0) != 0 || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
        snprintf(why, size, "%s is not an ELF file", path);
        return VLCS_E_INVALID;
    }
    if (eh.e_ident[EI_CLASS] != (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) ||
        eh.e_machine != OWN_MACHINE) {
        snprintf(why, size, "%s is built for another machine", path);
        return VLCS_E_INVALID;
    }
    if (eh.e_type != ET_DYN || eh.e_phentsize != sizeof(ElfW(Phdr)) || eh.e_phnum == 0 ||
        eh.e_phnum > 64) {
        snprintf(why, size, "%s is not a shared library", path);
        return VLCS_E_INVALID;
    }
    ElfW(Phdr) *ph = e->phdr;
    e->nphdr = eh.e_phnum;
    if (read_at(fd, ph, eh.e_phnum * sizeof *ph, (off_t)eh.e_phoff) != 0) {
        snprintf(why, size, "%s is cut short", path);
        return VLCS_E_INVALID;
    }
    const ElfW(Phdr) *dynph = NULL;
    for (size_t i = 0; i < eh.e_phnum; i++)
        if (ph[i].p_type == PT_DYNAMIC)
            dynph = &ph[i];
    if (dynph == NULL || dynph->p_filesz == 0 || dynph->p_filesz > (1u << 20)) {
        snprintf(why, size, "%s has no dynamic section", path);
        return VLCS_E_INVALID;
    }
    size_t ndyn = dynph->p_filesz / sizeof(ElfW(Dyn));
    ElfW(Dyn) *dyn = malloc(dynph->p_filesz);
    if (dyn == NULL || read_at(fd, dyn, ndyn * sizeof *dyn, (off_t)dynph->p_offset) != 0) {
        free(dyn);
        snprintf(why, size, "%s: its dynamic section cannot be read", path);
        return VLCS_E_INVALID;
    }
    uint64_t strtab = UINT64_MAX, strsz = 0, rela = 0, jmprel = 0;
    for (size_t i = 0; i < ndyn && dyn[i].d_tag != DT_NULL; i++) {
        uint64_t v = dyn[i].d_un.d_val;
        switch (dyn[i].d_tag) {
        case DT_INIT:
        case DT_INIT_ARRAY:
        case DT_INIT_ARRAYSZ:
            if (dyn[i].d_tag == DT_INIT)
                e->init = v;
            else if (dyn[i].d_tag == DT_INIT_ARRAY)
                e->init_array = v;
            else
                e->init_arraysz = v;
            if (e->ninit_tags < 3)
                e->init_tags[e->ninit_tags] = dynph->p_offset + i * sizeof *dyn;
            e->ninit_tags++;
            break;
        case DT_RELA: rela = v; break;
        case DT_RELASZ: e->relasz = v; break;
        case DT_JMPREL: jmprel = v; break;
        case DT_PLTRELSZ: e->pltrelsz = v; break;
        case DT_STRTAB: strtab = v; break;
        case DT_STRSZ: strsz = v; break;
        case DT_SONAME: e->soname = v; break;
        case DT_RUNPATH: e->runpath = v; break;
        case DT_RPATH: e->rpath = v; break;
        case DT_TEXTREL: e->textrel = true; break;
        case DT_FLAGS: e->textrel |= (v & DF_TEXTREL) != 0; break;
        case DT_NEEDED:
            if (e->nneeded == ELF_MAX_NEEDED) {
                free(dyn);
                snprintf(why, size, "%s needs more than %d libraries", path, ELF_MAX_NEEDED);
                return VLCS_E_INVALID;
            }
            e->needed[e->nneeded++] = v;
            break;
        default: break;
        }
    }
    free(dyn);
    if (strtab == UINT64_MAX || strsz == 0 || strsz > (64u << 20) ||
        vaddr_offset(ph, eh.e_phnum, strtab, &e->strtab_off) != 0) {
        snprintf(why, size, "%s has no string table for its dynamic section", path);
        return VLCS_E_INVALID;
    }
    e->strsz = strsz;
    if ((rela && vaddr_offset(ph, eh.e_phnum, rela, &e->rela_off) != 0) ||
        (jmprel && vaddr_offset(ph, eh.e_phnum, jmprel, &e->jmprel_off) != 0))
        e->relasz = e->pltrelsz = 0, e->textrel = true; /* unreadable: never lazy (below) */
    /* .dynsym's extent and the code sections': their section headers (a
     * stripped library keeps them) */
    size_t nsh = eh.e_shentsize == sizeof(ElfW(Shdr)) ? (eh.e_shnum < 4096 ? eh.e_shnum : 4096) : 0;
    ElfW(Shdr) *shs = nsh ? malloc(nsh * sizeof *shs) : NULL; /* one read for the table */
    if (shs != NULL && read_at(fd, shs, nsh * sizeof *shs, (off_t)eh.e_shoff) != 0)
        nsh = 0; /* cut short: as a library without section headers */
    for (size_t i = 0; shs != NULL && i < nsh; i++) {
        const ElfW(Shdr) *sh = &shs[i];
        if (sh->sh_type == SHT_DYNSYM && sh->sh_entsize == sizeof(ElfW(Sym))) {
            e->dynsym_off = sh->sh_offset;
            e->ndynsym = sh->sh_size / sizeof(ElfW(Sym));
        } else if ((sh->sh_flags & SHF_EXECINSTR) && sh->sh_type == SHT_PROGBITS &&
                   !(sh->sh_flags & SHF_WRITE) && e->ncode < sizeof e->code / sizeof *e->code) {
            e->code[e->ncode].off = sh->sh_offset;
            e->code[e->ncode++].size = sh->sh_size;
        }
    }
    free(shs);
    if ((e->strtab = malloc(strsz + 1)) == NULL) {
        snprintf(why, size, "out of memory");
        return VLCS_E_SYSTEM;
    }
    if (read_at(fd, e->strtab, strsz, (off_t)e->strtab_off) != 0) {
        elf_names_free(e);
        snprintf(why, size, "%s is cut short", path);
        return VLCS_E_INVALID;
    }
    e->strtab[strsz] = '\0';
    uint64_t offs[3 + ELF_MAX_NEEDED] = {e->soname, e->runpath, e->rpath};
    memcpy(offs + 3, e->needed, e->nneeded * sizeof *offs);
    for (size_t i = 0; i < 3 + e->nneeded; i++)
        if (offs[i] != UINT64_MAX && offs[i] >= strsz) {
            elf_names_free(e);
            snprintf(why, size, "%s names a string outside its string table", path);
            return VLCS_E_INVALID;
        }
    return VLCS_OK;
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

const char *elf_str(const struct elf_names *e, uint64_t off)
{
    return off == UINT64_MAX ? NULL : e->strtab + off;
}

/* ---- where ld.so finds a library by name --------------------------------- */

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

/* Is path a shared library for this machine?  Then its real path in out. */
static bool usable(const char *path, char *out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ElfW(Ehdr) eh;
    bool ok = read_at(fd, &eh, sizeof eh, 0) == 0 && memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
              eh.e_ident[EI_CLASS] == (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) &&
              eh.e_machine == OWN_MACHINE && eh.e_type == ET_DYN;
    close(fd);
    return ok && realpath(path, out) != NULL;
}

/* Tries name in each directory of a ':'-separated list, $ORIGIN replaced by
 * origin (the folder of the file that needs it: the original's). */
static bool search_list(const char *list, const char *origin, const char *name, char *out)
{
    if (list == NULL || *list == '\0')
        return false;
    /* on the heap: a constructor may dlopen on a small stack (copies.c) */
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

int elf_resolve(const char *name, const struct elf_from *chain, size_t nchain, char *out)
{
    char *key = malloc(PATH_MAX * 2); /* on the heap: see search_list */
    bool keyed = key != NULL && resolve_key(name, chain, nchain, key);
    if (keyed && resolved_lookup(key, out)) {
        free(key);
        return 0;
    }
    int rc = -1;
    if (strchr(name, '/') != NULL) { /* as given: reading it says what is wrong with it */
        rc = realpath(name, out) != NULL ? 0 : -1;
    } else {
        char *origin = malloc(PATH_MAX);
        rc = origin != NULL ? resolve_in(name, chain, nchain, out, origin) : -1;
        free(origin);
    }
    if (rc == 0 && keyed)
        resolved_remember(key, out);
    free(key);
    return rc;
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

/* ---- the renamed copy ------------------------------------------------------ */

/* Whole pages inside e's code sections, in file order: what a lazy copy
 * leaves out. */
static size_t code_holes(const struct elf_names *e, uint64_t page, uint64_t (*out)[2])
{
    size_t n = 0;
    for (size_t i = 0; i < e->ncode; i++) {
        uint64_t lo = (e->code[i].off + page - 1) & ~(page - 1);
        uint64_t hi = (e->code[i].off + e->code[i].size) & ~(page - 1);
        if (hi > lo) {
            size_t k = n++;
            while (k > 0 && out[k - 1][0] > lo) { /* sections in file order */
                out[k][0] = out[k - 1][0];
                out[k][1] = out[k - 1][1];
                k--;
            }
            out[k][0] = lo;
            out[k][1] = hi;
        }
    }
    return n;
}

/* in's bytes [from, to) written at the same offsets of out, which is at
 * *pos (sendfile writes at out's own position, and moves it) */
static int copy_range(int in, int out, off_t from, off_t to, off_t *pos)
{
    if (*pos != from && lseek(out, from, SEEK_SET) != from)
        return -1;
    *pos = from;
    while (from < to) {
        off_t at = from;
        ssize_t k = sendfile(out, in, &at, (size_t)(to - from));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        from += k;
        *pos = from;
    }
    return 0;
}

/* A tag no loader reads (DT_LOOS: the OS range, none of glibc's): a lazy
 * copy's constructors' entries, which ld.so then does not run. */
#define DT_VLCS_LATER 0x6000000d

static int by_start(const void *a, const void *b)
{
    uint64_t x = ((const uint64_t *)a)[0], y = ((const uint64_t *)b)[0];
    return x < y ? -1 : x > y;
}

/* in's bytes that a loader reads, at the same offsets of out: the first
 * page (the headers) and each PT_LOAD's file range, less the holes; the
 * ranges that touch copied as one, in file order.  Debug information and
 * the section headers are not: ld.so never reads them, and a debugger
 * reads them from the original (a loaded copy is named after it). */
static int copy_loaded(int in, int out, const struct elf_names *e, uint64_t page,
                       const uint64_t (*holes)[2], size_t nh, uint64_t size)
{
    size_t cap = (e->nphdr + 1) * (nh + 1), n = 0;
    uint64_t(*r)[2] = malloc(cap * sizeof *r);
    if (r == NULL)
        return -1;
    for (size_t i = 0; i <= e->nphdr; i++) {
        uint64_t lo = 0, hi = page;
        if (i < e->nphdr) {
            if (e->phdr[i].p_type != PT_LOAD)
                continue;
            lo = e->phdr[i].p_offset & ~(page - 1);
            hi = (e->phdr[i].p_offset + e->phdr[i].p_filesz + page - 1) & ~(page - 1);
        }
        hi = hi < size ? hi : size;
        for (uint64_t a = lo; a < hi && n < cap;) {
            size_t k = 0;
            while (k < nh && holes[k][1] <= a)
                k++;
            if (k < nh && holes[k][0] <= a) { /* inside a hole */
                a = holes[k][1];
                continue;
            }
            uint64_t b = k < nh && holes[k][0] < hi ? holes[k][0] : hi;
            r[n][0] = a;
            r[n++][1] = b;
            a = b;
        }
    }
    qsort(r, n, sizeof *r, by_start);
    off_t pos = 0;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0;) {
        uint64_t lo = r[i][0], hi = r[i][1];
        for (i++; i < n && r[i][0] <= hi; i++)
            hi = r[i][1] > hi ? r[i][1] : hi;
        rc = copy_range(in, out, (off_t)lo, (off_t)hi, &pos);
    }
    free(r);
    return rc;
}

int elf_copy(int in, const char *path, const char *label, const struct elf_rename *renames,
             size_t n, const struct elf_names *e, bool lazy, char *why, size_t size)
{
    struct stat st;
    int out = -1, code = VLCS_E_SYSTEM;
    if (fstat(in, &st) != 0) {
        snprintf(why, size, "%s cannot be read: %s", path, strerror(errno));
        goto fail;
    }
    char name[96];
    snprintf(name, sizeof name, "vlcs-copy:%s", label);
    out = memfd_create(name, MFD_CLOEXEC);
    int copied = -1;
    if (out >= 0) {
        uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), holes[16][2];
        size_t nh = lazy ? code_holes(e, page, holes) : 0;
        copied = ftruncate(out, st.st_size);
        if (copied == 0)
            copied = copy_loaded(in, out, e, page, (const uint64_t(*)[2])holes, nh,
                                 (uint64_t)st.st_size);
        const ElfW(Sxword) later = DT_VLCS_LATER;
        for (size_t i = 0; lazy && i < e->ninit_tags && copied == 0; i++)
            if (pwrite(out, &later, sizeof later, (off_t)e->init_tags[i]) != sizeof later)
                copied = -1;
    }
    if (out < 0 || copied != 0) {
        snprintf(why, size, "a copy of %s cannot be made in memory: %s", path, strerror(errno));
        goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(renames[i].to);
        if (pwrite(out, renames[i].to, len, (off_t)renames[i].at) != (ssize_t)len) {
            snprintf(why, size, "the copy of %s cannot be renamed: %s", path, strerror(errno));
            goto fail;
        }
    }
    return out;
fail:
    if (out >= 0)
        close(out);
    return -code;
}

int elf_new_name(const char *old, unsigned long serial, char *out, size_t size)
{
    size_t len = strlen(old);
    if (len < ELF_RENAME_TAIL + 1 || len >= size)
        return -1;
    static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
    memcpy(out, old, len + 1);
    /* "libgomp.so.1" -> "libgo~00002s": a '~' no soname on disk has, and
     * the copy's serial in base 36 */
    out[len - ELF_RENAME_TAIL] = '~';
    for (size_t i = 0; i < ELF_RENAME_TAIL - 1; i++) {
        out[len - 1 - i] = digits[serial % 36];
        serial /= 36;
    }
    return serial == 0 ? 0 : -1;
}

/* STB_GNU_UNIQUE symbols (C++ template statics, inline functions' statics)
 * are bound once per namespace, to the first definition loaded, whatever
 * the scope: every context's copy would share the first one's (torch's
 * dispatcher registered each copy's kernels twice).  In a copy they become
 * STB_GLOBAL: resolved in the context's own scope, as in a namespace of its
 * own.  Returns the bytes to rewrite (*out, malloc'd), 0 if none. */
size_t elf_unique_symbols(int fd, const struct elf_names *e, struct elf_rename **out)
{
    static const char global[16][2] = {
#define G(t) {(char)ELF64_ST_INFO(STB_GLOBAL, t), 0}
        G(0), G(1), G(2), G(3), G(4), G(5), G(6), G(7),
        G(8), G(9), G(10), G(11), G(12), G(13), G(14), G(15)
#undef G
    };
    *out = NULL;
    size_t n = 0, cap = 0;
    ElfW(Sym) chunk[512];
    for (uint64_t i = 0; i < e->ndynsym; i += 512) {
        size_t k = e->ndynsym - i < 512 ? (size_t)(e->ndynsym - i) : 512;
        if (read_at(fd, chunk, k * sizeof *chunk, (off_t)(e->dynsym_off + i * sizeof *chunk)) != 0)
            break;
        for (size_t j = 0; j < k; j++) {
            if (ELF64_ST_BIND(chunk[j].st_info) != STB_GNU_UNIQUE)
                continue;
            if (n == cap) {
                cap = cap ? cap * 2 : 64;
                struct elf_rename *grown = realloc(*out, cap * sizeof **out);
                if (grown == NULL) { /* the copy keeps them: shared, as before */
                    free(*out);
                    *out = NULL;
                    return 0;
                }
                *out = grown;
            }
            (*out)[n++] = (struct elf_rename){
                e->dynsym_off + (i + j) * sizeof *chunk + offsetof(ElfW(Sym), st_info),
                global[ELF64_ST_TYPE(chunk[j].st_info)]};
        }
    }
    return n;
}

/* ---- a copy whose code comes later ---------------------------------------- */

/* Whether a copy of e may leave out its code until it is loaded: nothing
 * of its code may run inside dlopen, which ld.so's relocation does for an
 * IFUNC resolver (STT_GNU_IFUNC symbols, IRELATIVE relocations); nor may
 * relocations write into it (TEXTREL). */
bool elf_lazy_ok(int fd, const struct elf_names *e)
{
#if defined(__x86_64__)
    const uint32_t irelative = R_X86_64_IRELATIVE;
#else
    const uint32_t irelative = R_AARCH64_IRELATIVE;
#endif
    if (e->textrel || e->ncode == 0 || e->dynsym_off == 0 || e->ninit_tags > 3 ||
        (e->init_array != 0) != (e->init_arraysz != 0))
        return false;
    ElfW(Sym) syms[512];
    for (uint64_t i = 0; i < e->ndynsym; i += 512) {
        size_t k = e->ndynsym - i < 512 ? (size_t)(e->ndynsym - i) : 512;
        if (read_at(fd, syms, k * sizeof *syms, (off_t)(e->dynsym_off + i * sizeof *syms)) != 0)
            return false;
        for (size_t j = 0; j < k; j++)
            if (ELF64_ST_TYPE(syms[j].st_info) == STT_GNU_IFUNC && syms[j].st_shndx != SHN_UNDEF)
                return false;
    }
    const uint64_t tables[2][2] = {{e->rela_off, e->relasz}, {e->jmprel_off, e->pltrelsz}};
    ElfW(Rela) rel[512];
    for (int t = 0; t < 2; t++)
        for (uint64_t at = 0; at + sizeof *rel <= tables[t][1]; at += sizeof rel) {
            size_t k = (size_t)((tables[t][1] - at) / sizeof *rel);
            k = k < 512 ? k : 512;
            if (read_at(fd, rel, k * sizeof *rel, (off_t)(tables[t][0] + at)) != 0)
                return false;
            for (size_t j = 0; j < k; j++)
                if (ELF64_R_TYPE(rel[j].r_info) == irelative)
                    return false;
        }
    return true;
}

static int kept_argc;
static char **kept_argv;

void elf_keep_args(int argc, char **argv)
{
    kept_argc = argc;
    kept_argv = argv;
}

/* A lazy copy's constructors, as ld.so's call_init runs them: DT_INIT,
 * then DT_INIT_ARRAY in order, each given argc, argv and the environment. */
void elf_run_init(const struct elf_names *e, uintptr_t base)
{
    extern char **environ;
    typedef void (*init_fn)(int, char **, char **);
    if (e->init != 0)
        ((init_fn)(base + e->init))(kept_argc, kept_argv, environ);
    init_fn *array = (init_fn *)(base + e->init_array);
    for (uint64_t i = 0; e->init_array != 0 && i < e->init_arraysz / sizeof *array; i++)
        if (array[i] != NULL && array[i] != (init_fn)-1)
            array[i](kept_argc, kept_argv, environ);
}

/* ---- read-only pages shared with the file ------------------------------- */

static bool renamed_in(const struct elf_rename *renames, size_t n, uint64_t lo, uint64_t hi)
{
    for (size_t k = 0; k < n; k++) {
        uint64_t s0 = renames[k].at, s1 = s0 + strlen(renames[k].to);
        if (s0 < hi && s1 > lo)
            return true;
    }
    return false;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* Pages [at, at+len) of a loaded copy made its own (anonymous, copied on
 * write by the kernel's fault path, so a thread of the copy writing there
 * meanwhile loses nothing), whatever they are mapped from; prot is what
 * they get back.  0 or -1. */
static int own_pages(uintptr_t at, size_t len, int prot)
{
    if (len == 0)
        return 0;
    if (!(prot & PROT_WRITE) && mprotect((void *)at, len, prot | PROT_WRITE) != 0)
        return -1;
    int rc = madvise((void *)at, len, MADV_POPULATE_WRITE);
    if (!(prot & PROT_WRITE) && mprotect((void *)at, len, prot) != 0)
        rc = -1;
    return rc;
}

/* A loaded copy differs from its file in its renamed bytes only.  Every
 * page of its read-only segments (code, constants, symbol and unwind
 * tables) but those holding a renamed byte is mapped again from the
 * original file, as a namespace's copy would be, so that every context's
 * copy shares the page cache's pages.  The rest, its writable segments
 * (relocated, they are the copy's own in a namespace too) and its renamed
 * pages, are made anonymous; then the memfd holds nothing another mapping
 * reads and gives all its bytes back.  The copy is named after its
 * original (copy_origins.c): what a debugger reads from a copy's file is
 * the original's.  A page that cannot be mapped so is written into the
 * memfd (a lazy copy's code is not there yet).  Returns 0, or -1 when a
 * page is neither. */
int elf_share_pages(const struct elf_names *e, int origin_fd, int copy_fd, uintptr_t base,
                    const struct elf_rename *renames, size_t nrenames)
{
    if (e->textrel) /* relocations wrote into its read-only segments; never lazy */
        return 0;
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), mask = ~(page - 1);
    uint64_t relro_lo = 0, relro_hi = 0; /* what glibc made read-only after relocating */
    for (size_t i = 0; i < e->nphdr; i++)
        if (e->phdr[i].p_type == PT_GNU_RELRO) {
            relro_lo = e->phdr[i].p_vaddr & mask;
            relro_hi = (e->phdr[i].p_vaddr + e->phdr[i].p_memsz) & mask;
        }
    /* the writable segments first: until they are the copy's own, the
     * memfd's pages are what they read */
    bool owned = true;
    for (size_t i = 0; i < e->nphdr && owned; i++) {
        const ElfW(Phdr) *ph = &e->phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W))
            continue;
        uint64_t lo = ph->p_vaddr & mask, hi = (ph->p_vaddr + ph->p_filesz + page - 1) & mask;
        uint64_t r0 = relro_lo > lo ? relro_lo : lo, r1 = relro_hi < hi ? relro_hi : hi;
        if (r1 > r0)
            owned = own_pages(base + lo, r0 - lo, PROT_READ | PROT_WRITE) == 0 &&
                    own_pages(base + r0, r1 - r0, PROT_READ) == 0 &&
                    own_pages(base + r1, hi - r1, PROT_READ | PROT_WRITE) == 0;
        else
            owned = own_pages(base + lo, hi - lo, PROT_READ | PROT_WRITE) == 0;
    }
    int rc = 0;
    for (size_t i = 0; i < e->nphdr; i++) {
        const ElfW(Phdr) *ph = &e->phdr[i];
        if (ph->p_type != PT_LOAD || (ph->p_flags & PF_W) ||
            (ph->p_vaddr & (page - 1)) != (ph->p_offset & (page - 1)))
            continue;
        /* whole pages, as ld.so mapped them: a first or last page's bytes
         * of the next segment are the original's too */
        uint64_t lo = ph->p_offset & mask, hi = (ph->p_offset + ph->p_filesz + page - 1) & mask;
        uintptr_t at = base + (ph->p_vaddr & mask);
        int prot = PROT_READ | (ph->p_flags & PF_X ? PROT_EXEC : 0);
        for (uint64_t a = lo; a < hi;) {
            uint64_t b = a;
            while (b < hi && !renamed_in(renames, nrenames, b, b + page))
                b += page;
            if (b > a) {
                if (mmap((void *)(at + (a - lo)), b - a, prot, MAP_PRIVATE | MAP_FIXED, origin_fd,
                         (off_t)a) == MAP_FAILED) { /* the memfd's pages stay, the file's bytes */
                    owned = false;
                    off_t pos = -1;
                    if (copy_range(origin_fd, copy_fd, (off_t)a, (off_t)b, &pos) != 0)
                        rc = -1;
                }
            }
            if (b < hi) { /* a page with a renamed byte */
                owned = owned && own_pages(at + (b - lo), page, prot) == 0;
                b += page;
            }
            a = b;
        }
    }
    struct stat st;
    if (owned && fstat(copy_fd, &st) == 0)
        fallocate(copy_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, st.st_size);
    return rc;
}

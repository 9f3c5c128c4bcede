/*
 * forwarder.c - absolute-symbol forwarders: a shared object, written at run
 * time, whose dynamic symbols are the exported functions and data of a
 * library loaded in the base namespace, at their absolute addresses
 * (SHN_ABS, which glibc binds as-is).  Loaded into a context's namespace
 * under the library's soname, it satisfies that namespace's DT_NEEDED
 * entries: dependants bind straight to the base's one copy, with no
 * trampoline, so a call costs what a direct call costs.
 *
 * The object is the least glibc needs: an ELF header, PT_LOAD and
 * PT_DYNAMIC, .dynsym, .dynstr, a SysV .hash and .dynamic.  It is written to
 * a memfd and loaded from /proc/PID/fd/N: no compiler, no temporary file.
 */
#include "common.h"
#include "forwarder.h"
#include "context.h"
#include "copies.h"
#include "object_syms.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct fwd_sym {
    const char *name;
    uintptr_t value;
    unsigned char type; /* STT_FUNC or STT_OBJECT */
    size_t size;
};

static unsigned long sysv_hash(const char *s)
{
    unsigned long h = 0, g;
    while (*s) {
        h = (h << 4) + (unsigned char)*s++;
        g = h & 0xf0000000;
        if (g)
            h ^= g >> 24;
        h &= ~g;
    }
    return h;
}

static size_t align8(size_t n) { return (n + 7) & ~(size_t)7; }

/* Build the object in memory; returns a malloc'd image of *size bytes.
 * `needed` (may be empty) become DT_NEEDED entries, in order. */
static unsigned char *build(const char *soname, const struct fwd_sym *syms, size_t n,
                            const char *const *needed, size_t nneeded, size_t *size)
{
    size_t nsyms = n + 1; /* index 0 is the null symbol */
    size_t strsz = 1 + strlen(soname) + 1;
    for (size_t i = 0; i < n; i++)
        strsz += strlen(syms[i].name) + 1;
    for (size_t i = 0; i < nneeded; i++)
        strsz += strlen(needed[i]) + 1;
    size_t nbucket = nsyms < 8 ? 1 : nsyms / 2;

    size_t off_ph = sizeof(Elf64_Ehdr);
    size_t off_sym = align8(off_ph + 2 * sizeof(Elf64_Phdr));
    size_t off_str = off_sym + nsyms * sizeof(Elf64_Sym);
    size_t off_hash = align8(off_str + strsz);
    size_t off_dyn = align8(off_hash + (2 + nbucket + nsyms) * sizeof(Elf32_Word));
    size_t ndyn = 7 + nneeded;
    size_t total = off_dyn + ndyn * sizeof(Elf64_Dyn);

    unsigned char *img = calloc(1, total);
    if (img == NULL)
        return NULL;
    Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
    memcpy(eh->e_ident, ELFMAG, SELFMAG);
    eh->e_ident[EI_CLASS] = ELFCLASS64;
    eh->e_ident[EI_DATA] = ELFDATA2LSB;
    eh->e_ident[EI_VERSION] = EV_CURRENT;
    eh->e_ident[EI_OSABI] = ELFOSABI_SYSV;
    eh->e_type = ET_DYN;
    eh->e_machine = EM_X86_64;
    eh->e_version = EV_CURRENT;
    eh->e_phoff = off_ph;
    eh->e_ehsize = sizeof(Elf64_Ehdr);
    eh->e_phentsize = sizeof(Elf64_Phdr);
    eh->e_phnum = 2;

    Elf64_Phdr *ph = (Elf64_Phdr *)(img + off_ph);
    /* Writable: the dynamic linker may adjust .dynamic in place. */
    ph[0] = (Elf64_Phdr){PT_LOAD, PF_R | PF_W, 0, 0, 0, total, total, 0x1000};
    ph[1] = (Elf64_Phdr){PT_DYNAMIC, PF_R | PF_W, off_dyn, off_dyn, off_dyn,
                         ndyn * sizeof(Elf64_Dyn), ndyn * sizeof(Elf64_Dyn), 8};

    char *str = (char *)img + off_str;
    size_t spos = 1;
    size_t soname_off = spos;
    strcpy(str + spos, soname);
    spos += strlen(soname) + 1;

    Elf64_Sym *sym = (Elf64_Sym *)(img + off_sym);
    Elf32_Word *hash = (Elf32_Word *)(img + off_hash);
    Elf32_Word *bucket = hash + 2, *chain = bucket + nbucket;
    hash[0] = (Elf32_Word)nbucket;
    hash[1] = (Elf32_Word)nsyms;
    for (size_t i = 0; i < n; i++) {
        Elf64_Sym *s = &sym[i + 1];
        s->st_name = (Elf64_Word)spos;
        strcpy(str + spos, syms[i].name);
        spos += strlen(syms[i].name) + 1;
        s->st_info = ELF64_ST_INFO(STB_GLOBAL, syms[i].type);
        s->st_other = STV_DEFAULT;
        s->st_shndx = SHN_ABS;
        s->st_value = syms[i].value;
        s->st_size = syms[i].size;
        unsigned long b = sysv_hash(syms[i].name) % nbucket;
        chain[i + 1] = bucket[b];
        bucket[b] = (Elf32_Word)(i + 1);
    }

    Elf64_Dyn *dyn = (Elf64_Dyn *)(img + off_dyn);
    dyn[0] = (Elf64_Dyn){DT_HASH, {off_hash}};
    dyn[1] = (Elf64_Dyn){DT_STRTAB, {off_str}};
    dyn[2] = (Elf64_Dyn){DT_SYMTAB, {off_sym}};
    dyn[3] = (Elf64_Dyn){DT_STRSZ, {strsz}};
    dyn[4] = (Elf64_Dyn){DT_SYMENT, {sizeof(Elf64_Sym)}};
    dyn[5] = (Elf64_Dyn){DT_SONAME, {soname_off}};
    for (size_t i = 0; i < nneeded; i++) {
        dyn[6 + i] = (Elf64_Dyn){DT_NEEDED, {spos}};
        strcpy(str + spos, needed[i]);
        spos += strlen(needed[i]) + 1;
    }
    dyn[6 + nneeded] = (Elf64_Dyn){DT_NULL, {0}};
    *size = total;
    return img;
}

/* The image into a memfd (img is freed); returns the fd, or -VLCS_E_SYSTEM
 * with err set. */
static int write_memfd(const char *name, unsigned char *img, size_t size, char *err,
                       size_t errsize)
{
    if (img == NULL) {
        snprintf(err, errsize, "out of memory");
        return -VLCS_E_SYSTEM;
    }
    int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0 || write(fd, img, size) != (ssize_t)size) {
        snprintf(err, errsize, "cannot write %s: %s", name, strerror(errno));
        if (fd >= 0)
            close(fd);
        fd = -VLCS_E_SYSTEM;
    }
    free(img);
    return fd;
}

bool fwd_name_wanted(const char *name, const char *prefixes)
{
    if (prefixes == NULL)
        return true;
    for (const char *p = prefixes; *p;) {
        size_t len = strcspn(p, ",");
        if (len > 0 && strncmp(name, p, len) == 0)
            return true;
        p += len;
        if (*p == ',')
            p++;
    }
    return false;
}

/* A forwarder for `handle` (loaded in the base), as an open memfd. */
int forwarder_create(void *handle, const struct fwd_spec *spec, char *soname_out,
                     size_t soname_size, char *err, size_t errsize)
{
    const struct fwd_override *ov = spec->ov;
    size_t nov = spec->nov;
    struct link_map *lm = NULL;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || lm == NULL) {
        snprintf(err, errsize, "cannot inspect the library: %s", dlerror());
        return -VLCS_E_SYSTEM;
    }
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL, *soname = NULL;
    ElfW(Xword) soname_off = 0;
    int have_soname = 0;
    for (const ElfW(Dyn) *d = lm->l_ld; d->d_tag != DT_NULL; d++) {
        if (d->d_tag == DT_SYMTAB)
            symtab = (const ElfW(Sym) *)d->d_un.d_ptr;
        else if (d->d_tag == DT_STRTAB)
            strtab = (const char *)d->d_un.d_ptr;
        else if (d->d_tag == DT_SONAME) {
            soname_off = d->d_un.d_val;
            have_soname = 1;
        }
    }
    if (symtab == NULL || strtab == NULL) {
        snprintf(err, errsize, "it has no dynamic symbol table");
        return -VLCS_E_INVALID;
    }
    if (spec->soname != NULL)
        soname = spec->soname;
    else if (have_soname)
        soname = strtab + soname_off;
    else {
        snprintf(err, errsize, "it has no soname, so dependants could not find a stand-in");
        return -VLCS_E_INVALID;
    }
    size_t count = object_symbol_count(lm), n = 0;
    struct fwd_sym *syms = calloc(count ? count : 1, sizeof *syms);
    if (syms == NULL) {
        snprintf(err, errsize, "out of memory");
        return -VLCS_E_SYSTEM;
    }
    for (size_t i = 1; i < count; i++) {
        const ElfW(Sym) *s = &symtab[i];
        int type = ELF64_ST_TYPE(s->st_info), bind = ELF64_ST_BIND(s->st_info);
        if (s->st_shndx == SHN_UNDEF || (bind != STB_GLOBAL && bind != STB_WEAK) ||
            ELF64_ST_VISIBILITY(s->st_other) != STV_DEFAULT)
            continue;
        if (type == STT_TLS)
            continue; /* a per-thread address cannot be absolute */
        if (type != STT_FUNC && type != STT_OBJECT && type != STT_GNU_IFUNC && type != STT_NOTYPE)
            continue;
        const char *name = strtab + s->st_name;
        if (!fwd_name_wanted(name, spec->prefixes))
            continue;
        /* Data: the copy the program uses (a copy relocation may have moved
         * it into the executable).  Functions: the library's own, resolved
         * (an IFUNC's value is its resolver). */
        void *addr = type == STT_OBJECT ? dlsym(RTLD_DEFAULT, name) : NULL;
        if (addr == NULL)
            addr = dlsym(handle, name);
        if (addr == NULL)
            continue;
        bool dup = false;
        for (size_t j = 0; j < n && !dup; j++)
            dup = strcmp(syms[j].name, name) == 0;
        if (dup)
            continue; /* another version of the same name: dlsym gave the default */
        for (size_t j = 0; j < nov; j++)
            if (strcmp(ov[j].name, name) == 0)
                addr = ov[j].addr;
        syms[n++] = (struct fwd_sym){name, (uintptr_t)addr,
                                     type == STT_OBJECT ? STT_OBJECT : STT_FUNC, s->st_size};
    }
    if (n == 0 && spec->prefixes != NULL) {
        free(syms);
        snprintf(err, errsize, "it exports no symbol whose name begins with %s", spec->prefixes);
        return -VLCS_E_NOT_FOUND;
    }
    size_t size = 0;
    unsigned char *img = build(soname, syms, n, NULL, 0, &size);
    free(syms);
    int fd = write_memfd("vlcs-forwarder", img, size, err, errsize);
    if (fd >= 0)
        snprintf(soname_out, soname_size, "%s", soname);
    return fd;
}

/* A root object for a new namespace: no symbols, only DT_NEEDED entries
 * (absolute paths).  Loaded first, its dependencies in order form the
 * namespace's global scope: the interposer, then the service forwarders,
 * so that even libraries that do not name a service (Python extension
 * modules, plugins) bind to it. */
int forwarder_root(const char *const *needed, size_t n, char *err, size_t errsize)
{
    return forwarder_root_vars(needed, n, NULL, 0, err, errsize);
}

int forwarder_root_vars(const char *const *needed, size_t n, const struct root_var *vars,
                        size_t nvars, char *err, size_t errsize)
{
    struct fwd_sym syms[32];
    if (nvars > sizeof syms / sizeof *syms) {
        snprintf(err, errsize, "a root defines at most %zu variables",
                 sizeof syms / sizeof *syms);
        return -VLCS_E_INVALID;
    }
    for (size_t i = 0; i < nvars; i++)
        syms[i] = (struct fwd_sym){vars[i].name, (uintptr_t)vars[i].addr, STT_OBJECT, vars[i].size};
    size_t size = 0;
    unsigned char *img = build("vlcs-namespace-root", syms, nvars, needed, n, &size);
    return write_memfd("vlcs-root", img, size, err, errsize);
}

/* Roots made before, by their list of paths: contexts made with the same
 * services start from the same root, and writing one costs a dozen system
 * calls.  The few descriptors kept stay open; callers get duplicates, so
 * that one put out of the list never closes a root being loaded. */
enum { ROOTS_KEPT = 8 };
static struct {
    root_maker make;
    char *key; /* the paths, one per line */
    int fd;
} roots[ROOTS_KEPT];
static size_t roots_made;
static pthread_mutex_t roots_lock = PTHREAD_MUTEX_INITIALIZER;

int forwarder_root_shared(root_maker make, const char *const *needed, size_t n, char *err,
                          size_t errsize)
{
    size_t len = 1;
    for (size_t i = 0; i < n; i++)
        len += strlen(needed[i]) + 1;
    char *key = malloc(len);
    if (key == NULL) {
        snprintf(err, errsize, "out of memory");
        return -VLCS_E_SYSTEM;
    }
    char *at = key;
    for (size_t i = 0; i < n; i++)
        at += sprintf(at, "%s\n", needed[i]);
    *at = '\0';
    pthread_mutex_lock(&roots_lock);
    int fd = -1;
    for (size_t i = 0; i < ROOTS_KEPT && fd < 0; i++)
        if (roots[i].key != NULL && roots[i].make == make && strcmp(roots[i].key, key) == 0)
            fd = roots[i].fd;
    if (fd < 0) {
        fd = make(needed, n, err, errsize);
        if (fd >= 0) {
            size_t slot = roots_made++ % ROOTS_KEPT;
            if (roots[slot].key != NULL) {
                free(roots[slot].key);
                close(roots[slot].fd);
            }
            roots[slot].make = make;
            roots[slot].key = key;
            roots[slot].fd = fd;
            key = NULL;
        }
    }
    int copy = fd < 0 ? fd : fcntl(fd, F_DUPFD_CLOEXEC, 0);
    pthread_mutex_unlock(&roots_lock);
    free(key);
    if (fd >= 0 && copy < 0) {
        snprintf(err, errsize, "cannot duplicate a descriptor: %s", strerror(errno));
        return -VLCS_E_SYSTEM;
    }
    return copy;
}

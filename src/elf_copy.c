/*
 * elf_copy.c - copy mode's copy of a shared object's file: a byte copy in a
 * memfd whose names are rewritten in place (read by elf_read.c, found by
 * elf_search.c), its code left out until it is loaded where nothing of it
 * runs in dlopen, and once loaded, its read-only pages the original's.
 *
 * glibc knows a loaded object by its file (device and inode) and by its
 * soname.  A copy in a memfd is a new file; with its SONAME and the
 * DT_NEEDED names of its tree rewritten to names no other object has, no
 * dependant can be bound to the original or to another context's copy.
 * The new names have the old names' lengths, so only .dynstr's bytes
 * change: the copy's code and data are the file's.
 */
#include "common.h"
#include "elf_copy.h"
#include "context.h"
#include "elf_read.h"

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
        /* A program's copy (vlcs_ctx_exec in copy mode) loads as a library:
         * glibc refuses to dlopen what is marked a PIE executable. */
        uint64_t flags1 = e->flags1 & ~(uint64_t)DF_1_PIE;
        if (copied == 0 && e->flags1_at != 0 && flags1 != e->flags1 &&
            pwrite(out, &flags1, sizeof flags1, (off_t)e->flags1_at) != sizeof flags1)
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

/* ---- a copy whose code comes later ---------------------------------------- */

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

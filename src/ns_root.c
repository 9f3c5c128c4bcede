/*
 * ns_root.c - a namespace's first object: a copy of vlcs's interposer whose
 * DT_NEEDED entries name the namespace's other first objects (libm, a
 * global library, the services' forwarders, libc), by the descriptors the
 * process holds.
 *
 * Started from a generated object that names the interposer and the rest, a
 * namespace costs ld.so one more object (an open, a map, a link map and its
 * place in every lookup's scope): about a tenth of a context's creation.
 * The interposer keeps the room its copy needs: spare dynamic entries (it
 * is linked with --spare-dynamic-tags) and vlcs_ip_needed, a buffer of its
 * writable data that the names are written into.  ld.so reads a DT_NEEDED
 * name at DT_STRTAB plus the entry's value, which may reach past .dynstr,
 * so the copy differs from the file only in its writable segment, which
 * every namespace has a private copy of anyway.
 *
 * A file without that room (built by another linker, stripped of its
 * section headers) gets the generated object, as before.
 */
#include "common.h"
#include "ns_root.h"
#include "forwarder.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The file offset of vaddr..vaddr+size inside the file-backed part of a
 * writable PT_LOAD, or -1: what the copy writes lies there, so that the
 * pages of the rest stay the file's (ns_root_share). */
static int64_t writable_at(const ElfW(Phdr) *ph, size_t nph, uint64_t vaddr, uint64_t size)
{
    for (size_t i = 0; i < nph; i++)
        if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_W) && vaddr >= ph[i].p_vaddr &&
            size <= ph[i].p_filesz && vaddr - ph[i].p_vaddr <= ph[i].p_filesz - size)
            return (int64_t)(ph[i].p_offset + (vaddr - ph[i].p_vaddr));
    return -1;
}

/* img[off..off+size) lies inside the image of img_size bytes. */
static bool inside(uint64_t off, uint64_t size, size_t img_size)
{
    return off <= img_size && size <= img_size - off;
}

/* The dynamic symbol `name` of the image, found from its nsh section
 * headers, or NULL. */
static const ElfW(Sym) *dynamic_symbol(const unsigned char *img, size_t size,
                                       const ElfW(Shdr) *sh, size_t nsh, const char *name)
{
    for (size_t i = 0; i < nsh; i++) {
        if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= nsh ||
            sh[i].sh_entsize != sizeof(ElfW(Sym)) || !inside(sh[i].sh_offset, sh[i].sh_size, size) ||
            sh[i].sh_offset % _Alignof(ElfW(Sym)) != 0)
            continue;
        const ElfW(Shdr) *str = &sh[sh[i].sh_link];
        if (!inside(str->sh_offset, str->sh_size, size) || str->sh_size == 0 ||
            img[str->sh_offset + str->sh_size - 1] != '\0')
            return NULL;
        const char *strtab = (const char *)img + str->sh_offset;
        const ElfW(Sym) *syms = (const ElfW(Sym) *)(img + sh[i].sh_offset);
        for (size_t k = 1; k < sh[i].sh_size / sizeof *syms; k++)
            if (syms[k].st_name < str->sh_size && syms[k].st_shndx != SHN_UNDEF &&
                strcmp(strtab + syms[k].st_name, name) == 0)
                return &syms[k];
        return NULL;
    }
    return NULL;
}

/* The interposer's image with `needed` as its first DT_NEEDED entries, in
 * order: 0, or -1 where the image has no room for them. */
static int name_needed(unsigned char *img, size_t size, const ElfW(Shdr) *sh, size_t nsh,
                       const char *const *needed, size_t n)
{
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)img;
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(img + eh->e_phoff);
    const ElfW(Phdr) *dyn_ph = NULL;
    for (size_t i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_DYNAMIC)
            dyn_ph = &ph[i];
    if (dyn_ph == NULL || !inside(dyn_ph->p_offset, dyn_ph->p_filesz, size) ||
        dyn_ph->p_offset % _Alignof(ElfW(Dyn)) != 0)
        return -1;
    ElfW(Dyn) *dyn = (ElfW(Dyn) *)(img + dyn_ph->p_offset);
    size_t slots = dyn_ph->p_filesz / sizeof *dyn, end = 0;
    uint64_t strtab = 0;
    for (; end < slots && dyn[end].d_tag != DT_NULL; end++)
        if (dyn[end].d_tag == DT_STRTAB)
            strtab = dyn[end].d_un.d_ptr;
    const ElfW(Sym) *room = dynamic_symbol(img, size, sh, nsh, VLCS_IP_NEEDED_SYMBOL);
    int64_t room_at = room != NULL ? writable_at(ph, eh->e_phnum, room->st_value, room->st_size)
                                   : -1;
    if (writable_at(ph, eh->e_phnum, dyn_ph->p_vaddr, dyn_ph->p_filesz) < 0)
        return -1;
    size_t len = 0;
    for (size_t i = 0; i < n; i++)
        len += strlen(needed[i]) + 1;
    /* a DT_NULL stays at the end */
    if (room_at < 0 || strtab == 0 || room->st_value <= strtab || len > room->st_size ||
        end + n >= slots)
        return -1;

    /* The new names, at offsets from DT_STRTAB, come first; the file's own
     * (libc.so.6) after them: they find the objects already loaded by
     * their sonames, and give them the names the file's symbol versions
     * are checked against. */
    ElfW(Dyn) *out = calloc(slots, sizeof *out);
    if (out == NULL)
        return -1;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(needed[i]) + 1;
        memcpy(img + room_at + at, needed[i], l);
        out[i] = (ElfW(Dyn)){.d_tag = DT_NEEDED, .d_un.d_val = room->st_value - strtab + at};
        at += l;
    }
    memset(img + room_at + at, 0, room->st_size - at);
    size_t k = n;
    for (size_t i = 0; i < end; i++)
        if (dyn[i].d_tag == DT_NEEDED)
            out[k++] = dyn[i];
    for (size_t i = 0; i < end; i++)
        if (dyn[i].d_tag != DT_NEEDED)
            out[k++] = dyn[i];
    memcpy(dyn, out, slots * sizeof *out);
    free(out);
    return 0;
}

/* The part of the file ld.so maps (headers and PT_LOAD segments, not its
 * section headers nor debugging sections), malloc'd, its size in *size;
 * its section headers in sh (at most nsh of them, the count in *nsh).
 * NULL where it is not a 64-bit ELF file that says so consistently. */
static unsigned char *loaded_part(int fd, size_t *size, ElfW(Shdr) *sh, size_t *nsh)
{
    ElfW(Ehdr) eh;
    ElfW(Phdr) ph[64];
    if (pread(fd, &eh, sizeof eh, 0) != sizeof eh || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
        eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof *ph ||
        eh.e_phnum > sizeof ph / sizeof *ph || eh.e_shentsize != sizeof *sh ||
        eh.e_shnum > *nsh || eh.e_phoff % _Alignof(ElfW(Phdr)) != 0 ||
        pread(fd, ph, eh.e_phnum * sizeof *ph, (off_t)eh.e_phoff) !=
            (ssize_t)(eh.e_phnum * sizeof *ph) ||
        pread(fd, sh, eh.e_shnum * sizeof *sh, (off_t)eh.e_shoff) !=
            (ssize_t)(eh.e_shnum * sizeof *sh))
        return NULL;
    uint64_t end = eh.e_phoff + eh.e_phnum * sizeof *ph;
    for (size_t i = 0; i < eh.e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && ph[i].p_offset + ph[i].p_filesz > end)
            end = ph[i].p_offset + ph[i].p_filesz;
    unsigned char *img = end < (64u << 20) ? malloc(end) : NULL;
    if (img == NULL || pread(fd, img, end, 0) != (ssize_t)end) {
        free(img);
        return NULL;
    }
    *size = end;
    *nsh = eh.e_shnum;
    return img;
}

/* A copy of the interposer at `path` naming `needed`, as a memfd, or -1. */
static int interposer_copy(const char *path, const char *const *needed, size_t n)
{
    int in = open(path, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return -1;
    ElfW(Shdr) sh[128];
    size_t size = 0, nsh = sizeof sh / sizeof *sh;
    unsigned char *img = loaded_part(in, &size, sh, &nsh);
    close(in);
    int fd = img != NULL && name_needed(img, size, sh, nsh, needed, n) == 0
                 ? memfd_create("vlcs-interposer", MFD_CLOEXEC)
                 : -1;
    if (fd >= 0 && write(fd, img, size) != (ssize_t)size) {
        close(fd);
        fd = -1;
    }
    free(img);
    return fd;
}

int ns_root_make(const char *const *needed, size_t n, char *err, size_t errsize)
{
    /* where the copy cannot be made, the generated object does its work */
    int fd = n > 0 ? interposer_copy(needed[0], needed + 1, n - 1) : -1;
    return fd >= 0 ? fd : forwarder_root(needed, n, err, errsize);
}

void ns_root_share(const struct link_map *lm, int original)
{
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)lm->l_addr;
    if (original < 0 || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
        eh->e_phentsize != sizeof(ElfW(Phdr)))
        return;
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(lm->l_addr + eh->e_phoff);
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), mask = ~(page - 1);
    for (size_t i = 0; i < eh->e_phnum; i++) {
        if (ph[i].p_type != PT_LOAD || (ph[i].p_flags & PF_W) ||
            (ph[i].p_vaddr & (page - 1)) != (ph[i].p_offset & (page - 1)))
            continue;
        uint64_t lo = ph[i].p_offset & mask, hi = (ph[i].p_offset + ph[i].p_filesz + page - 1) & mask;
        /* not a file page the writable segments share: the copy wrote there */
        for (size_t k = 0; k < eh->e_phnum; k++)
            if (ph[k].p_type == PT_LOAD && (ph[k].p_flags & PF_W) && ph[k].p_filesz > 0) {
                uint64_t wlo = ph[k].p_offset & mask;
                uint64_t whi = (ph[k].p_offset + ph[k].p_filesz + page - 1) & mask;
                if (wlo < hi && whi > lo) {
                    if (wlo <= lo)
                        lo = whi < hi ? whi : hi;
                    else
                        hi = wlo;
                }
            }
        if (hi <= lo)
            continue;
        int prot = PROT_READ | (ph[i].p_flags & PF_X ? PROT_EXEC : 0);
        /* on failure the copy's pages stay: the same bytes */
        (void)mmap((void *)(lm->l_addr + (ph[i].p_vaddr & mask) + (lo - (ph[i].p_offset & mask))),
                   hi - lo, prot, MAP_PRIVATE | MAP_FIXED, original, (off_t)lo);
    }
}

/*
 * elf_read.c - what vlcs reads of a shared object's file, given an open
 * descriptor: its dynamic section's names (SONAME, DT_NEEDED,
 * RUNPATH/RPATH), its program headers, its code sections, its
 * constructors, its STB_GNU_UNIQUE symbols and whether anything of its
 * code runs while ld.so relocates it.  Whatever file a user names goes
 * through here: every offset and size is checked against the file before
 * use, and a file that fails a check is refused in one sentence.  It
 * holds no policy of where files are (elf_search.c) or what is done with
 * them (elf_copy.c), and calls nothing but libc: its unit test and its
 * fuzzer (tests/fuzz) build it alone.
 */
#include "elf_read.h"

#include <elf.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__x86_64__)
#define OWN_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define OWN_MACHINE EM_AARCH64
#else
#error "copy mode knows x86-64 and AArch64 only"
#endif

void elf_names_free(struct elf_names *e)
{
    free(e->strtab);
    memset(e, 0, sizeof *e);
}

int elf_read_at(int fd, void *buf, size_t n, off_t off)
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

/* Whether len bytes from off lie inside a file of size bytes. */
static bool inside(uint64_t off, uint64_t len, uint64_t size) { return off <= size && len <= size - off; }

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
    if (elf_read_at(fd, &eh, sizeof eh, 0) != 0 || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
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
    if (elf_read_at(fd, ph, eh.e_phnum * sizeof *ph, (off_t)eh.e_phoff) != 0) {
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
    if (dyn == NULL || elf_read_at(fd, dyn, ndyn * sizeof *dyn, (off_t)dynph->p_offset) != 0) {
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
        case DT_FLAGS_1:
            e->flags1 = v;
            e->flags1_at = dynph->p_offset + i * sizeof *dyn + offsetof(ElfW(Dyn), d_un);
            break;
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
    struct stat st;
    uint64_t file_size = fstat(fd, &st) == 0 && st.st_size > 0 ? (uint64_t)st.st_size : 0;
    size_t nsh = eh.e_shentsize == sizeof(ElfW(Shdr)) ? (eh.e_shnum < 4096 ? eh.e_shnum : 4096) : 0;
    ElfW(Shdr) *shs = nsh ? malloc(nsh * sizeof *shs) : NULL; /* one read for the table */
    if (shs != NULL && elf_read_at(fd, shs, nsh * sizeof *shs, (off_t)eh.e_shoff) != 0)
        nsh = 0; /* cut short: as a library without section headers */
    for (size_t i = 0; shs != NULL && i < nsh; i++) {
        const ElfW(Shdr) *sh = &shs[i];
        if (!inside(sh->sh_offset, sh->sh_size, file_size))
            continue; /* a section header that lies: as if it were not there */
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
    if (elf_read_at(fd, e->strtab, strsz, (off_t)e->strtab_off) != 0) {
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

const char *elf_str(const struct elf_names *e, uint64_t off)
{
    return off == UINT64_MAX ? NULL : e->strtab + off;
}

bool elf_is_library(int fd)
{
    ElfW(Ehdr) eh;
    return elf_read_at(fd, &eh, sizeof eh, 0) == 0 && memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
           eh.e_ident[EI_CLASS] == (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) &&
           eh.e_machine == OWN_MACHINE && eh.e_type == ET_DYN;
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
        if (elf_read_at(fd, chunk, k * sizeof *chunk, (off_t)(e->dynsym_off + i * sizeof *chunk)) != 0)
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
        if (elf_read_at(fd, syms, k * sizeof *syms, (off_t)(e->dynsym_off + i * sizeof *syms)) != 0)
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
            if (elf_read_at(fd, rel, k * sizeof *rel, (off_t)(tables[t][0] + at)) != 0)
                return false;
            for (size_t j = 0; j < k; j++)
                if (ELF64_R_TYPE(rel[j].r_info) == irelative)
                    return false;
        }
    return true;
}

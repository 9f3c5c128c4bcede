/*
 * elf_read.h - what vlcs reads of a shared object's file (elf_read.c):
 * checked against the file, never trusted.  Needs libc alone.
 */
#ifndef VLCS_ELF_READ_H
#define VLCS_ELF_READ_H

#include <link.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "vlcs.h"

#ifndef HIDDEN
#define HIDDEN __attribute__((visibility("hidden")))
#endif

#define ELF_MAX_NEEDED 128
#define ELF_RENAME_TAIL 7 /* the characters a new name replaces: '~' and 6 base-36 digits */
struct elf_names {
    uint64_t strtab_off, strsz; /* .dynstr's place in the file */
    char *strtab;
    uint64_t soname, runpath, rpath; /* offsets in strtab; UINT64_MAX: none */
    uint64_t needed[ELF_MAX_NEEDED];
    size_t nneeded;
    ElfW(Phdr) phdr[64]; /* its program headers */
    size_t nphdr;
    uint64_t dynsym_off, ndynsym; /* .dynsym, from the section headers (0: none found) */
    bool textrel; /* code that relocations write to: no page of it is the file's */
    struct {
        uint64_t off, size;
    } code[16]; /* file extents of its code sections (SHF_EXECINSTR) */
    size_t ncode;
    /* its constructors: DT_INIT, DT_INIT_ARRAY and its size (0: none), and
     * where their dynamic entries' tags are in the file */
    uint64_t init, init_array, init_arraysz;
    uint64_t init_tags[3];
    size_t ninit_tags;
    uint64_t rela_off, relasz, jmprel_off, pltrelsz; /* its relocations (0: none) */
    /* DT_FLAGS_1's value, and where it is in the file (0: no such entry) */
    uint64_t flags1, flags1_at;
};
struct elf_rename {
    uint64_t at;    /* file offset */
    const char *to; /* as long as what it replaces */
};

/* e read from the shared library open at fd (path: its name in why):
 * VLCS_OK; else VLCS_E_INVALID (not a shared library for this machine, or
 * an offset or size outside the file) or VLCS_E_SYSTEM (out of memory),
 * the reason in why and nothing to free.  Every string offset e holds is
 * inside e->strtab, which ends in a NUL byte; its symbol table and code
 * sections lie inside the file (a section header that says otherwise is
 * left out). */
HIDDEN int elf_names_read(int fd, const char *path, struct elf_names *e, char *why, size_t size);
HIDDEN void elf_names_free(struct elf_names *e);
/* The string at offset off of e's string table; NULL for UINT64_MAX. */
HIDDEN const char *elf_str(const struct elf_names *e, uint64_t off);
/* Whether the file open at fd is a shared library for this machine. */
HIDDEN bool elf_is_library(int fd);
/* n bytes at off: 0, or -1 when the file ends first or cannot be read. */
HIDDEN int elf_read_at(int fd, void *buf, size_t n, off_t off);
/* The st_info bytes of e's STB_GNU_UNIQUE symbols with their STB_GLOBAL
 * values (*out, malloc'd); how many (0: none, or out of memory). */
HIDDEN size_t elf_unique_symbols(int fd, const struct elf_names *e, struct elf_rename **out);
/* Whether a copy of e may leave its code out until it is loaded: none of
 * it runs while ld.so relocates it (IFUNC, IRELATIVE, TEXTREL). */
HIDDEN bool elf_lazy_ok(int fd, const struct elf_names *e);

#endif

/* libFuzzer target: elf_read.c, which reads whatever file a user names as
 * a library (copy mode reads every library of a context's tree through
 * it).  Each input is a file in a memfd; a run fails on any crash, leak or
 * undefined behaviour AddressSanitizer and UBSan see, and on a result that
 * breaks what elf_read.h promises: every string offset inside the string
 * table, which ends in a NUL byte; every rewrite of a unique symbol inside
 * the symbol table.  tests/fuzz/README.md says how to run it. */
#define _GNU_SOURCE
#include "elf_read.h"

#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int fd = -1;

static void broken(const char *what)
{
    fprintf(stderr, "fuzz_elf_read: %s\n", what);
    abort();
}

static void check_string(const struct elf_names *e, uint64_t off)
{
    if (off == UINT64_MAX)
        return;
    if (off >= e->strsz)
        broken("a string offset outside the string table");
    (void)strlen(elf_str(e, off)); /* ASan: inside the buffer, NUL-terminated */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (fd < 0 && (fd = memfd_create("fuzz_elf_read", MFD_CLOEXEC)) < 0)
        broken("memfd_create failed");
    if (ftruncate(fd, 0) != 0 || (size > 0 && pwrite(fd, data, size, 0) != (ssize_t)size))
        broken("the input could not be written");
    struct elf_names e;
    char why[256];
    why[0] = '\0';
    int code = elf_names_read(fd, "input", &e, why, sizeof why);
    if (code != VLCS_OK) {
        if (why[0] == '\0' || strlen(why) >= sizeof why)
            broken("a refusal without its sentence");
        return 0;
    }
    if (e.strtab == NULL || e.strtab[e.strsz] != '\0')
        broken("a string table without its NUL");
    check_string(&e, e.soname);
    check_string(&e, e.runpath);
    check_string(&e, e.rpath);
    for (size_t i = 0; i < e.nneeded; i++)
        check_string(&e, e.needed[i]);
    if (e.nphdr == 0 || e.nphdr > sizeof e.phdr / sizeof *e.phdr)
        broken("program headers out of bounds");
    if (e.dynsym_off > size || e.ndynsym > (size - e.dynsym_off) / sizeof(ElfW(Sym)))
        broken("a symbol table past the file's end");
    for (size_t i = 0; i < e.ncode; i++)
        if (e.code[i].off > size || e.code[i].size > size - e.code[i].off)
            broken("a code section past the file's end");
    (void)elf_is_library(fd);
    (void)elf_lazy_ok(fd, &e);
    struct elf_rename *rn = NULL;
    size_t n = elf_unique_symbols(fd, &e, &rn);
    for (size_t i = 0; i < n; i++)
        if (rn[i].at < e.dynsym_off || (rn[i].at - e.dynsym_off) / sizeof(ElfW(Sym)) >= e.ndynsym)
            broken("a unique symbol's rewrite outside the symbol table");
    free(rn);
    elf_names_free(&e);
    return 0;
}

/*
 * exec_program.h - the program file vlcs_ctx_exec runs (exec_program.c):
 * read and checked before anything is loaded, copied loadable, its main
 * found once loaded.
 */
#ifndef VLCS_EXEC_PROGRAM_H
#define VLCS_EXEC_PROGRAM_H

#include "common.h"

#include <elf.h>
#include <limits.h>
#include <sys/types.h>

#if defined(__x86_64__)
#define EXEC_MACHINE EM_X86_64
#define EXEC_MACHINE_NAME "x86-64"
#define R_COPY R_X86_64_COPY
#else
#define EXEC_MACHINE (-1)
#define EXEC_MACHINE_NAME "this machine"
#define R_COPY (-1)
#endif

struct copy_var {
    const char *name; /* in the mapped file */
    uint64_t vaddr, size;
};

struct program {
    char path[PATH_MAX];
    const unsigned char *map;
    size_t size;
    const Elf64_Ehdr *eh;
    off_t flags1_at; /* file offset of DT_FLAGS_1's value, or -1 */
    uint64_t flags1;
    uint64_t main_vaddr; /* from .symtab; 0: none */
    struct copy_var *copies;
    size_t ncopies;
    uint64_t relro_vaddr, relro_size; /* PT_GNU_RELRO: read-only once loaded */
};

typedef int (*main_fn)(int, char **, char **);

/* Sets the error "Error running PATH: WHY"; returns -1. */
HIDDEN int program_refuse(int code, const char *path, const char *why);
/* The program named (a path, or found on PATH), mapped and checked: 0, or
 * -1 with the error set, saying in one sentence why it cannot run. */
HIDDEN int program_open(struct program *p, const char *name);
HIDDEN void program_close(struct program *p);
/* A memfd holding a copy that glibc loads (DF_1_PIE cleared); -1 with the
 * error set. */
HIDDEN int loadable_copy(const struct program *p);
/* Its main, once loaded as h (lm), or NULL. */
HIDDEN main_fn find_main(void *h, const struct link_map *lm, const struct program *p);

#endif

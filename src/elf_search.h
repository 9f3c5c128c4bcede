/*
 * elf_search.h - where ld.so would find a library by name (elf_search.c).
 */
#ifndef VLCS_ELF_SEARCH_H
#define VLCS_ELF_SEARCH_H

#include "common.h"
#include "elf_read.h"

HIDDEN void elf_soname_of(const char *path, char *out, size_t size);
struct elf_from { /* an object that needs a library, and its file */
    const struct elf_names *e;
    const char *path;
};
/* chain: the object that needs name, then the object that loaded it, ... */
HIDDEN int elf_resolve(const char *name, const struct elf_from *chain, size_t nchain, char *out);
/* The same, and in found (PATH_MAX bytes) the path as ld.so would name
 * the object it loads: the folder it searched and name, not the real path. */
HIDDEN int elf_resolve_found(const char *name, const struct elf_from *chain, size_t nchain,
                             char *real, char *found);

#endif

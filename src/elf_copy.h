/*
 * elf_copy.h - copy mode's copy of a file and its pages (elf_copy.c).
 */
#ifndef VLCS_ELF_COPY_H
#define VLCS_ELF_COPY_H

#include "common.h"
#include "elf_read.h"

/* A copy of what ld.so reads of the file (its headers, its PT_LOAD ranges);
 * lazy: without its code pages either (zeros until elf_share_pages maps
 * the original's), its constructors hidden from ld.so (elf_run_init runs
 * them once the code is in place); only for a file elf_lazy_ok passes */
HIDDEN int elf_copy(int fd, const char *path, const char *label, const struct elf_rename *renames,
                    size_t n, const struct elf_names *e, bool lazy, char *why, size_t size);
HIDDEN void elf_run_init(const struct elf_names *e, uintptr_t base);
HIDDEN void elf_keep_args(int argc, char **argv);
HIDDEN int elf_new_name(const char *old, unsigned long serial, char *out, size_t size);
HIDDEN int elf_share_pages(const struct elf_names *e, int origin_fd, int copy_fd, uintptr_t base,
                           const struct elf_rename *renames, size_t nrenames);

#endif

/*
 * object_syms.h - symbols of a file loaded in many namespaces, each found
 * once for the process (object_syms.c).
 */
#ifndef VLCS_OBJECT_SYMS_H
#define VLCS_OBJECT_SYMS_H

#include "common.h"

#include <dlfcn.h>
#include <link.h>

struct link_map;

/* Where lm's dynamic section points with p: glibc has added the load
 * address on most machines, not where the section is read-only (RISC-V,
 * MIPS). */
HIDDEN const void *object_dyn_ptr(const struct link_map *lm, ElfW(Addr) p);
/* name as dlsym finds it in lm, loaded in namespace lmid (its default
 * version), or NULL. */
HIDDEN void *object_sym(Lmid_t lmid, struct link_map *lm, const char *name);
/* How many entries lm's dynamic symbol table holds (from its hash table;
 * 0 without one). */
HIDDEN size_t object_symbol_count(const struct link_map *lm);
/* The names lm's variables at value (its own address, before the load
 * address is added) have: one and its aliases (libc's environ, __environ,
 * _environ), at most cap, each in lm's string table. */
HIDDEN size_t object_names_at(struct link_map *lm, ElfW(Addr) value, const char **names,
                              size_t cap);
/* A thread-local variable's offset in lm's TLS block: true, or false when
 * lm defines no such TLS symbol (or has no GNU hash table). */
HIDDEN bool object_tls_offset(struct link_map *lm, const char *name, size_t *offset);

#endif

/*
 * object_syms.h - symbols of a file loaded in many namespaces, each found
 * once for the process (object_syms.c).
 */
#ifndef VLCS_OBJECT_SYMS_H
#define VLCS_OBJECT_SYMS_H

#include "common.h"

#include <dlfcn.h>

struct link_map;

/* name as dlsym finds it in lm, loaded in namespace lmid (its default
 * version), or NULL. */
HIDDEN void *object_sym(Lmid_t lmid, struct link_map *lm, const char *name);
/* A thread-local variable's offset in lm's TLS block: true, or false when
 * lm defines no such TLS symbol (or has no GNU hash table). */
HIDDEN bool object_tls_offset(struct link_map *lm, const char *name, size_t *offset);

#endif

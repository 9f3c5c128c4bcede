/*
 * copies.h - copy mode's state, shared by copies.c (a context's copies:
 * made, reached, given back) and copies_tree.c (one load's tree of new
 * copies, and which libraries are never copied).
 */
#ifndef VLCS_COPIES_H
#define VLCS_COPIES_H

#include "common.h"
#include "context.h"
#include "elf_read.h"
#include "search_lists.h"
#include "service.h"

#include <link.h>

struct copy {
    char *origin;  /* the original file's real path */
    char *renamed; /* its SONAME in the copy (NULL: it had none) */
    char *soname;  /* the original's (NULL: none) */
    int fd;        /* the memfd */
    int origin_fd; /* the original's (copy_origins.c) */
    char path[FD_PATH_SIZE];
    void *lm;        /* its struct link_map while loaded */
    uintptr_t addr;  /* its load address (dl_iterate_phdr's dlpi_addr) */
    char *load_name; /* the name glibc gave it, kept while a reader may hold it */
};

struct copyset {
    pthread_mutex_t lock; /* recursive: a copy's constructor may dlopen */
    int ip_fd, ip_origin_fd;
    char *ip_load_name;
    void *ip;
    struct copy *copies;
    size_t ncopies, capcopies;
    int *root_fds;
    size_t nroots, caproots;
    /* the roots' link maps, whose search lists grow (open_global), and
     * the lists made for them */
    struct link_map **roots;
    size_t nroot_maps, caproot_maps;
    struct search_grown *grown;
    /* vlcs_ctx_set_global_library (a Python of its own): that library is
     * copied even if it is a service's, and every root lists its copy
     * before the services' forwarders, in place of the one it stands in for */
    char *global_real;
    char global_soname[256]; /* the service it stands in for (services_paths) */
    int global_copy; /* index in copies, -1 until loaded */
    /* the copies its code opened RTLD_GLOBAL, in that order: every later
     * root lists them after the global library, and every earlier root's
     * search list gains them, as a process's global scope holds them for
     * every load */
    struct opened_global {
        int copy;  /* index in copies */
        void *ref; /* held, as earlier roots' lists name it and what it
                    * needs: given back once every root is unloaded */
    } *opened_global;
    size_t nopened_global, capopened_global;
};

/* What libc itself holds (the loader, libc and the libraries that are
 * stubs since glibc 2.34), as the context sees it: its interposer first. */
HIDDEN bool glibc_scoped(const char *name);
/* One copy per process, shared by every context (glibc's, the services'),
 * except the context's own global library, which is its own copy. */
HIDDEN bool process_wide_in(const struct copyset *cs, const char *name);

/* The context's copy of the file at real path origin, or of a library
 * named soname: its index in cs->copies, or -1. */
HIDDEN int find_copy(struct copyset *cs, const char *origin);
HIDDEN int find_soname(struct copyset *cs, const char *soname);
/* A number no earlier copy's new name used. */
HIDDEN unsigned long copies_serial(void);

/* dlopen with RTLD_DEEPBIND (past a sanitizer's dlopen, which refuses it). */
HIDDEN void *deep_open(const char *path, int bind);
/* A loaded copy's read-only pages mapped again from its original, and the
 * copy named after the original's descriptor; the name glibc gave it
 * (freed once the copy is gone); *ok: its code is in place. */
HIDDEN char *share_with_origin(struct link_map *lm, const struct elf_names *e, int origin_fd,
                               int copy_fd, const struct elf_rename *rn, size_t nrn, bool *ok);

/* copies_load_tree's how */
enum {
    COPIES_AGAIN = 1, /* real copied even if the context has a copy of it */
    COPIES_LAZY = 2,  /* functions bound at their first call (RTLD_LAZY), not at load */
};
/* The copies of real's tree that the context lacks, made and loaded; the
 * handle of real's copy (shown: its name in errors).  how: COPIES_* flags.
 * With cs->lock held; NULL with the error set. */
HIDDEN void *copies_load_tree(vlcs_ctx *c, const char *real, const char *shown, int how);

HIDDEN int copies_create(vlcs_ctx *c); /* with c->lock held */

#endif

/*
 * forwarder.h - absolute-symbol forwarders written at run time (forwarder.c).
 */
#ifndef VLCS_FORWARDER_H
#define VLCS_FORWARDER_H

#include "common.h"

/* A symbol whose forwarder entry points somewhere else than the library. */
struct fwd_override {
    const char *name;
    void *addr;
};
/* What a forwarder holds of the object it stands for. */
struct fwd_spec {
    const struct fwd_override *ov; /* entries pointed elsewhere */
    size_t nov;
    const char *soname;   /* NULL: the object's own */
    const char *prefixes; /* comma-separated name prefixes to forward; NULL: all */
};
/* Whether name begins with one of the comma-separated prefixes (every name
 * when prefixes is NULL). */
HIDDEN bool fwd_name_wanted(const char *name, const char *prefixes);
/* A forwarder for `handle` (loaded in the base) as a memfd; its soname is
 * written to soname_out.  On failure -VLCS_E_* (a negated vlcs_errcode_t)
 * with err set. */
HIDDEN int forwarder_create(void *handle, const struct fwd_spec *spec, char *soname_out,
                            size_t soname_size, char *err, size_t errsize);
/* A symbol-less object whose DT_NEEDED are `needed`, as a memfd, or
 * -VLCS_E_* with err set. */
HIDDEN int forwarder_root(const char *const *needed, size_t n, char *err, size_t errsize);
/* A variable a root defines: name at addr (an address of the process's). */
struct root_var {
    const char *name;
    void *addr;
    size_t size;
};
/* The same, defining the nvars variables, found before any definition of
 * its dependencies' by what is loaded under it. */
HIDDEN int forwarder_root_vars(const char *const *needed, size_t n, const struct root_var *vars,
                               size_t nvars, char *err, size_t errsize);
/* What makes a namespace's first object from the paths it needs. */
typedef int (*root_maker)(const char *const *needed, size_t n, char *err, size_t errsize);
/* One made by `make`, once per list of paths: a new descriptor of it. */
HIDDEN int forwarder_root_shared(root_maker make, const char *const *needed, size_t n, char *err,
                                 size_t errsize);

#endif

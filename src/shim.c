/*
 * shim.c - transparent mode: the run-time side of shims made by `vlcs shim`,
 * their registration and vlcs_ctx_load_transparent (the tables they jump
 * through are shim_table.c's, below runtime.c).
 *
 * A shim is a library with the soname of a real one and a stub for each of
 * its functions.  A stub reads the calling thread's slot (vlcs_shim_slot, an
 * exported thread-local that enter/leave keep current) and jumps through
 * row `slot` of the shim's table.  Row 0 is the default context, created
 * when the shim registers; the row of every other context starts as a copy
 * of row 0 and is filled with the context's own copy when the real library
 * is loaded into it.
 */
#include "common.h"
#include "context.h"
#include "error.h"
#include "registry.h"
#include "shim_table.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A failure undoes every step before it, in reverse order, at the labels
 * at the end: the shim is unregistered and its default context destroyed,
 * so a later registration of the same library starts afresh. */
VLCS_API int vlcs_shim_register(const char *soname, const char *real_path,
                                const char *const *names, unsigned long n, void **table)
{
    if (vlcs_init() != 0)
        return -1;
    if (soname == NULL || real_path == NULL || table == NULL || (names == NULL && n > 0)) {
        set_error(VLCS_E_INVALID, "Error registering a vlcs shim: its soname, real path, names "
                                  "or table is NULL");
        return -1;
    }
    struct shim *s = calloc(1, sizeof *s);
    if (s == NULL) {
        set_error(VLCS_E_SYSTEM, "Error registering the vlcs shim of %s: out of memory", soname);
        return -1;
    }
    *s = (struct shim){NULL, soname, real_path, names, n, table};
    char name[64];
    snprintf(name, sizeof name, "default:%.50s", soname);
    vlcs_ctx *dflt = vlcs_ctx_create(name);
    if (dflt == NULL)
        goto fail_free;
    int own = shim_slot_of(ctx_get(dflt, "registering a vlcs shim")); /* row 0 included */
    /* Registered first, so the load below fills row 0 of this shim. */
    shim_table_add(s);
    if (vlcs_ctx_load(dflt, real_path) == NULL)
        goto fail_unregister;
    for (int slot = 0; slot < VLCS_SHIM_SLOTS; slot++)
        if (slot != own)
            memcpy(table + (size_t)slot * n, table + (size_t)own * n, n * sizeof *table);
    return 0;

fail_unregister:
    shim_table_remove(s);
    /* A row the failed load filled in part must not be called through. */
    memset(table + (size_t)own * n, 0, n * sizeof *table);
    /* What the load brought into the default context is unloaded when it
     * can be (vlcs_ctx_destroy); nothing can reach it either way.  The
     * load's error stays the one reported, even if the namespace stays. */
    {
        char saved[1024];
        int code = vlcs_errcode();
        snprintf(saved, sizeof saved, "%s", vlcs_error());
        vlcs_ctx_destroy(dflt);
        set_error(code, "%s", saved);
    }
fail_free:
    free(s);
    return -1;
}

VLCS_API void *vlcs_ctx_load_transparent(vlcs_ctx *h, const char *library)
{
    vlcs_ctx *c = ctx_get(h, "loading a library transparently");
    if (c == NULL)
        return NULL;
    if (library == NULL || *library == '\0') {
        set_error(VLCS_E_INVALID,
                  "Error loading a library transparently into context '%s': the library name "
                  "is empty",
                  c->name);
        return NULL;
    }
    if (shim_real_path(library) == NULL) {
        set_error(VLCS_E_NOT_FOUND,
                  "Error loading %s transparently into context '%s': no vlcs shim for it is "
                  "loaded in this process; generate one with `vlcs shim` and put its folder "
                  "first in LD_LIBRARY_PATH",
                  library, c->name);
        return NULL;
    }
    return vlcs_ctx_load(h, library);
}

/*
 * ns_backend.c - the namespace backend: a context whose libraries live in a
 * linker namespace of its own (made by namespace.c, given back by
 * unload.c), as runtime.c and the files below it ask through struct
 * ctx_backend.
 */
#include "common.h"
#include "context.h"
#include "error.h"
#include "handles.h"
#include "namespace.h"
#include "ns_tree.h"
#include "registry.h"
#include "room.h"
#include "unload.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>

static void *ns_load(vlcs_ctx *c, const char *path, bool fresh)
{
    /* room for a tree of 16 new objects, more than most libraries bring */
    if (room_for_load(c, base_name(path), 16, 0) != 0) {
        if (fresh)
            ns_teardown(c);
        return NULL;
    }
    size_t before = c->nhandles;
    (void)ns_preload_tree(c, path); /* else ld.so finds them */
    dlerror();
    void *h = dlmopen(c->ns.lmid, path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        load_error(c, base_name(path), dlerror());
    } else if (ns_note_handle(c, h) != 0) {
        dlclose(h);
        h = NULL;
        set_error(VLCS_E_SYSTEM, "Error loading %s into context '%s': out of memory", base_name(path),
                  c->name);
    }
    if (h == NULL) {
        ns_close_since(c, before); /* its dependencies go with it, as ld.so's would */
        if (fresh) /* a typo must not use up one of glibc's few namespaces */
            ns_teardown(c);
    }
    return h;
}

static void *ns_loaded(vlcs_ctx *c, const char *path)
{
    return dlmopen(c->ns.lmid, path, RTLD_NOW | RTLD_NOLOAD);
}

static void *ns_scope(vlcs_ctx *c) { return c->ns.ip_handle; }

static size_t ns_objects(vlcs_ctx *c, struct link_map **out, size_t cap)
{
    struct link_map *lm = NULL;
    size_t n = 0;
    if (c->ns.ip_handle == NULL || dlinfo(c->ns.ip_handle, RTLD_DI_LINKMAP, &lm) != 0 || lm == NULL)
        return 0;
    while (lm->l_prev)
        lm = lm->l_prev;
    for (; lm && n < cap; lm = lm->l_next)
        /* ld.so is one object shared by every namespace: it belongs to none. */
        if (lm->l_name != NULL && lm->l_name[0] != '\0' && strstr(lm->l_name, "/ld-linux") == NULL)
            out[n++] = lm;
    return n;
}

/* Whether map is one of the objects of the namespace that start belongs to:
 * its link-map chain, walked without the loader's lock (read only). */
static bool in_chain(const struct link_map *start, const void *map)
{
    for (const struct link_map *m = start; m; m = m->l_next)
        if (m == map)
            return true;
    for (const struct link_map *m = start ? start->l_prev : NULL; m; m = m->l_prev)
        if (m == map)
            return true;
    return false;
}

static bool ns_owns(const vlcs_ctx *c, const void *map)
{
    return c->ns.nstart > 0 && in_chain(c->ns.start[0], map);
}

static int ns_setenv(vlcs_ctx *c, const char *name, const char *value)
{
    return value != NULL ? c->ns.libc_setenv(name, value, 1) : c->ns.libc_unsetenv(name);
}

static const char *ns_getenv(vlcs_ctx *c, const char *name) { return c->ns.libc_getenv(name); }

/* A broken context's streams are not flushed: a fault may have left their
 * locks held. */
static void ns_closing(vlcs_ctx *c)
{
    if (c->fault == NULL)
        ns_flush(c);
    ns_streams_release(c, c->fault != NULL);
}

const struct ctx_backend ns_backend = {
    .name = "namespace",
    .mode = VLCS_MODE_NAMESPACE,
    .kept = "its namespace stays",
    .load = ns_load,
    .loaded = ns_loaded,
    .scope = ns_scope,
    .objects = ns_objects,
    .owns = ns_owns,
    .setenv = ns_setenv,
    .getenv = ns_getenv,
    .closing = ns_closing,
    .unload = ns_unload,
};

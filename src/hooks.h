/*
 * hooks.h - Service-context hooks (hooks.c; service_tbb.c, gpu.c).
 */
#ifndef VLCS_HOOKS_H
#define VLCS_HOOKS_H

#include "common.h"
#include "context.h"
#include "families.h"
#include "forwarder.h"

/* What one family of libraries (oneTBB, the CUDA/HIP runtimes) needs from
 * vlcs when one of them is a service.  Every member may be NULL. */
struct fwd_override;
struct service_hooks {
    const char *family;
    /* `handle` is being made a service.  If it is of this family, write the
     * forwarder entries that vlcs replaces (at most cap) into ov and return
     * how many; else 0.  Keeps nothing: the add may still fail. */
    size_t (*overrides)(void *handle, struct fwd_override *ov, size_t cap);
    /* `handle` is becoming a service, before any context can bind to it:
     * recognise the family and remember what the other hooks need. */
    void (*note_service)(void *handle);
    /* The calling thread entered c.  Returns what on_leave gets back, e.g.
     * the device to restore; -1 for nothing. */
    int (*on_enter)(vlcs_ctx *c);
    /* The thread leaves the frame on_enter answered `saved` for. */
    void (*on_leave)(int saved);
    /* c's namespace is being given back: forget what was kept for it. */
    void (*ns_gone)(vlcs_ctx *c);
};

#define VLCS_HOOK_SLOTS 8 /* families with hooks (hooks.c) */
extern HIDDEN const struct service_hooks tbb_hooks; /* service_tbb.c */
extern HIDDEN const struct service_hooks gpu_hooks; /* gpu.c */
extern HIDDEN const struct service_hooks python_hooks; /* service_python.c */

/* The families' hooks (hooks.c's table), run in the table's order
 * (on_leave in reverse).  A service that forwards only names with given
 * prefixes (the program's C API) is seen only by the families whose
 * replaced entries it carries: the program's handle also finds what base
 * code loaded RTLD_GLOBAL (a CUDA runtime, oneTBB), which is not the
 * service.  prefixes NULL: every family. */
HIDDEN size_t hooks_overrides(void *handle, const char *prefixes, struct fwd_override *ov,
                              size_t cap);
HIDDEN void hooks_note_service(void *handle, const char *prefixes);
HIDDEN void hooks_enter(vlcs_ctx *c, int saved[VLCS_HOOK_SLOTS]);
HIDDEN void hooks_leave(const int saved[VLCS_HOOK_SLOTS]);
HIDDEN void hooks_ns_gone(vlcs_ctx *c);

#endif

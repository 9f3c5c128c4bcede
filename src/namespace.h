/*
 * namespace.h - a context's linker namespace (namespace.c).
 */
#ifndef VLCS_NAMESPACE_H
#define VLCS_NAMESPACE_H

#include "common.h"
#include "context.h"

HIDDEN int ns_create(vlcs_ctx *c); /* with c->lock held */
HIDDEN void ns_api_fill(vlcs_ctx *c, struct vlcs_ip_api *a);

/* The order in which ld.so hands the addresses of unloaded objects to the
 * next load, stated for ThreadSanitizer (ld.so's lock is invisible to it):
 * back before an unload, over after a load. */
HIDDEN void ns_handed_back(void);
HIDDEN void ns_handed_over(void);
/* Closes the namespace's first object when nothing else is left in it (a
 * failed first load, or a destroyed context's libraries all closed): the
 * namespace goes, glibc reuses its number, and the context forgets it (its
 * libc's environment copy freed, its fork handlers dropped). */
HIDDEN void ns_teardown(vlcs_ctx *c);
/* Per-namespace tables are indexed by the namespace's number (glibc has at
 * most 16; it reuses the numbers of namespaces taken back). */
#define NS_SLOTS 64
static inline int ns_slot(Lmid_t lmid) { return (int)((unsigned long)lmid % NS_SLOTS); }

HIDDEN void ns_flush(vlcs_ctx *c);
/* The streams vlcs_ctx_set_stdio gave: retired (stream_retire: their
 * descriptors let go, so that a reader sees the end; closed when the
 * namespace is torn down), the namespace's back on the process's. */
HIDDEN void ns_streams_release(vlcs_ctx *c, bool broken);

/* The names ld.so gave the namespace's first objects (their descriptors'),
 * freed once it has closed them. */
HIDDEN void ns_forget_given(vlcs_ctx *c);

#endif

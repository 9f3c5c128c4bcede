/*
 * ns_global.h - RTLD_GLOBAL inside a context's namespace (ns_global.c).
 */
#ifndef VLCS_NS_GLOBAL_H
#define VLCS_NS_GLOBAL_H

#include "common.h"

struct vlcs_ctx;

/* dlopen(file, mode) with RTLD_GLOBAL, called by code of c's namespace at
 * caller: file found as ld.so would from the caller's object, loaded into
 * the namespace, and it and what it needs added to the namespace's global
 * scope.  The handle, or NULL with the message for the caller's dlerror
 * (dl_why.h). */
HIDDEN void *ns_global_dlopen(struct vlcs_ctx *c, const char *file, int mode, const void *caller);
/* The lists made for c's root let go of: its namespace is gone. */
HIDDEN void ns_global_forget(struct vlcs_ctx *c);

#endif

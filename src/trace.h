/*
 * trace.h - the trace (trace.c).
 */
#ifndef VLCS_TRACE_H
#define VLCS_TRACE_H

#include "common.h"
#include "context.h"
#include "cpuset.h"
#include "families.h"

/* 1 while a trace records: each event site tests it first. */
extern _Atomic int trace_recording;
static inline bool tracing_on(void)
{
    return __builtin_expect(atomic_load_explicit(&trace_recording, memory_order_relaxed), 0);
}
HIDDEN void trace_enter(const vlcs_ctx *c);
HIDDEN void trace_leave(const vlcs_ctx *c);
HIDDEN void trace_cpus(const vlcs_ctx *c, const vmask *from, const vmask *to, const char *why,
                       const vlcs_ctx *cause);
HIDDEN void trace_pool(const vlcs_ctx *c, const char *family, int threads);
HIDDEN void trace_from_env(void); /* VLCS_TRACE_FILE, at vlcs_init */

#endif

/*
 * hooks.c - the Service context's hooks: per library family, what vlcs does
 * when such a library becomes a service and when a thread enters or leaves
 * a context.  Each family lives in a file of its own (service_tbb.c, gpu.c, service_python.c)
 * and is one entry of the table below; src/README.md says how to add one.
 */
#include "internal.h"

static const struct service_hooks *const families[] = {
    &tbb_hooks, /* oneTBB: automatic arenas sized per context */
    &gpu_hooks, /* CUDA and HIP runtimes: the context's device current on enter */
    &python_hooks, /* libpython: the module table read through its methods */
};

#define NFAMILIES (sizeof families / sizeof families[0])
_Static_assert(NFAMILIES <= VLCS_HOOK_SLOTS, "raise VLCS_HOOK_SLOTS in internal.h");

size_t hooks_overrides(void *handle, struct fwd_override *ov, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < NFAMILIES; i++)
        if (families[i]->overrides != NULL)
            n += families[i]->overrides(handle, ov + n, cap - n);
    return n;
}

void hooks_note_service(void *handle)
{
    for (size_t i = 0; i < NFAMILIES; i++)
        if (families[i]->note_service != NULL)
            families[i]->note_service(handle);
}

void hooks_enter(vlcs_ctx *c, int saved[VLCS_HOOK_SLOTS])
{
    for (size_t i = 0; i < NFAMILIES; i++)
        saved[i] = families[i]->on_enter != NULL ? families[i]->on_enter(c) : -1;
}

/* In the reverse order of hooks_enter, as nested state unwinds. */
void hooks_leave(const int saved[VLCS_HOOK_SLOTS])
{
    for (size_t i = NFAMILIES; i-- > 0;)
        if (families[i]->on_leave != NULL)
            families[i]->on_leave(saved[i]);
}

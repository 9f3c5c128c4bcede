/*
 * hooks.c - the Service context's hooks: per library family, what vlcs does
 * when such a library becomes a service and when a thread enters or leaves
 * a context.  Each family's hooks live in a file of their own
 * (service_tbb.c, gpu.c, service_python.c) and hang on its row of the
 * built-in families (families.c); src/README.md says how to add one.
 */
#include "internal.h"

#define HOOKS(i) (builtin_families[i].hooks)

size_t hooks_overrides(void *handle, struct fwd_override *ov, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < nbuiltin_families; i++)
        if (HOOKS(i) != NULL && HOOKS(i)->overrides != NULL)
            n += HOOKS(i)->overrides(handle, ov + n, cap - n);
    return n;
}

void hooks_note_service(void *handle)
{
    for (size_t i = 0; i < nbuiltin_families; i++)
        if (HOOKS(i) != NULL && HOOKS(i)->note_service != NULL)
            HOOKS(i)->note_service(handle);
}

void hooks_enter(vlcs_ctx *c, int saved[VLCS_HOOK_SLOTS])
{
    for (size_t i = 0; i < nbuiltin_families; i++)
        saved[i] = HOOKS(i) != NULL && HOOKS(i)->on_enter != NULL ? HOOKS(i)->on_enter(c) : -1;
}

/* In the reverse order of hooks_enter, as nested state unwinds. */
void hooks_leave(const int saved[VLCS_HOOK_SLOTS])
{
    for (size_t i = nbuiltin_families; i-- > 0;)
        if (HOOKS(i) != NULL && HOOKS(i)->on_leave != NULL)
            HOOKS(i)->on_leave(saved[i]);
}

void hooks_ns_gone(vlcs_ctx *c)
{
    for (size_t i = 0; i < nbuiltin_families; i++)
        if (HOOKS(i) != NULL && HOOKS(i)->ns_gone != NULL)
            HOOKS(i)->ns_gone(c);
}

/*
 * hooks.c - the Service context's hooks: per library family, what vlcs does
 * when such a library becomes a service and when a thread enters or leaves
 * a context.  Each family's hooks live in a file of their own
 * (service_tbb.c, gpu.c, service_python.c) and are listed below, in the
 * order they run (on_leave in reverse); src/README.md says how to add one.
 */
#include "common.h"
#include "hooks.h"
#include "context.h"
#include "forwarder.h"

static const struct service_hooks *const families_hooks[] = {
    &tbb_hooks,    /* oneTBB: automatic arenas sized per context */
    &gpu_hooks,    /* CUDA and HIP runtimes: the context's device current */
    &python_hooks, /* libpython: the module table read through its methods */
};
#define NHOOKS (sizeof families_hooks / sizeof *families_hooks)
_Static_assert(NHOOKS <= VLCS_HOOK_SLOTS, "raise VLCS_HOOK_SLOTS in hooks.h");
#define HOOKS(i) (families_hooks[i])

/* Family i's overrides for handle, written at ov, those the service
 * forwards only (prefixes). */
static size_t family_overrides(size_t i, void *handle, const char *prefixes,
                               struct fwd_override *ov, size_t cap)
{
    if (HOOKS(i) == NULL || HOOKS(i)->overrides == NULL)
        return 0;
    size_t n = HOOKS(i)->overrides(handle, ov, cap), kept = 0;
    for (size_t k = 0; k < n; k++)
        if (fwd_name_wanted(ov[k].name, prefixes))
            ov[kept++] = ov[k];
    return kept;
}

size_t hooks_overrides(void *handle, const char *prefixes, struct fwd_override *ov, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < NHOOKS; i++)
        n += family_overrides(i, handle, prefixes, ov + n, cap - n);
    return n;
}

void hooks_note_service(void *handle, const char *prefixes)
{
    struct fwd_override scratch[48];
    for (size_t i = 0; i < NHOOKS; i++) {
        if (HOOKS(i) == NULL || HOOKS(i)->note_service == NULL)
            continue;
        if (prefixes != NULL &&
            family_overrides(i, handle, prefixes, scratch, sizeof scratch / sizeof *scratch) == 0)
            continue;
        HOOKS(i)->note_service(handle);
    }
}

void hooks_enter(vlcs_ctx *c, int saved[VLCS_HOOK_SLOTS])
{
    for (size_t i = 0; i < NHOOKS; i++)
        saved[i] = HOOKS(i) != NULL && HOOKS(i)->on_enter != NULL ? HOOKS(i)->on_enter(c) : -1;
}

/* In the reverse order of hooks_enter, as nested state unwinds. */
void hooks_leave(const int saved[VLCS_HOOK_SLOTS])
{
    for (size_t i = NHOOKS; i-- > 0;)
        if (HOOKS(i) != NULL && HOOKS(i)->on_leave != NULL)
            HOOKS(i)->on_leave(saved[i]);
}

void hooks_ns_gone(vlcs_ctx *c)
{
    for (size_t i = 0; i < NHOOKS; i++)
        if (HOOKS(i) != NULL && HOOKS(i)->ns_gone != NULL)
            HOOKS(i)->ns_gone(c);
}

/*
 * gpu.c - which GPUs a context sees.
 *
 * Three layers, each read once where it lives:
 *  - NVIDIA's driver (libcuda.so.1) is a service (service_auto.c): it reads
 *    CUDA_VISIBLE_DEVICES once, from the process's environment.  A context
 *    with a GPU list sees its devices through its forwarder: the driver's
 *    device count and device lookup (also as cuGetProcAddress hands them
 *    out, which is how CUDA runtimes reach the driver) answer, for code of
 *    that context, its GPUs only, numbered from 0 in increasing order.
 *    Every other driver call takes the device handles those return, so it
 *    needs no translation.
 *  - ROCm's HSA runtime is a service too and reads ROCR_VISIBLE_DEVICES once
 *    for the process; HIP, private per context, reads HIP_VISIBLE_DEVICES
 *    (and CUDA_VISIBLE_DEVICES) from the context's environment.  So the
 *    context sets those two, never ROCR_VISIBLE_DEVICES, which a private
 *    HSA would apply a second time.
 *  - A CUDA or HIP runtime that is itself a service initialises once for
 *    the process: for it the thread's current device is set on enter and
 *    restored on leave.
 * A context's GPU numbers are those the process sees.
 */
#include "common.h"
#include "caller.h"
#include "context.h"
#include "cpuset.h"
#include "env.h"
#include "error.h"
#include "families.h"
#include "forwarder.h"
#include "hooks.h"
#include "objects.h"
#include "registry.h"
#include "thread.h"

#include <stdio.h>
#include <string.h>

/* CUDA's driver API, as far as it is used here (cuda.h). */
typedef int cu_result;
enum { CU_SUCCESS = 0, CU_ERROR_INVALID_DEVICE = 101 };
typedef cu_result (*cu_count_fn)(int *);
typedef cu_result (*cu_get_fn)(int *, int);
typedef cu_result (*cu_getproc_fn)(const char *, void **, int, unsigned long long);
typedef cu_result (*cu_getproc2_fn)(const char *, void **, int, unsigned long long, int *);

static cu_count_fn _Atomic real_count;
static cu_get_fn _Atomic real_get;
static cu_getproc_fn _Atomic real_getproc;
static cu_getproc2_fn _Atomic real_getproc2;

/* The context whose code made the call at `caller` (only contexts' code
 * reaches these hooks), or where a call from elsewhere jumped in (a tail
 * call leaves its caller's caller), the thread's; NULL unless it was given
 * GPUs. */
static vlcs_ctx *gpu_owner(const void *caller)
{
    vlcs_ctx *c = ctx_of_address((const char *)caller - 1);
    if (c == NULL)
        c = thread_current();
    return c != NULL && __atomic_load_n(&c->gpu.set, __ATOMIC_ACQUIRE) ? c : NULL;
}

/* The process's device number of c's device `ordinal`, or -1: the list's
 * devices the process has, in order. */
static int gpu_nth(const vlcs_ctx *c, int ordinal, int devices)
{
    for (int d = 0, k = 0; d < devices && d < VLCS_MAX_CPUS; d++)
        if (((c->gpu.list.w[d / 64] >> (d % 64)) & 1) && k++ == ordinal)
            return d;
    return -1;
}

static cu_result hook_count(int *count)
{
    cu_result rc = atomic_load(&real_count)(count);
    vlcs_ctx *c = gpu_owner(__builtin_return_address(0));
    if (rc != CU_SUCCESS || c == NULL || count == NULL)
        return rc;
    int n = 0; /* the list's devices the process has */
    for (int d = 0; d < *count && d < VLCS_MAX_CPUS; d++)
        n += (int)((c->gpu.list.w[d / 64] >> (d % 64)) & 1);
    *count = n;
    return rc;
}

static cu_result hook_get(int *device, int ordinal)
{
    vlcs_ctx *c = gpu_owner(__builtin_return_address(0));
    if (c == NULL)
        return atomic_load(&real_get)(device, ordinal);
    int all = 0;
    cu_result rc = atomic_load(&real_count)(&all);
    if (rc != CU_SUCCESS)
        return rc;
    int d = ordinal >= 0 ? gpu_nth(c, ordinal, all) : -1;
    return d < 0 ? CU_ERROR_INVALID_DEVICE : atomic_load(&real_get)(device, d);
}

static cu_result hook_getproc(const char *, void **, int, unsigned long long);
static cu_result hook_getproc2(const char *, void **, int, unsigned long long, int *);

/* The driver's entries a context's forwarder replaces, and what
 * cuGetProcAddress hands out in their place. */
static const struct {
    const char *name;
    void *hook;
} driver_hooks[] = {
    {"cuDeviceGetCount", (void *)hook_count},
    {"cuDeviceGet", (void *)hook_get},
    {"cuGetProcAddress", (void *)hook_getproc},
    {"cuGetProcAddress_v2", (void *)hook_getproc2},
};
#define NDRIVER_HOOKS (sizeof driver_hooks / sizeof *driver_hooks)

static void swap_proc(const char *symbol, void **pfn)
{
    if (symbol == NULL || pfn == NULL || *pfn == NULL)
        return;
    for (size_t i = 0; i < NDRIVER_HOOKS; i++)
        if (strcmp(symbol, driver_hooks[i].name) == 0)
            *pfn = driver_hooks[i].hook;
}

static cu_result hook_getproc(const char *symbol, void **pfn, int version, unsigned long long flags)
{
    cu_result rc = atomic_load(&real_getproc)(symbol, pfn, version, flags);
    if (rc == CU_SUCCESS)
        swap_proc(symbol, pfn);
    return rc;
}

static cu_result hook_getproc2(const char *symbol, void **pfn, int version,
                               unsigned long long flags, int *status)
{
    cu_result rc = atomic_load(&real_getproc2)(symbol, pfn, version, flags, status);
    if (rc == CU_SUCCESS)
        swap_proc(symbol, pfn);
    return rc;
}

/* `name` as `handle`'s own object defines it (not a dependency's). */
static void *own_symbol(void *handle, const char *name)
{
    void *addr = dlsym(handle, name), *map = NULL;
    if (addr == NULL || dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0)
        return NULL;
    return object_at(addr) == map ? addr : NULL;
}

static bool is_cuda_driver(void *handle)
{
    return own_symbol(handle, "cuDeviceGetCount") != NULL &&
           own_symbol(handle, "cuDeviceGet") != NULL && own_symbol(handle, "cuInit") != NULL;
}

typedef int (*set_device_fn)(int);
typedef int (*get_device_fn)(int *);

static set_device_fn _Atomic set_device;
static get_device_fn _Atomic get_device;

static size_t gpu_overrides(void *handle, struct fwd_override *ov, size_t cap)
{
    if (!is_cuda_driver(handle))
        return 0;
    size_t n = 0; /* those this driver has: older ones lack cuGetProcAddress_v2 */
    for (size_t i = 0; i < NDRIVER_HOOKS && n < cap; i++)
        if (own_symbol(handle, driver_hooks[i].name) != NULL)
            ov[n++] = (struct fwd_override){driver_hooks[i].name, driver_hooks[i].hook};
    return n;
}

static void gpu_note_service(void *handle)
{
    if (is_cuda_driver(handle)) {
        atomic_store(&real_count, (cu_count_fn)own_symbol(handle, "cuDeviceGetCount"));
        atomic_store(&real_get, (cu_get_fn)own_symbol(handle, "cuDeviceGet"));
        atomic_store(&real_getproc, (cu_getproc_fn)own_symbol(handle, "cuGetProcAddress"));
        atomic_store(&real_getproc2, (cu_getproc2_fn)own_symbol(handle, "cuGetProcAddress_v2"));
        return;
    }
    const char *set_names[] = {"cudaSetDevice", "hipSetDevice"};
    const char *get_names[] = {"cudaGetDevice", "hipGetDevice"};
    for (int i = 0; i < 2; i++) {
        set_device_fn s = (set_device_fn)dlsym(handle, set_names[i]);
        get_device_fn g = (get_device_fn)dlsym(handle, get_names[i]);
        if (s && g) {
            atomic_store(&get_device, g);
            atomic_store(&set_device, s);
            return;
        }
    }
}

VLCS_API int vlcs_ctx_set_gpus(vlcs_ctx *h, const char *gpulist)
{
    vlcs_ctx *c = ctx_get(h, "setting GPUs");
    if (c == NULL)
        return -1;
    vmask m = {{0}};
    /* every id of the mask, at most 4 digits and a comma each */
    char why[256], list[VLCS_MAX_CPUS * 5 + 1] = "";
    if (gpulist == NULL) {
        set_error(VLCS_E_INVALID, "Error setting GPUs of context '%s': the GPU list is NULL", c->name);
        return -1;
    }
    /* The syntax of CPU lists; the parser's words say "CPU". */
    if (*gpulist != '\0' && mask_parse(gpulist, &m, why, sizeof why) != 0) {
        set_error(VLCS_E_INVALID, "Error setting GPUs of context '%s': %s", c->name, why);
        return -1;
    }
    /* CUDA wants ids separated by commas, never ranges. */
    int first = -1;
    size_t n = 0;
    for (int d = 0; d < VLCS_MAX_CPUS; d++)
        if ((m.w[d / 64] >> (d % 64)) & 1) {
            if (first < 0)
                first = d;
            if (n < sizeof list)
                n += (size_t)snprintf(list + n, sizeof list - n, "%s%d", n ? "," : "", d);
        }
    const char *vars[] = {"CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"};
    for (int i = 0; i < 2; i++)
        if (ctx_setenv(c, vars[i], list) != 0)
            return -1;
    /* Published by gpus_set's release store; the driver's hooks read it
     * without a lock, so a list is set before the context's first CUDA
     * call (a runtime asks for its devices once, when it initialises). */
    c->gpu.list = m;
    __atomic_store_n(&c->gpu.first, first, __ATOMIC_RELEASE);
    __atomic_store_n(&c->gpu.set, true, __ATOMIC_RELEASE);
    return 0;
}

VLCS_API int vlcs_ctx_get_gpus(const vlcs_ctx *h, char *buf, unsigned long size)
{
    vlcs_ctx *c = ctx_get(h, "reading GPUs");
    if (c == NULL)
        return -1;
    if (buf == NULL || size == 0) {
        set_error(VLCS_E_INVALID, "Error reading GPUs of context '%s': no buffer", c->name);
        return -1;
    }
    buf[0] = '\0';
    if (!__atomic_load_n(&c->gpu.set, __ATOMIC_ACQUIRE))
        return 1;
    mask_format(&c->gpu.list, buf, size);
    return 0;
}

static int gpu_enter(vlcs_ctx *c)
{
    set_device_fn s = atomic_load(&set_device);
    get_device_fn g = atomic_load(&get_device);
    int dev = __atomic_load_n(&c->gpu.first, __ATOMIC_ACQUIRE), prev = -1;
    if (s == NULL || !__atomic_load_n(&c->gpu.set, __ATOMIC_ACQUIRE) || dev < 0)
        return -1;
    if (g(&prev) != 0)
        prev = -1;
    s(dev);
    return prev;
}

static void gpu_leave(int prev)
{
    set_device_fn s = atomic_load(&set_device);
    if (s != NULL && prev >= 0)
        s(prev);
}

const struct service_hooks gpu_hooks = {
    .family = "CUDA/HIP runtime and NVIDIA's driver",
    .overrides = gpu_overrides,
    .note_service = gpu_note_service,
    .on_enter = gpu_enter,
    .on_leave = gpu_leave,
};

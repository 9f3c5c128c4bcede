/*
 * gpu.c - which GPUs a context sees.
 *
 * CUDA and ROCm read their visibility variables when they initialise, so a
 * runtime loaded inside a context sees the context's devices through its
 * environment.  A runtime shared as a service initialises once for the
 * process; for it the thread's current device is set on enter and restored
 * on leave.
 */
#include "internal.h"

#include <stdio.h>
#include <string.h>

typedef int (*set_device_fn)(int);
typedef int (*get_device_fn)(int *);

static set_device_fn _Atomic set_device;
static get_device_fn _Atomic get_device;

static void gpu_note_service(void *handle)
{
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
    char why[256], list[1024] = "";
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
            n += (size_t)snprintf(list + n, sizeof list - n, "%s%d", n ? "," : "", d);
        }
    const char *vars[] = {"CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"};
    for (int i = 0; i < 3; i++)
        if (ctx_setenv(c, vars[i], list) != 0)
            return -1;
    __atomic_store_n(&c->gpu_first, first, __ATOMIC_RELEASE);
    __atomic_store_n(&c->gpus_set, true, __ATOMIC_RELEASE);
    return 0;
}

static int gpu_enter(vlcs_ctx *c)
{
    set_device_fn s = atomic_load(&set_device);
    get_device_fn g = atomic_load(&get_device);
    int dev = __atomic_load_n(&c->gpu_first, __ATOMIC_ACQUIRE), prev = -1;
    if (s == NULL || !__atomic_load_n(&c->gpus_set, __ATOMIC_ACQUIRE) || dev < 0)
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
    .family = "CUDA/HIP runtime",
    .note_service = gpu_note_service,
    .on_enter = gpu_enter,
    .on_leave = gpu_leave,
};

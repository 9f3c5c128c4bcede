/* A stand-in for NVIDIA's driver, libcuda.so.1, to test on machines without
 * a GPU what vlcs does about it.  Like the real one it holds state that
 * exists once per process: cuInit claims a process-wide resource (an
 * abstract socket named after the pid), so a second copy of the driver in
 * the process cannot initialise (error 304, as NVIDIA's answers) and,
 * having claimed nothing, neither can the base's copy after it.  Devices:
 * VLCS_FAKE_GPUS of them (default 4), filtered by CUDA_VISIBLE_DEVICES,
 * both read once, at cuInit, from the process's environment; a device
 * handle is the ordinal among those visible, as the real driver's is.
 * cuInit is thread-safe, as the real one is: two contexts' runtimes may
 * start at once over the one driver. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

enum { SUCCESS = 0, NOT_INITIALIZED = 3, INVALID_DEVICE = 101, NOT_FOUND = 500,
       OPERATING_SYSTEM = 304, MAX_GPUS = 64 };

static _Atomic int initialised;
static int nvisible, visible[MAX_GPUS];
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;

static int init_once(void);

int cuInit(unsigned flags)
{
    (void)flags;
    pthread_mutex_lock(&init_lock);
    int rc = initialised ? SUCCESS : init_once();
    pthread_mutex_unlock(&init_lock);
    return rc;
}

static int init_once(void)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    int len = snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "vlcs-fake-cuda-%d", (int)getpid());
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, (socklen_t)(sizeof a.sun_family + 1 + len)) != 0) {
        if (fd >= 0)
            close(fd);
        return OPERATING_SYSTEM;
    }
    const char *n = getenv("VLCS_FAKE_GPUS"), *cvd = getenv("CUDA_VISIBLE_DEVICES");
    int all = n ? atoi(n) : 4;
    if (cvd == NULL) {
        for (int d = 0; d < all && d < MAX_GPUS; d++)
            visible[nvisible++] = d;
    } else {
        for (const char *p = cvd; *p && nvisible < MAX_GPUS;) {
            char *end;
            long d = strtol(p, &end, 10);
            if (end == p || d < 0 || d >= all)
                break; /* as CUDA does: the list ends at the first bad entry */
            visible[nvisible++] = (int)d;
            if (*end != ',')
                break;
            p = end + 1;
        }
    }
    initialised = 1;
    return SUCCESS;
}

int cuDeviceGetCount(int *count)
{
    if (!initialised)
        return NOT_INITIALIZED;
    *count = nvisible;
    return SUCCESS;
}

int cuDeviceGet(int *device, int ordinal)
{
    if (!initialised)
        return NOT_INITIALIZED;
    if (ordinal < 0 || ordinal >= nvisible)
        return INVALID_DEVICE;
    *device = ordinal;
    return SUCCESS;
}

int cuDeviceGetName(char *name, int len, int device)
{
    if (!initialised)
        return NOT_INITIALIZED;
    if (device < 0 || device >= nvisible)
        return INVALID_DEVICE;
    snprintf(name, (size_t)len, "stand-in GPU %d", visible[device]);
    return SUCCESS;
}

int cuGetProcAddress(const char *symbol, void **pfn, int version, unsigned long long flags)
{
    (void)version, (void)flags;
    static const struct {
        const char *name;
        void *fn;
    } table[] = {
        {"cuInit", (void *)cuInit},
        {"cuDeviceGetCount", (void *)cuDeviceGetCount},
        {"cuDeviceGet", (void *)cuDeviceGet},
        {"cuDeviceGetName", (void *)cuDeviceGetName},
        {"cuGetProcAddress", (void *)cuGetProcAddress},
    };
    for (size_t i = 0; i < sizeof table / sizeof *table; i++)
        if (strcmp(symbol, table[i].name) == 0) {
            *pfn = table[i].fn;
            return SUCCESS;
        }
    *pfn = NULL;
    return NOT_FOUND;
}

int cuGetProcAddress_v2(const char *symbol, void **pfn, int version, unsigned long long flags,
                        int *status)
{
    int rc = strcmp(symbol, "cuGetProcAddress_v2") == 0
                 ? (*pfn = (void *)cuGetProcAddress_v2, SUCCESS)
                 : cuGetProcAddress(symbol, pfn, version, flags);
    if (status != NULL)
        *status = rc == SUCCESS ? 0 : 1; /* CU_GET_PROC_ADDRESS_SUCCESS / _SYMBOL_NOT_FOUND */
    return rc;
}

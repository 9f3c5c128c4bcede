/* A stand-in for a CUDA runtime (libcudart), private to each context that
 * loads it: as the real one does, it opens the driver by name at its first
 * call and takes every driver function from cuGetProcAddress_v2. */
#include <dlfcn.h>
#include <stddef.h>

typedef int (*getproc2_fn)(const char *, void **, int, unsigned long long, int *);
static int (*init)(unsigned);
static int (*count)(int *);
static int (*get)(int *, int);
static int (*name)(char *, int, int);
static int status = -1;
static __thread int last_error;

/* As cudaGetLastError: the last call's error, cleared. */
int rt_get_last_error(void)
{
    int e = last_error;
    last_error = 0;
    return e;
}

enum { NO_DRIVER = 35 }; /* cudaErrorInsufficientDriver */

static int start(void)
{
    if (status >= 0)
        return status;
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    getproc2_fn getproc = driver ? (getproc2_fn)dlsym(driver, "cuGetProcAddress_v2") : NULL;
    if (getproc == NULL)
        return status = NO_DRIVER;
    int found;
    if (getproc("cuInit", (void **)&init, 12000, 0, &found) != 0 ||
        getproc("cuDeviceGetCount", (void **)&count, 12000, 0, &found) != 0 ||
        getproc("cuDeviceGet", (void **)&get, 12000, 0, &found) != 0 ||
        getproc("cuDeviceGetName", (void **)&name, 12000, 0, &found) != 0)
        return status = NO_DRIVER;
    return status = init(0);
}

int rt_device_count(int *n)
{
    int rc = start();
    if (rc == 0)
        rc = count(n);
    return last_error = rc;
}

int rt_device_name(int ordinal, char *buf, int len)
{
    int rc = start(), dev = -1;
    if (rc == 0)
        rc = get(&dev, ordinal);
    if (rc == 0)
        rc = name(buf, len, dev);
    return last_error = rc;
}

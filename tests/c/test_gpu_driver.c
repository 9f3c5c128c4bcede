/* One GPU driver per process, a private CUDA runtime per context, and each
 * context seeing its own GPUs, with stand-ins for NVIDIA's driver
 * (libcuda.so.1, found through LD_LIBRARY_PATH as ctest sets it) and for a
 * CUDA runtime, on any machine.
 *   test_gpu_driver namespace | copies: the driver made a service on its
 *       own; contexts with GPU lists "0,2", "" and "3", one with none, and
 *       the base each see their devices, the driver mapped once.
 *   test_gpu_driver private: with the automatic services emptied, the
 *       second context's driver copy fails as NVIDIA's does, and takes the
 *       base's with it: what the first part prevents.
 *   test_gpu_driver list: the list's API and VLCS_AUTO_SERVICES's edits. */
#define _GNU_SOURCE
#include "check.h"

#include <dlfcn.h>

typedef int (*count_fn)(int *);
typedef int (*name_fn)(int, char *, int);

enum { OPERATING_SYSTEM = 304, INVALID_DEVICE = 101 };

/* How many copies of the stand-in driver are mapped: its file at offset 0. */
static int driver_copies(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[1024];
    int n = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long long off = 1;
        char *path = strchr(line, '/');
        if (sscanf(line, "%*x-%*x %*s %llx", &off) == 1 && off == 0 && path &&
            strstr(path, "fake_driver/libcuda.so.1"))
            n++;
    }
    if (f)
        fclose(f);
    return n;
}

struct seen {
    int rc, count;
    char first[64], second[64];
};

/* What context c's private runtime reports. */
static struct seen ask(void *runtime)
{
    struct seen s = {0};
    s.rc = SYM(runtime, count_fn, "rt_device_count")(&s.count);
    name_fn name = SYM(runtime, name_fn, "rt_device_name");
    if (s.rc == 0 && name(0, s.first, sizeof s.first) != 0)
        snprintf(s.first, sizeof s.first, "none");
    if (s.rc == 0 && name(1, s.second, sizeof s.second) != 0)
        snprintf(s.second, sizeof s.second, "none");
    return s;
}

/* The base's own view, through the one driver copy. */
static int base_count(int *count)
{
    void *d = dlopen("libcuda.so.1", RTLD_NOW);
    CHECK(d != NULL, "the base opens the driver: %s", dlerror());
    int rc = ((int (*)(unsigned))dlsym(d, "cuInit"))(0);
    if (rc == 0)
        rc = ((count_fn)dlsym(d, "cuDeviceGetCount"))(count);
    return rc;
}

static vlcs_ctx *with_gpus(const char *name, const char *gpus, int mode)
{
    vlcs_ctx *c = vlcs_ctx_create(name);
    CHECK(c != NULL, "create %s", name);
    CHECK_EQ(0, vlcs_ctx_set_mode(c, mode), "mode");
    if (gpus != NULL)
        CHECK_EQ(0, vlcs_ctx_set_gpus(c, gpus), "set GPUs");
    return c;
}

static int shared_part(int mode)
{
    vlcs_ctx *a = with_gpus("a", "0,2", mode), *b = with_gpus("b", "", mode),
             *c = with_gpus("c", "3", mode), *d = with_gpus("d", NULL, mode);
    struct seen sa = ask(must_load(a, FAKE_RUNTIME_LIB));
    CHECK_EQ(0, sa.rc, "a's runtime initialises over the shared driver");
    CHECK_EQ(2, sa.count, "a sees its two GPUs");
    CHECK_STR("stand-in GPU 0", sa.first, "a's device 0 is the process's GPU 0");
    CHECK_STR("stand-in GPU 2", sa.second, "a's device 1 is the process's GPU 2");
    struct seen sb = ask(must_load(b, FAKE_RUNTIME_LIB));
    CHECK_EQ(0, sb.rc, "b's runtime initialises");
    CHECK_EQ(0, sb.count, "b was given no GPU");
    struct seen sc = ask(must_load(c, FAKE_RUNTIME_LIB));
    CHECK_EQ(0, sc.rc, "the third copy of the runtime initialises too");
    CHECK_EQ(1, sc.count, "c sees one GPU");
    CHECK_STR("stand-in GPU 3", sc.first, "c's device 0 is the process's GPU 3");
    CHECK_STR("none", sc.second, "c has no device 1");
    struct seen sd = ask(must_load(d, FAKE_RUNTIME_LIB));
    CHECK_EQ(4, sd.count, "a context given no GPU list sees the process's");
    int n = -1;
    CHECK_EQ(0, base_count(&n), "the base's CUDA still works");
    CHECK_EQ(4, n, "the base sees every GPU");
    CHECK_EQ(1, driver_copies(), "one copy of the driver in the process");

    char name[256], why[512];
    CHECK_EQ(VLCS_AUTO_SERVICE, vlcs_service_auto_get(0, name, sizeof name, why, sizeof why),
             "the driver is a service");
    CHECK_STR("libcuda.so.1", name, "first on the list");
    CHECK(strstr(why, "304") != NULL, "the list says why: %s", why);
    vlcs_ctx *late = with_gpus("late", "1", mode);
    struct seen sl = ask(must_load(late, FAKE_RUNTIME_LIB));
    CHECK_EQ(1, sl.count, "a context created after the driver became a service");
    CHECK_STR("stand-in GPU 1", sl.first, "late's device 0 is GPU 1");
    vlcs_ctx *all[] = {a, b, c, d, late};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        CHECK(vlcs_ctx_destroy(all[i]) >= 0, "destroy: %s", vlcs_error());
    CHECK_EQ(0, base_count(&n), "the base's CUDA works after the contexts are gone");
    CHECK_EQ(4, n, "and sees every GPU");
    PASS(mode == VLCS_MODE_COPIES ? "gpu driver shared, copy mode" : "gpu driver shared, namespaces");
    return 0;
}

static int private_part(void)
{
    vlcs_ctx *a = with_gpus("a", NULL, VLCS_MODE_NAMESPACE),
             *b = with_gpus("b", NULL, VLCS_MODE_NAMESPACE);
    struct seen sa = ask(must_load(a, FAKE_RUNTIME_LIB));
    CHECK_EQ(0, sa.rc, "the first private driver initialises");
    struct seen sb = ask(must_load(b, FAKE_RUNTIME_LIB));
    CHECK_EQ(OPERATING_SYSTEM, sb.rc, "a second driver copy cannot initialise");
    int n = -1;
    CHECK_EQ(OPERATING_SYSTEM, base_count(&n), "nor can the base's");
    CHECK_EQ(3, driver_copies(), "three copies of the driver");
    CHECK_EQ(-1, vlcs_service_auto_get(0, NULL, 0, NULL, 0), "the list was emptied");
    PASS("private driver copies fail as NVIDIA's do");
    return 0;
}

/* Run with VLCS_AUTO_SERVICES="-libnvidia-ml.so.1,+libvlcs-no-such.so.9". */
static int list_part(void)
{
    char names[8][256];
    int states[8], n = 0;
    while (n < 8 && (states[n] = vlcs_service_auto_get((unsigned long)n, names[n], 256, NULL, 0)) >= 0)
        n++;
    CHECK_CODE(VLCS_E_NOT_FOUND, "past the end");
    CHECK_STR("libcuda.so.1", names[0], "the built-in list, edited");
    for (int i = 0; i < n; i++) {
        CHECK(strcmp(names[i], "libnvidia-ml.so.1") != 0, "removed by -libnvidia-ml.so.1");
        CHECK_EQ(VLCS_AUTO_PENDING, states[i], "nothing loaded yet");
    }
    CHECK_STR("libvlcs-no-such.so.9", names[n - 1], "added by +");
    CHECK_EQ(0, vlcs_service_auto("libvlcs-no-such.so.9", 0), "removed before any load");
    CHECK_EQ(0, vlcs_service_auto("libvlcs-also-missing.so.2", 1), "added");
    CHECK_ERRC(VLCS_E_INVALID, vlcs_service_auto("a,b", 1));
    CHECK_ERRC(VLCS_E_INVALID, vlcs_service_auto("", 1));

    vlcs_ctx *c = vlcs_ctx_create("c");
    must_load(c, PROBE_LIB); /* any load: the list is made services */
    char why[512];
    int st;
    for (int i = 0; (st = vlcs_service_auto_get((unsigned long)i, names[0], 256, why, sizeof why)) >= 0;
         i++) {
        if (strcmp(names[0], "libcuda.so.1") == 0)
            CHECK_EQ(VLCS_AUTO_SERVICE, st, "the stand-in driver is on this machine");
        if (strcmp(names[0], "libvlcs-also-missing.so.2") == 0)
            CHECK_EQ(VLCS_AUTO_ABSENT, st, "a library not on the machine is skipped");
    }
    CHECK_ERR(vlcs_service_auto("libcuda.so.1", 0), "for the life of the process");
    int count = -1;
    CHECK_EQ(0, base_count(&count), "the base's driver works");
    PASS("automatic services: list and edits");
    return 0;
}

int main(int argc, char **argv)
{
    const char *part = argc > 1 ? argv[1] : "namespace";
    if (strcmp(part, "private") == 0) {
        setenv("VLCS_AUTO_SERVICES", "", 1);
        return private_part();
    }
    if (strcmp(part, "list") == 0)
        return list_part();
    return shared_part(strcmp(part, "copies") == 0 ? VLCS_MODE_COPIES : VLCS_MODE_NAMESPACE);
}

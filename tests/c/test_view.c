/* Code in a context sees only the context's CPUs, through every query that
 * requirement 2 lists; code outside sees the machine unchanged. */
#define _GNU_SOURCE
#include "check.h"

#include <dlfcn.h>
#include <sched.h>
#include <sys/sysinfo.h>
#include <unistd.h>

typedef int (*int_fn)(void);
typedef long (*long_fn)(void);
typedef int (*has_fn)(int);
typedef int (*cpuinfo_fn)(char *, size_t);
typedef int (*line_fn)(const char *, const char *, char *, size_t);
typedef unsigned (*hc_fn)(void);

static void expect_view(void *lib, void *cxx, int n, const char *list, const char *who)
{
    CHECK_EQ(n, SYM(lib, int_fn, "probe_sched_getaffinity")(), who);
    CHECK_EQ(n, SYM(lib, int_fn, "probe_pthread_getaffinity")(), who);
    CHECK_EQ(n, SYM(lib, long_fn, "probe_sysconf_onln")(), who);
    CHECK_EQ(n, SYM(lib, long_fn, "probe_sysconf_conf")(), who);
    CHECK_EQ(n, SYM(lib, int_fn, "probe_get_nprocs")(), who);
    CHECK_EQ(n, SYM(lib, int_fn, "probe_get_nprocs_conf")(), who);
    CHECK_EQ(n, SYM(cxx, hc_fn, "probe_hardware_concurrency")(), who);
    char buf[256];
    CHECK_EQ(n, SYM(lib, cpuinfo_fn, "probe_cpuinfo")(buf, sizeof buf), who);
    /* cpuinfo lists ids with commas; the context list may use ranges. */
    line_fn line = SYM(lib, line_fn, "probe_read_line");
    CHECK_EQ(0, line("/proc/self/status", "Cpus_allowed_list:\t", buf, sizeof buf), who);
    CHECK_STR(list, buf, who);
    CHECK_EQ(0, line("/proc/thread-self/status", "Cpus_allowed_list:\t", buf, sizeof buf), who);
    CHECK_STR(list, buf, who);
    for (const char *f = "online"; f; f = strcmp(f, "online") == 0 ? "present"
                                        : strcmp(f, "present") == 0 ? "possible"
                                                                    : NULL) {
        char path[128];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/%s", f);
        CHECK_EQ(0, line(path, NULL, buf, sizeof buf), path);
        CHECK_STR(list, buf, path);
    }
}

int main(void)
{
    int ncpu = get_nprocs();
    if (ncpu < 2) {
        printf("SKIP: needs 2 CPUs, this machine has %d\n", ncpu);
        return 77;
    }
    char all[64];
    snprintf(all, sizeof all, "0-%d", ncpu - 1);

    vlcs_ctx *one = vlcs_ctx_create("one");
    vlcs_ctx *whole = vlcs_ctx_create("whole");
    CHECK(one && whole, "create");
    CHECK_EQ(0, vlcs_ctx_set_cpus(one, "1"), "set_cpus");
    void *lib1 = must_load(one, PROBE_LIB), *cxx1 = must_load(one, PROBE_CXX_LIB);
    void *libw = must_load(whole, PROBE_LIB), *cxxw = must_load(whole, PROBE_CXX_LIB);

    /* Called from a thread that never entered: the library still sees its
     * context, whichever thread calls. */
    expect_view(lib1, cxx1, 1, "1", "context on CPU 1");
    CHECK_EQ(1, SYM(lib1, has_fn, "probe_affinity_has")(1), "real CPU ids are kept");
    CHECK_EQ(0, SYM(lib1, has_fn, "probe_affinity_has")(0), "CPU 0 is not in the context");
    char buf[64];
    CHECK_EQ(1, SYM(lib1, cpuinfo_fn, "probe_cpuinfo")(buf, sizeof buf), "cpuinfo");
    CHECK_STR("1", buf, "/proc/cpuinfo lists processor 1 only");
    expect_view(libw, cxxw, ncpu, all, "context with every CPU");

    /* libgomp sizes itself from what it sees when it loads. */
    void *omp1 = must_load(one, OMP_LIB), *ompw = must_load(whole, OMP_LIB);
    CHECK_EQ(1, SYM(omp1, int_fn, "omp_probe_num_procs")(), "omp_get_num_procs in 1-CPU context");
    CHECK_EQ(1, SYM(omp1, int_fn, "omp_probe_max_threads")(), "omp_get_max_threads follows");
    CHECK_EQ(ncpu, SYM(ompw, int_fn, "omp_probe_num_procs")(), "omp_get_num_procs, every CPU");
    CHECK_EQ(ncpu, SYM(ompw, int_fn, "omp_probe_max_threads")(), "omp_get_max_threads, every CPU");

    /* The base is unchanged: same library loaded normally. */
    void *base = dlopen(PROBE_LIB, RTLD_NOW);
    CHECK(base != NULL, "dlopen in base: %s", dlerror());
    int (*base_n)(void) = (int_fn)dlsym(base, "probe_get_nprocs");
    CHECK_EQ(ncpu, base_n(), "base sees the machine");
    CHECK_EQ(ncpu, sysconf(_SC_NPROCESSORS_ONLN), "base sysconf");

    /* A change of CPU set after load is seen at once. */
    CHECK_EQ(0, vlcs_ctx_set_cpus(one, "0"), "set_cpus after load");
    CHECK_EQ(1, SYM(lib1, has_fn, "probe_affinity_has")(0), "new set seen");
    CHECK_EQ(0, SYM(lib1, cpuinfo_fn, "probe_cpuinfo")(buf, sizeof buf) != 1, "cpuinfo count");
    CHECK_STR("0", buf, "cpuinfo follows the new set");
    PASS("view");
    return 0;
}

/* LLVM's OpenMP runtime (libomp, as conda-forge's scikit-learn uses; Intel's
 * libiomp5 is the same code) in two contexts and the base at once.  Each
 * runtime that starts registers itself under a shared-memory object named
 * after the process, and one that finds another's registration alive ends
 * the process (OMP: Error #15).  In contexts each runtime is one of its own,
 * as in a process: each starts, sizes its team to its context's CPUs and
 * registers under a name of its context's. */
#define _GNU_SOURCE
#include "check.h"

#include <dirent.h>
#include <sched.h>
#include <dlfcn.h>
#include <unistd.h>

#define LIBOMP "libomp.so.5"

typedef int (*count_fn)(void);
typedef void (*parallel_fn)(int *);

/* How many runtimes of this process are registered in /dev/shm (-1: the
 * folder cannot be read, the runtimes fall back to /tmp or their environment). */
static int registrations(void)
{
    char prefix[96];
    snprintf(prefix, sizeof prefix, "__KMP_REGISTERED_LIB_%d_", (int)getpid());
    DIR *d = opendir("/dev/shm");
    if (d == NULL)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

int main(void)
{
    void *probe = dlopen(LIBOMP, RTLD_LAZY | RTLD_LOCAL);
    if (probe == NULL) {
        printf("SKIP: %s is not installed (Debian: libomp-dev)\n", LIBOMP);
        return 77;
    }
    dlclose(probe);
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
        printf("SKIP: needs 2 CPUs\n");
        return 77;
    }
    vlcs_ctx *a = vlcs_ctx_create("a"), *b = vlcs_ctx_create("b");
    CHECK(a && b, "contexts: %s", vlcs_error());
    CHECK(vlcs_ctx_set_cpus(a, "0") == 0 && vlcs_ctx_set_cpus(b, "1") == 0, "cpus");
    void *la = must_load(a, LIBOMP), *lb = must_load(b, LIBOMP);
    CHECK(la != lb, "each context its own runtime");

    /* each starts (the second used to end the process here) */
    CHECK_EQ(1, SYM(la, count_fn, "omp_get_max_threads")(), "a's team: its one CPU");
    CHECK_EQ(1, SYM(lb, count_fn, "omp_get_max_threads")(), "b's team: its one CPU");

    /* and the base's, after them, sees the process */
    void *base = dlopen(LIBOMP, RTLD_NOW | RTLD_LOCAL);
    CHECK(base != NULL, "the base's runtime: %s", dlerror());
    count_fn base_max = (count_fn)dlsym(base, "omp_get_max_threads");
    cpu_set_t set;
    CHECK(sched_getaffinity(0, sizeof set, &set) == 0, "affinity");
    CHECK_EQ(CPU_COUNT(&set), base_max(), "the base's team: the process's CPUs");

    int seen = registrations();
    if (seen >= 0)
        CHECK_EQ(3, seen, "three runtimes registered, each under its own name");

    /* libomp marks itself not to be unloaded: b's namespace stays, and
     * its runtime ends at the process's exit, deleting its keys and
     * unregistering under the name it registered by (an error there ends
     * the process, which the test's exit status shows) */
    int rc = vlcs_ctx_destroy(b);
    CHECK(rc == 0 || rc == 1, "b destroyed: %s", vlcs_error());
    CHECK_EQ(1, SYM(la, count_fn, "omp_get_max_threads")(), "a's runtime goes on");
    CHECK_EQ(CPU_COUNT(&set), base_max(), "the base's runtime goes on");
    PASS("omp_runtimes");
    return 0;
}

/* Copy mode: contexts past glibc's 16 namespaces, each holding renamed
 * copies of its libraries in the base namespace.  Every check here fails
 * if a copy is shared with another context or with the base, or if the
 * context's CPU view, environment or threads leak. */
#define _GNU_SOURCE
#include "check.h"

#include <dlfcn.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Well past 15.  Fewer under ThreadSanitizer (each copy's mappings get
 * shadow memory: minutes for 256) and in strict mode (a filter per load;
 * the kernel's size limit on seccomp filters is reached near 100 loads). */
#define MAX_N 256
#if defined(__SANITIZE_THREAD__)
#define N_SAN 64
#else
#define N_SAN MAX_N
#endif
static int N = N_SAN;

typedef int (*int_fn)(void);
typedef int *(*addr_fn)(void);
typedef const char *(*getenv_fn)(const char *);
typedef char **(*environ_fn)(void);
typedef void *(*open_fn)(const char *, int);
typedef const char *(*err_fn)(void);
typedef int (*region_fn)(unsigned long *);

static void *sym(void *h, const char *name)
{
    void *p = vlcs_ctx_sym(h, name);
    CHECK(p != NULL, "%s", name);
    return p;
}

struct ctx_libs {
    vlcs_ctx *c;
    void *uses, *probe, *omp, *dlopener;
};

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld", &v) == 1)
            break;
    if (f)
        fclose(f);
    return v;
}

static int copy_mappings(void)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[512];
    int mapped = 0;
    while (maps && fgets(line, sizeof line, maps))
        mapped += strstr(line, "vlcs-copy:") != NULL;
    if (maps)
        fclose(maps);
    return mapped;
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    CHECK_EQ(0, vlcs_init(), "init");
    int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
    static struct ctx_libs x[MAX_N];
    if (vlcs_strict_active())
        N = 24;
    char name[32], val[32], cpus[16];

    /* The base's own copy first: every context's must differ from it. */
    void *base_single = dlopen(SINGLETON_LIB, RTLD_NOW);
    CHECK(base_single != NULL, "%s", dlerror());
    int *base_value = ((addr_fn)dlsym(base_single, "singleton_value_addr"))();

    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "copy%d", i);
        x[i].c = vlcs_ctx_create(name);
        CHECK(x[i].c != NULL, "create %d", i);
        CHECK_EQ(VLCS_MODE_AUTO, vlcs_ctx_mode(x[i].c), "no library yet");
        /* half of them ask for copies, the others take them when the
         * namespaces run out (auto) */
        if (i % 2 == 1)
            CHECK_EQ(0, vlcs_ctx_set_mode(x[i].c, VLCS_MODE_COPIES), "set mode");
        snprintf(cpus, sizeof cpus, "%d", i % ncpu);
        CHECK_EQ(0, vlcs_ctx_set_cpus(x[i].c, cpus), "cpus");
        snprintf(val, sizeof val, "value-%d", i);
        CHECK_EQ(0, vlcs_ctx_setenv(x[i].c, "VLCS_COPY_TEST", val), "setenv");
        CHECK_EQ(0, vlcs_ctx_setenv(x[i].c, "OMP_NUM_THREADS", i % 3 == 0 ? "3" : "2"), "omp");
        x[i].uses = vlcs_ctx_load(x[i].c, USES_SINGLETON_LIB);
        CHECK(x[i].uses != NULL, "load uses_singleton into %d", i);
        x[i].probe = vlcs_ctx_load(x[i].c, PROBE_LIB);
        CHECK(x[i].probe != NULL, "load probe into %d", i);
        x[i].omp = vlcs_ctx_load(x[i].c, OMP_LIB);
        CHECK(x[i].omp != NULL, "load omp into %d", i);
        x[i].dlopener = vlcs_ctx_load(x[i].c, DLOPENER_LIB);
        CHECK(x[i].dlopener != NULL, "load dlopener into %d", i);
    }
    int copies = 0;
    for (int i = 0; i < N; i++)
        copies += vlcs_ctx_mode(x[i].c) == VLCS_MODE_COPIES;
    CHECK(copies >= N - 15, "only %d of %d contexts are in copy mode", copies, N);
    printf("%d contexts, %d in copy mode\n", N, copies);

    /* Constructors as ld.so runs them (a copy loaded without its code has
     * them run by vlcs once the code is mapped): the dependency's first,
     * DT_INIT before DT_INIT_ARRAY, argc, argv and the environment given. */
    for (int i = 0; i < N; i++)
        CHECK(((int_fn)sym(x[i].uses, "uses_constructors_seen"))() == 7, "constructors in %d", i);

    /* An IFUNC resolver runs inside dlopen: that copy holds its code from
     * the start (a copy without it would run zeros). */
    for (int i = N - 2; i < N; i++) {
        void *f = vlcs_ctx_load(x[i].c, IFUNC_LIB);
        CHECK(f != NULL, "load the IFUNC library into %d: %s", i, vlcs_error());
        CHECK(((int_fn)sym(f, "ifunc_through_pointer"))() == 7, "the IFUNC in %d", i);
    }

    /* Private globals, the dependency's too: one bump each. */
    for (int i = 0; i < N; i++) {
        CHECK_EQ(1, ((int_fn)sym(x[i].uses, "uses_bump"))(), "first bump in each context");
        int *v = ((addr_fn)sym(x[i].uses, "uses_value_addr"))();
        CHECK(v != base_value, "context %d shares the base's singleton", i);
        *v = 1000 + i;
    }
    for (int i = 0; i < N; i++) {
        int *v = ((addr_fn)sym(x[i].uses, "uses_value_addr"))();
        CHECK_EQ(1000 + i, *v, "each context's own variable");
    }
    CHECK_EQ(41, *base_value, "the base's singleton is untouched");

    for (int i = 0; i < N; i++) {
        /* CPU view: one CPU per context, through every door */
        CHECK_EQ(1, ((int_fn)sym(x[i].probe, "probe_sched_getaffinity"))(), "affinity");
        CHECK_EQ(1, ((int_fn)sym(x[i].probe, "probe_get_nprocs"))(), "get_nprocs");
        CHECK_EQ(1, ((long (*)(void))sym(x[i].probe, "probe_sysconf_onln"))(), "sysconf");
        CHECK_EQ(1, ((int (*)(int))sym(x[i].probe, "probe_affinity_has"))(i % ncpu), "its CPU");
        char buf[64];
        CHECK_EQ(1, ((int (*)(char *, size_t))sym(x[i].probe, "probe_cpuinfo"))(buf, sizeof buf),
                 "/proc/cpuinfo lists one processor");
        snprintf(cpus, sizeof cpus, "%d", i % ncpu);
        CHECK_STR(cpus, buf, "its processor");
        /* environment: its own variable, through getenv and the API */
        snprintf(val, sizeof val, "value-%d", i);
        CHECK_STR(val, ((getenv_fn)sym(x[i].probe, "probe_getenv"))("VLCS_COPY_TEST"), "getenv");
        CHECK_STR(val, vlcs_ctx_getenv(x[i].c, "VLCS_COPY_TEST"), "vlcs_ctx_getenv");
        /* environ read directly: the namespace libc's, the context's
         * variables; in copy mode the process's, which this program holds
         * in its own data (R_X86_64_COPY, as Debian's python3): libc's
         * own storage, found first in a copy's tree, stays NULL */
        char **seen = ((environ_fn)sym(x[i].probe, "probe_environ"))();
        if (vlcs_ctx_mode(x[i].c) == VLCS_MODE_COPIES) {
            CHECK(seen == environ, "context %d: environ is the process's (%p)", i, (void *)seen);
        } else {
            snprintf(buf, sizeof buf, "VLCS_COPY_TEST=%s", val);
            int has = 0;
            for (char **e = seen; e != NULL && *e != NULL && !has; e++)
                has = strcmp(*e, buf) == 0;
            CHECK(has, "context %d: environ is its namespace's, with its variable", i);
        }
        /* libgomp's copy sized by its context's variable and CPUs */
        int want = i % 3 == 0 ? 3 : 2;
        CHECK_EQ(want, ((int_fn)sym(x[i].omp, "omp_probe_max_threads"))(), "OMP_NUM_THREADS");
        CHECK_EQ(1, ((int_fn)sym(x[i].omp, "omp_probe_num_procs"))(), "omp_get_num_procs");
        unsigned long mask = 0;
        CHECK_EQ(0, vlcs_enter(x[i].c), "enter"); /* the caller is the team's first thread */
        CHECK_EQ(want, ((region_fn)sym(x[i].omp, "omp_probe_region"))(&mask), "team size");
        CHECK_EQ(0, vlcs_leave(), "leave");
        CHECK(mask == 1ul << (i % ncpu), "context %d (mode %d): team on CPUs %lx", i, vlcs_ctx_mode(x[i].c), mask);
    }
    CHECK(getenv("VLCS_COPY_TEST") == NULL, "the base's environment is untouched");

    /* glibc loaded into the context by name: the process's, seen through
     * the context's interposer (its getenv is the context's), libm too */
    for (int i = 15; i < N; i += 11) {
        void *libc = vlcs_ctx_load(x[i].c, "libc.so.6"), *libm = vlcs_ctx_load(x[i].c, "libm.so.6");
        CHECK(libc != NULL && libm != NULL, "glibc in context %d", i);
        snprintf(val, sizeof val, "value-%d", i);
        CHECK_STR(val, ((getenv_fn)sym(libc, "getenv"))("VLCS_COPY_TEST"), "libc's getenv");
        CHECK(((double (*)(double))sym(libm, "cos"))(0.0) == 1.0, "libm's cos");
    }

    /* One heap: a block a copy allocates is the process's malloc's (a
     * sanitizer's, in the sanitized builds), freed by the base. */
    for (int i = 0; i < N; i += 7) {
        char *(*dup)(const char *) = (char *(*)(const char *))sym(x[i].probe, "probe_strdup");
        void *(*alloc)(size_t) = (void *(*)(size_t))sym(x[i].probe, "probe_malloc");
        char *s = dup("from a copy");
        void *p = alloc(100);
        CHECK(s != NULL && p != NULL && malloc_usable_size(p) >= 100, "allocations");
        free(s);
        free(p);
    }

    /* A library opened by name by a copy (found through its RUNPATH,
     * $ORIGIN the original's folder): the context's own copy too. */
    for (int i = 0; i < N; i++) {
        void *h = ((open_fn)sym(x[i].dlopener, "dlopener_open"))("libvlcs_runpath_target.so", 0);
        CHECK(h != NULL, "dlopen by name from context %d: %s", i,
              ((err_fn)sym(x[i].dlopener, "dlopener_error"))());
        int *v = ((addr_fn)dlsym(h, "singleton_value_addr"))();
        CHECK_EQ(41, *v, "a fresh copy");
        *v = 2000 + i;
    }
    for (int i = 0; i < N; i++) {
        void *h = ((open_fn)sym(x[i].dlopener, "dlopener_open"))("libvlcs_runpath_target.so", 0);
        CHECK_EQ(2000 + i, *((addr_fn)dlsym(h, "singleton_value_addr"))(), "the same copy again");
        dlclose(h);
        dlclose(h);
    }
    /* dladdr names a copy by its original file, as a namespace's object */
    char want[PATH_MAX], got[PATH_MAX];
    CHECK(realpath(DLOPENER_LIB, want) != NULL, "realpath %s", DLOPENER_LIB);
    for (int i = 0; i < N; i++) {
        const char *own = ((const char *(*)(void))sym(x[i].dlopener, "dlopener_own_file"))();
        CHECK(own != NULL && strncmp(own, "/proc/", 6) != 0 && realpath(own, got) != NULL &&
                  strcmp(got, want) == 0,
              "dladdr in context %d names %s", i, own ? own : "(null)");
    }
    void *missing = ((open_fn)sym(x[N - 1].dlopener, "dlopener_open"))("libvlcs_no_such.so", 0);
    CHECK(missing == NULL, "a missing library");
    const char *why = ((err_fn)sym(x[N - 1].dlopener, "dlopener_error"))();
    CHECK(why != NULL && strstr(why, "libvlcs_no_such.so") != NULL, "dlerror names it: %s",
          why ? why : "(null)");

    /* A tree of twelve libraries, each copy the context's own: its calls
     * counted from the first in each context. */
    for (int i = 1; i < 6; i += 2) {
        CHECK_EQ(VLCS_MODE_COPIES, vlcs_ctx_mode(x[i].c), "an odd context is in copy mode");
        void *chain = vlcs_ctx_load(x[i].c, CHAIN_LIB);
        CHECK(chain != NULL, "load the chain into %d: %s", i, vlcs_error());
        int_fn first = (int_fn)sym(chain, "chain_0");
        CHECK(first() == 12 && first() == 24, "each of the twelve copies of context %d counts its own calls", i);
        CHECK(((int_fn)sym(chain, "chain_11"))() == 3, "the last copy of context %d", i);
    }

    /* A constructor that opens its own library by name gets the copy being
     * loaded (a new copy of it would open itself again, for ever). */
    for (int i = N - 3; i < N; i++) {
        void *so = vlcs_ctx_load(x[i].c, SELF_OPENER_LIB);
        CHECK(so != NULL, "load self_opener into %d", i);
        CHECK_EQ(1, ((int_fn)sym(so, "self_pinned"))(), "its constructor got itself");
    }

    /* fork from a copy's library: the child computes with its copy */
    int_fn bump = (int_fn)sym(x[N - 1].uses, "uses_bump");
    pid_t pid = fork();
    if (pid == 0)
        _exit(bump() == 2 ? 0 : 1);
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0, "fork");

    /* Bad input: not a shared library; a mode set too late. */
    CHECK_NULL(vlcs_ctx_load(x[N - 1].c, "/etc/hostname"), "not an ELF file");
    CHECK_ERR(vlcs_ctx_set_mode(x[N - 1].c, VLCS_MODE_NAMESPACE), "before its first load");
    CHECK_ERR(vlcs_ctx_set_mode(x[0].c, 7), "is not a vlcs_mode");
    /* a program runs in copy mode too, beside the copies the context holds */
    char *argv_true[] = {"/bin/true", NULL};
    CHECK_EQ(0, vlcs_ctx_exec(x[N - 1].c, argv_true), "true in a copy-mode context");
    char *argv_false[] = {"/bin/false", NULL};
    CHECK_EQ(1, vlcs_ctx_exec(x[N - 1].c, argv_false), "false in a copy-mode context");

    if (vlcs_strict_active()) {
        /* raw syscalls from a copy's code are trapped and answered for its
         * context, as from a namespace's */
        void *raw = vlcs_ctx_load(x[N - 1].c, RAWSYS_LIB);
        CHECK(raw != NULL, "load rawsys");
        CHECK_EQ(1, ((int_fn)sym(raw, "raw_affinity_count"))(), "a raw sched_getaffinity");
        CHECK_EQ(VLCS_MODE_COPIES, vlcs_ctx_mode(x[N - 1].c), "in copy mode");
        /* the filters on their code cannot be removed: destroy says so */
        CHECK_EQ(1, vlcs_ctx_destroy(x[N - 1].c), "destroyed, copies stay");
        CHECK(strstr(vlcs_error(), "strict mode") != NULL, "why: %s", vlcs_error());
        printf("ok (strict mode: copies stay loaded, not recycled)\n");
        return 0;
    }
    for (int i = 0; i < N - 3; i++)
        CHECK_EQ(0, vlcs_ctx_destroy(x[i].c), "destroy");
    /* the library that opened itself holds itself: named, kept, as a namespace's */
    for (int i = N - 3; i < N; i++) {
        CHECK_EQ(1, vlcs_ctx_destroy(x[i].c), "destroyed, its copy kept");
        CHECK(strstr(vlcs_error(), "libvlcs_self_opener.so stays loaded") != NULL, "why: %s",
              vlcs_error());
    }

    /* Destroy and re-create: the copies go, memory stays flat. */
    long before = 0;
    int mapped_before = copy_mappings(); /* the self-opening library's, kept */
    int fd_before = dup(0);
    close(fd_before);
    for (int round = 0; round < 300; round++) {
        vlcs_ctx *c = vlcs_ctx_create("again");
        CHECK(c != NULL, "create");
        CHECK_EQ(0, vlcs_ctx_set_mode(c, VLCS_MODE_COPIES), "mode");
        void *h = vlcs_ctx_load(c, USES_SINGLETON_LIB);
        CHECK(h != NULL, "load round %d", round);
        CHECK_EQ(1, ((int_fn)sym(h, "uses_bump"))(), "a fresh copy each round");
        CHECK_EQ(0, vlcs_ctx_destroy(c), "destroy round");
        if (round == 50)
            before = rss_kib();
    }
    long after = rss_kib();
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    /* (a sanitizer's shadow of each new mapping is its own, and grows) */
    CHECK(after - before < 4096, "RSS grew by %ld KiB over 250 rounds", after - before);
#else
    (void)before;
    (void)after;
#endif
    /* Nothing of the rounds' copies is left mapped, no descriptor open. */
    CHECK_EQ(mapped_before, copy_mappings(), "mappings of destroyed contexts' copies");
    int fd_after = dup(0);
    CHECK(fd_after >= 0 && fd_after < fd_before + 4, "descriptors: %d then %d", fd_before, fd_after);
    close(fd_after);
    /* The base, after all of it. */
    CHECK_EQ(1, ((int_fn)dlsym(base_single, "singleton_bump"))(), "the base's copy was never bumped");
    /* A library of the Service context exists once: a copy-mode context's
     * copies bind to the base's object, by its name and by its symbols. */
    CHECK_EQ(0, vlcs_service_add(SINGLETON_LIB), "add the service");
    vlcs_ctx *sc = vlcs_ctx_create("service-user");
    CHECK_EQ(0, vlcs_ctx_set_mode(sc, VLCS_MODE_COPIES), "mode");
    void *su = vlcs_ctx_load(sc, USES_SINGLETON_LIB);
    CHECK(su != NULL, "load a user of the service");
    CHECK(((addr_fn)sym(su, "uses_value_addr"))() == base_value, "the service's one variable");
    void *plugin = vlcs_ctx_load(sc, PLUGIN_SINGLETON_LIB);
    CHECK(plugin != NULL, "a plugin that names no library");
    int n = ((int_fn)dlsym(base_single, "singleton_bump"))();
    CHECK_EQ(n + 1, ((int_fn)sym(plugin, "plugin_bump"))(), "the plugin bumps the service's counter");
    CHECK_EQ(0, vlcs_ctx_destroy(sc), "destroy");

    /* A global library of its own (a Python of its own: libpython), even a
     * service's: the context's own copy, which later loads see first. */
    vlcs_ctx *gc = vlcs_ctx_create("own-global");
    CHECK_EQ(0, vlcs_ctx_set_mode(gc, VLCS_MODE_COPIES), "mode");
    CHECK_EQ(0, vlcs_ctx_set_global_library(gc, SINGLETON_LIB), "global library");
    void *gs = vlcs_ctx_load(gc, SINGLETON_LIB);
    CHECK(gs != NULL, "load the global library: %s", vlcs_error());
    CHECK(((addr_fn)sym(gs, "singleton_value_addr"))() != base_value, "its own copy");
    void *gp = vlcs_ctx_load(gc, PLUGIN_SINGLETON_LIB);
    CHECK(gp != NULL, "a plugin in it: %s", vlcs_error());
    CHECK_EQ(1, ((int_fn)sym(gp, "plugin_bump"))(), "the plugin bumps the context's copy");
    CHECK_EQ(2, ((int_fn)sym(gs, "singleton_bump"))(), "the same copy");
    CHECK_EQ(n + 2, ((int_fn)dlsym(base_single, "singleton_bump"))(), "the service's untouched");
    CHECK_EQ(-1, vlcs_ctx_set_global_library(gc, SINGLETON_LIB), "set after a load");
    CHECK_EQ(0, vlcs_ctx_destroy(gc), "destroy");
    printf("ok\n");
    return 0;
}

/* Elastic contexts: an idle context's CPUs are lent to a busy one and come
 * back when a thread enters the owner, with the libraries following
 * (Debian's OpenBLAS resized, libgomp's teams sized by the current CPUs,
 * every library thread moved); static contexts never move; a bound is never
 * passed; bad input is refused with the context unchanged. */
#define _GNU_SOURCE
#include "check.h"

#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <unistd.h>

typedef int (*nthreads_fn)(void);
typedef int (*region_fn)(unsigned long *);

#define CURRENT(c) ctx_cpus(c, VLCS_CPUSET_CURRENT)

static unsigned long affinity(pid_t tid)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    if (syscall(SYS_sched_getaffinity, tid, sizeof s, &s) <= 0)
        return 0; /* ended meanwhile */
    unsigned long m = 0;
    for (int i = 0; i < 64; i++)
        if (CPU_ISSET(i, &s))
            m |= 1ul << i;
    return m;
}

/* Threads of this process whose real affinity is exactly `mask`. */
static int threads_on(unsigned long mask)
{
    DIR *d = opendir("/proc/self/task");
    CHECK(d != NULL, "/proc/self/task");
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.' && affinity((pid_t)atoi(e->d_name)) == mask)
            n++;
    closedir(d);
    return n;
}

/* A dgemm in the copy `lib`, checked against the plain product. */
static void gemm(void *lib, int n) { CHECK(dgemm_right(lib, n), "the product of a %dx%d dgemm", n, n); }

/* A second thread enters the lender and stays until told to leave. */
static pthread_barrier_t entered, go;
static region_fn region_a;
static void *owner(void *p)
{
    CHECK_EQ(0, vlcs_enter(p), "the owner enters");
    /* Its CPUs are back before vlcs_enter returned: it runs on its home. */
    CHECK_EQ(1ul << 0, affinity(0), "the owner's thread runs on its home CPU");
    unsigned long seen;
    CHECK_EQ(1, region_a(&seen), "a's own libgomp runs a team of one");
    CHECK_EQ(1ul, seen, "on CPU 0");
    pthread_barrier_wait(&entered);
    pthread_barrier_wait(&go);
    CHECK_EQ(0, vlcs_leave(), "the owner leaves");
    return NULL;
}

/* Lending and reclaiming while the borrower computes: OpenBLAS is resized
 * between and during its calls, and every product stays right. */
struct toggler {
    vlcs_ctx *c;
    int rounds;
    _Atomic int *stop;
};
static void *toggle(void *p)
{
    struct toggler *t = p;
    for (int i = 0; i < t->rounds; i++) {
        CHECK_EQ(0, vlcs_enter(t->c), "enter");
        CHECK_EQ(0, vlcs_leave(), "leave");
    }
    *t->stop = 1;
    return NULL;
}

static void stress(vlcs_ctx *lender, vlcs_ctx *borrower, void *blas)
{
    _Atomic int stop = 0;
    struct toggler t = {lender, 400, &stop};
    pthread_t th;
    CHECK_EQ(0, vlcs_enter(borrower), "enter");
    pthread_create(&th, NULL, toggle, &t);
    int products = 0;
    while (!stop) {
        gemm(blas, 120);
        products++;
    }
    pthread_join(th, NULL);
    CHECK_STR("0-1", CURRENT(borrower), "the lender idle at the end: the borrower has both CPUs");
    CHECK_EQ(0, vlcs_leave(), "leave");
    CHECK_STR("1", CURRENT(borrower), "home");
    CHECK(products > 0, "computed meanwhile");
}

static void bad_input(void)
{
    vlcs_ctx *x = vlcs_ctx_create("x");
    CHECK_EQ(0, vlcs_ctx_set_cpus(x, "1"), "set");
    CHECK_ERRC(VLCS_E_INVALID, vlcs_ctx_set_elastic(x, "0", 0));
    CHECK(strstr(vlcs_error(), "home CPUs 1 are not all in the bound 0") != NULL, "%s", vlcs_error());
    CHECK_ERRC(VLCS_E_INVALID, vlcs_ctx_set_elastic(x, "0-1023", 0));
    CHECK(strstr(vlcs_error(), "not available to this process") != NULL, "%s", vlcs_error());
    CHECK_ERRC(VLCS_E_INVALID, vlcs_ctx_set_elastic(x, "1-0", 0));
    CHECK_STR("1", ctx_cpus(x, VLCS_CPUSET_BOUND), "unchanged: static, bound = home");
    CHECK_EQ(0, vlcs_ctx_set_elastic(x, "1", 0), "a bound equal to the home is fine");
    CHECK_ERRC(VLCS_E_INVALID, vlcs_ctx_set_cpus(x, "0"));
    CHECK(strstr(vlcs_error(), "outside its elastic bound 1") != NULL, "%s", vlcs_error());
    CHECK_STR("1", CURRENT(x), "unchanged after a refused home");
    CHECK_ERRC(VLCS_E_INVALID, vlcs_ctx_get_cpuset(x, 7, (char[8]){0}, 8));
    CHECK_EQ(0, vlcs_ctx_destroy(x), "destroy");
    CHECK_ERRC(VLCS_E_DESTROYED, vlcs_ctx_set_elastic(x, "0-1", 0));
}

int main(void)
{
    if (get_nprocs() < 2) {
        printf("SKIP: needs 2 CPUs\n");
        return 77;
    }
    bad_input();

    vlcs_ctx *a = vlcs_ctx_create("a"), *b = vlcs_ctx_create("b");
    vlcs_ctx *fixed = vlcs_ctx_create("fixed"), *still = vlcs_ctx_create("static");
    CHECK_EQ(0, vlcs_ctx_set_cpus(a, "0"), "set");
    CHECK_EQ(0, vlcs_ctx_set_cpus(b, "1"), "set");
    CHECK_EQ(0, vlcs_ctx_set_elastic(a, "0-1", 0), "elastic");
    CHECK_EQ(0, vlcs_ctx_set_elastic(b, "0-1", 0), "elastic");
    CHECK_EQ(0, vlcs_ctx_set_cpus(fixed, "1"), "set");
    CHECK_EQ(0, vlcs_ctx_set_elastic(fixed, "1", 0), "elastic, bound = home");
    CHECK_EQ(0, vlcs_ctx_set_cpus(still, "0"), "a static context sharing a's home");
    CHECK_STR("0", CURRENT(a), "idle: at home");
    CHECK_STR("1", CURRENT(b), "idle: at home");
    CHECK_STR("0-1", ctx_cpus(b, VLCS_CPUSET_BOUND), "bound");
    CHECK_STR("true", vlcs_ctx_getenv(b, "OMP_DYNAMIC"), "OpenMP teams follow the CPUs");
    CHECK_STR("2", vlcs_ctx_getenv(b, "OMP_NUM_THREADS"), "at most the bound");

    void *blas_a = must_load(a, "libopenblas.so.0"), *blas_b = must_load(b, "libopenblas.so.0");
    void *omp_b = must_load(b, OMP_LIB), *omp_a = must_load(a, OMP_LIB);
    nthreads_fn blas_threads = SYM(blas_b, nthreads_fn, "openblas_get_num_threads");
    region_fn region_b = SYM(omp_b, region_fn, "omp_probe_region");
    region_a = SYM(omp_a, region_fn, "omp_probe_region");
    CHECK_EQ(1, blas_threads(), "loaded while idle: sized to its home");
    double avg[3] = {-1, -1, -1};
    CHECK_EQ(3, SYM(omp_b, int (*)(double *), "omp_probe_loadavg")(avg), "getloadavg");
    CHECK(avg[0] == 0 && avg[1] == 0 && avg[2] == 0, "an elastic context reads a load of 0");
    void *omp_still = must_load(still, OMP_LIB);
    CHECK_EQ(3, SYM(omp_still, int (*)(double *), "omp_probe_loadavg")(avg), "getloadavg");
    double kernel[3] = {-1, -1, -1};
    FILE *f = fopen("/proc/loadavg", "r");
    CHECK(f != NULL && fscanf(f, "%lf %lf %lf", &kernel[0], &kernel[1], &kernel[2]) == 3, "loadavg");
    fclose(f);
    CHECK(avg[2] - kernel[2] < 0.1 && kernel[2] - avg[2] < 0.1, "a static context reads the kernel's "
          "15-minute load (%.2f, kernel %.2f)", avg[2], kernel[2]);

    /* b busy, a idle: b borrows CPU 0 and its libraries grow. */
    CHECK_EQ(0, vlcs_enter(b), "enter b");
    CHECK_STR("0-1", CURRENT(b), "b borrows a's CPU");
    CHECK_STR("0", ctx_cpus(a, VLCS_CPUSET_LENT), "a lends it");
    CHECK_STR("1", ctx_cpus(b, VLCS_CPUSET_HOME), "b's home is unchanged");
    CHECK_EQ(3ul, affinity(0), "the thread inside b runs on both CPUs");
    CHECK_EQ(2, blas_threads(), "OpenBLAS resized to b's CPUs");
    gemm(blas_b, 300);
    unsigned long seen;
    CHECK_EQ(2, region_b(&seen), "libgomp's team: b's CPU count");
    CHECK_EQ(3ul, seen, "the team runs on both CPUs");
    CHECK_EQ(1, SYM(blas_a, nthreads_fn, "openblas_get_num_threads")(), "the lender's copy stays");
    CHECK_STR("1", CURRENT(fixed), "an elastic context never passes its bound");
    CHECK_STR("0", CURRENT(still), "a static context never moves");
    int lib_threads = vlcs_ctx_thread_count(b);
    CHECK(lib_threads >= 2, "an OpenBLAS worker and an OpenMP worker (%d)", lib_threads);

    /* A thread enters a: CPU 0 comes back before its vlcs_enter returns. */
    pthread_barrier_init(&entered, NULL, 2);
    pthread_barrier_init(&go, NULL, 2);
    pthread_t t;
    pthread_create(&t, NULL, owner, a);
    pthread_barrier_wait(&entered);
    CHECK_STR("1", CURRENT(b), "b is back on its home");
    CHECK_STR("0", CURRENT(a), "a runs on its home");
    CHECK_STR("", ctx_cpus(a, VLCS_CPUSET_LENT), "a lends nothing while busy");
    CHECK_EQ(1, blas_threads(), "OpenBLAS shrunk with b");
    CHECK_EQ(1 + vlcs_ctx_thread_count(b), threads_on(1ul << 1),
             "b's thread and every thread of its libraries are on CPU 1 alone");
    CHECK_EQ(1, region_b(&seen), "libgomp's team shrinks with b");
    CHECK_EQ(2ul, seen, "on CPU 1");
    gemm(blas_b, 300);
    CHECK_STR("0", CURRENT(still), "a static context never moves");
    pthread_barrier_wait(&go);
    pthread_join(t, NULL);

    /* a idle again: b borrows again. */
    CHECK_STR("0-1", CURRENT(b), "b borrows again once a is idle");
    CHECK_EQ(2, blas_threads(), "and OpenBLAS grows again");
    CHECK_EQ(2, region_b(&seen), "so does libgomp's team");
    CHECK_EQ(0, vlcs_leave(), "leave b");
    CHECK_STR("1", CURRENT(b), "idle: back home");
    CHECK_EQ(1, blas_threads(), "OpenBLAS follows");
    stress(a, b, blas_b);

    /* Static again: b stays home while busy. */
    CHECK_EQ(0, vlcs_ctx_set_elastic(b, NULL, 0), "static");
    CHECK_EQ(0, vlcs_enter(b), "enter b");
    CHECK_STR("1", CURRENT(b), "a static context does not borrow");
    CHECK_EQ(0, vlcs_leave(), "leave b");

    /* A destroyed lender's CPUs are no one's to lend. */
    CHECK_EQ(0, vlcs_ctx_set_elastic(b, "0-1", 0), "elastic again");
    CHECK_EQ(0, vlcs_enter(b), "enter b");
    CHECK_STR("0-1", CURRENT(b), "borrows");
    CHECK(vlcs_ctx_destroy(a) >= 0, "destroy the lender: %s", vlcs_error());
    CHECK_STR("1", CURRENT(b), "the destroyed lender's CPU is given back");
    CHECK_EQ(0, vlcs_leave(), "leave b");
    CHECK_EQ(3ul, affinity(0), "the base thread is back on every CPU");

    CHECK(vlcs_ctx_destroy(b) >= 0, "destroy: %s", vlcs_error());
    CHECK_EQ(0, vlcs_ctx_destroy(fixed), "destroy");
    CHECK(vlcs_ctx_destroy(still) >= 0, "destroy: %s", vlcs_error());
    PASS("elastic");
    return 0;
}

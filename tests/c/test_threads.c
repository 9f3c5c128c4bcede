/* Confinement: threads created by a context's libraries run only on its
 * CPUs, whichever thread created them; affinity requests are clamped; a
 * change of the CPU set moves running threads. */
#define _GNU_SOURCE
#include "check.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/sysinfo.h>
#include <unistd.h>

typedef int (*spawn_fn)(int *, int *, int *);
typedef int (*set_fn)(int);
typedef int (*has_fn)(int);
typedef double (*sum_fn)(long);
typedef int (*region_fn)(unsigned long *);

static int real_has(pid_t tid, int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CHECK(syscall(SYS_sched_getaffinity, tid, sizeof s, &s) > 0, "getaffinity of %d", tid);
    return CPU_ISSET(cpu, &s);
}

struct call {
    spawn_fn spawn;
    int count, has0, has1;
};
static void *from_base_thread(void *p)
{
    struct call *c = p;
    c->spawn(&c->count, &c->has0, &c->has1);
    return NULL;
}

/* A thread of the program's own that a context adopts: it belongs to the
 * context until it ends, and destroy neither waits for it nor reuses the
 * context's memory under it. */
struct adopted {
    vlcs_ctx *ctx;
    pthread_barrier_t in, out;
    int rc, current, on1, on0, again;
};
static void *adopted_thread(void *p)
{
    struct adopted *a = p;
    a->rc = vlcs_thread_adopt(a->ctx);
    a->current = vlcs_current() == a->ctx;
    a->on1 = real_has(0, 1);
    a->on0 = real_has(0, 0);
    a->again = vlcs_thread_adopt(a->ctx) != 0 && vlcs_errcode() == VLCS_E_INVALID;
    pthread_barrier_wait(&a->in);
    pthread_barrier_wait(&a->out); /* the context is destroyed meanwhile */
    return NULL;
}

static void check_adopt(void)
{
    struct adopted a = {.ctx = vlcs_ctx_create("adopter")};
    CHECK_EQ(0, vlcs_ctx_set_cpus(a.ctx, "1"), "set");
    pthread_barrier_init(&a.in, NULL, 2);
    pthread_barrier_init(&a.out, NULL, 2);
    pthread_t t;
    pthread_create(&t, NULL, adopted_thread, &a);
    pthread_barrier_wait(&a.in);
    CHECK_EQ(0, a.rc, "adopt");
    CHECK(a.current, "vlcs_current() names the adopting context");
    CHECK(a.on1 && !a.on0, "the adopted thread runs on the context's CPU 1 only");
    CHECK(a.again, "a thread that belongs to a context cannot be adopted again");
    CHECK_EQ(1, vlcs_ctx_thread_count(a.ctx), "it counts as the context's thread");
    CHECK_EQ(1, vlcs_ctx_destroy(a.ctx), "destroyed, but the memory stays with the thread");
    CHECK(strstr(vlcs_error(), "adopted") != NULL, "says why: %s", vlcs_error());
    vlcs_ctx *next = vlcs_ctx_create("after-adopter");
    CHECK(next != NULL && next != a.ctx, "a new context");
    CHECK_EQ(0, vlcs_ctx_thread_count(next), "the new context has no thread of the old one's");
    pthread_barrier_wait(&a.out);
    pthread_join(t, NULL);
    CHECK(vlcs_thread_adopt(a.ctx) != 0, "a destroyed context adopts nothing");
    CHECK_CODE(VLCS_E_DESTROYED, "adopt after destroy");
    CHECK_EQ(0, vlcs_ctx_destroy(next), "destroy the new one");
}

int main(void)
{
    if (get_nprocs() < 2) {
        printf("SKIP: needs 2 CPUs\n");
        return 77;
    }
    vlcs_ctx *c = vlcs_ctx_create("c1");
    CHECK_EQ(0, vlcs_ctx_set_cpus(c, "1"), "set");
    void *lib = must_load(c, PROBE_LIB);
    spawn_fn spawn = SYM(lib, spawn_fn, "probe_spawn");

    /* Created from the main thread, which is not in the context. */
    int count, has0, has1;
    CHECK_EQ(0, spawn(&count, &has0, &has1), "spawn");
    CHECK_EQ(1, count, "thread created by the library is confined");
    CHECK_EQ(0, has0, "not on CPU 0");
    CHECK_EQ(1, has1, "on CPU 1");
    CHECK_EQ(1, real_has(0, 0), "the calling (base) thread itself is unchanged");

    /* Created from another base thread. */
    struct call call = {spawn, 0, 0, 0};
    pthread_t t;
    pthread_create(&t, NULL, from_base_thread, &call);
    pthread_join(t, NULL);
    CHECK_EQ(1, call.count, "confined whichever thread created it");
    CHECK_EQ(1, call.has1, "on CPU 1");

    /* Clamping: setting CPU 0 from inside a CPU-1 context is refused as the
     * kernel would refuse an empty set; CPU 1 is fine. */
    CHECK_EQ(0, vlcs_enter(c), "enter");
    CHECK_EQ(EINVAL, SYM(lib, set_fn, "probe_setaffinity")(0), "sched_setaffinity outside the set");
    CHECK_EQ(EINVAL, SYM(lib, set_fn, "probe_pthread_setaffinity")(0), "pthread_setaffinity_np outside");
    CHECK_EQ(0, SYM(lib, set_fn, "probe_setaffinity")(1), "inside the set");
    CHECK_EQ(1, real_has(0, 1), "on CPU 1");
    CHECK_EQ(0, vlcs_leave(), "leave");
    CHECK_EQ(1, real_has(0, 0), "leave restores the thread's CPUs");

    /* An OpenMP pool created in a 1-CPU context moves when the set grows. */
    vlcs_ctx *o = vlcs_ctx_create("omp");
    CHECK_EQ(0, vlcs_ctx_set_cpus(o, "0"), "set");
    CHECK_EQ(0, vlcs_ctx_setenv(o, "OMP_NUM_THREADS", "2"), "two threads on one CPU");
    void *omp = must_load(o, OMP_LIB);
    unsigned long seen = 0;
    CHECK_EQ(0, vlcs_enter(o), "enter");
    CHECK_EQ(2, SYM(omp, region_fn, "omp_probe_region")(&seen), "team of 2");
    CHECK_EQ(1ul, seen, "all team threads on CPU 0");
    CHECK_EQ(1, vlcs_ctx_thread_count(o), "libgomp's pool: one worker");
    CHECK_EQ(0, vlcs_ctx_set_cpus(o, "1"), "move the context");
    CHECK_EQ(1, real_has(0, 1) && !real_has(0, 0), "the entered thread moved");
    CHECK_EQ(2, SYM(omp, region_fn, "omp_probe_region")(&seen), "team of 2");
    CHECK_EQ(2ul, seen, "the pool's worker moved to CPU 1");
    CHECK_EQ(0, vlcs_leave(), "leave");
    CHECK_EQ(1, real_has(0, 0), "restored");

    /* A forked child that changes the context's CPUs moves its own threads,
     * never the parent's (libgomp's worker is the parent's). */
    pid_t pid = fork();
    if (pid == 0) {
        if (vlcs_ctx_set_cpus(o, "0") != 0)
            _exit(1);
        _exit(vlcs_ctx_thread_count(o) == 0 ? 0 : 2); /* the worker stayed behind */
    }
    int st;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
    CHECK_EQ(0, vlcs_enter(o), "enter");
    CHECK_EQ(2, SYM(omp, region_fn, "omp_probe_region")(&seen), "team of 2");
    CHECK_EQ(2ul, seen, "the parent's worker is still on CPU 1");
    CHECK_EQ(0, vlcs_leave(), "leave");
    check_adopt();
    PASS("threads");
    return 0;
}

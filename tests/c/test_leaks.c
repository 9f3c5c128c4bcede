/* What a long-running program repeats leaves nothing behind, measured by
 * the base allocator (every namespace allocates from it) over 10,000 of
 * each: enter/leave, threads started by a context's library, CPU sets
 * (with the forged /proc/cpuinfo read) given back on destroy, and contexts
 * made and destroyed.  Before: 688 B per library thread, 672 B per
 * vlcs_ctx_set_cpus (4.7 KB with cpuinfo), 1984 B per create/destroy.
 * The test runs without glibc's per-thread cache (it re-executes itself
 * with glibc.malloc.tcache_count=0): chunks parked there count as in use,
 * and would show as up to a few KiB that come and go. */
#define _GNU_SOURCE
#include "check.h"

#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 10000

typedef int (*spawn_fn)(int *, int *, int *);
typedef int (*cpuinfo_fn)(char *, size_t);

static long heap(void) { return (long)mallinfo2().uordblks; }

static void report(const char *what, long delta, long per_op_limit)
{
    printf("%s: %+ld B over %d (%+.2f B each)\n", what, delta, N, (double)delta / N);
    CHECK(delta <= per_op_limit * N, "%s: %ld B over %d, over %ld B each", what, delta, N,
          per_op_limit);
}

/* A context whose CPU set changes n times, its forged cpuinfo read now and
 * then, destroyed. */
static void views(int n)
{
    vlcs_ctx *v = vlcs_ctx_create("views");
    cpuinfo_fn read_cpuinfo = SYM(must_load(v, PROBE_LIB), cpuinfo_fn, "probe_cpuinfo");
    char text[4096];
    for (int i = 0; i < n; i++) {
        CHECK_EQ(0, vlcs_ctx_set_cpus(v, i % 2 ? "0-1" : "1"), "set_cpus");
        if (i % 100 == 0)
            CHECK(read_cpuinfo(text, sizeof text) > 0, "cpuinfo in the context");
    }
    /* Strict mode keeps every namespace, and so the context with it. */
    CHECK_EQ(vlcs_strict_active() ? 1 : 0, vlcs_ctx_destroy(v), "destroy");
}

int main(int argc, char **argv)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    printf("SKIP: a sanitizer's allocator is not the one mallinfo2 measures\n");
    return 77;
#endif
    const char *tunables = getenv("GLIBC_TUNABLES");
    if (argc < 2 || strcmp(argv[1], "--no-tcache") != 0) {
        char buf[4096];
        snprintf(buf, sizeof buf, "%s%sglibc.malloc.tcache_count=0", tunables ? tunables : "",
                 tunables ? ":" : "");
        setenv("GLIBC_TUNABLES", buf, 1);
        execl("/proc/self/exe", argv[0], "--no-tcache", (char *)NULL);
        FAIL("re-executing without the allocator's per-thread cache");
    }
    if (vlcs_init() != 0)
        FAIL("vlcs_init");
    vlcs_ctx *c = vlcs_ctx_create("leaks");
    CHECK_EQ(0, vlcs_ctx_set_cpus(c, "0"), "set_cpus");
    void *probe = must_load(c, PROBE_LIB);
    spawn_fn spawn = SYM(probe, spawn_fn, "probe_spawn");
    int count, has0, has1;
    for (int i = 0; i < 10; i++) { /* first-use allocations out of the way */
        vlcs_enter(c);
        vlcs_leave();
        CHECK_EQ(0, spawn(&count, &has0, &has1), "spawn");
    }

    long before = heap();
    for (int i = 0; i < N; i++) {
        vlcs_enter(c);
        vlcs_leave();
    }
    report("enter + leave", heap() - before, 0);

    before = heap();
    for (int i = 0; i < N; i++)
        CHECK_EQ(0, spawn(&count, &has0, &has1), "a library thread, started and joined");
    CHECK_EQ(1, count, "the thread ran on the context's CPU");
    report("library thread", heap() - before, 64);

    /* A live context going back and forth between two sets (as elastic
     * lending and tuners do), its forged cpuinfo read in each: one view per
     * distinct set, made once. */
    cpuinfo_fn cpuinfo = SYM(probe, cpuinfo_fn, "probe_cpuinfo");
    char text[4096];
    for (int i = 0; i < 2; i++) {
        CHECK_EQ(0, vlcs_ctx_set_cpus(c, i ? "0" : "0-1"), "set_cpus");
        CHECK(cpuinfo(text, sizeof text) > 0, "cpuinfo");
    }
    before = heap();
    for (int i = 0; i < N; i++) {
        CHECK_EQ(0, vlcs_ctx_set_cpus(c, i % 2 ? "0" : "0-1"), "set_cpus");
        if (i % 100 < 2)
            CHECK(cpuinfo(text, sizeof text) == (i % 2 ? 1 : 2), "cpuinfo follows the set");
    }
    report("set_cpus back and forth, context alive", heap() - before, 0);

    /* CPU sets: each change keeps the old view for readers still using it,
     * and the forged cpuinfo per view; all of it goes with the context. */
    views(100); /* glibc's first namespace of this number, vlcs's free list */
    before = heap();
    views(N);
    if (vlcs_strict_active())
        printf("set_cpus: not freed under strict mode (the context stays with its namespace)\n");
    else
        report("set_cpus, freed on destroy", heap() - before, 0);

    vlcs_ctx_destroy(vlcs_ctx_create("warm")); /* the free list's first entry */
    before = heap();
    for (int i = 0; i < N; i++)
        CHECK_EQ(0, vlcs_ctx_destroy(vlcs_ctx_create("short")), "create and destroy");
    report("create + destroy", heap() - before, 0);

    CHECK_EQ(vlcs_strict_active() ? 1 : 0, vlcs_ctx_destroy(c), "destroy");
    PASS("leaks");
    return 0;
}

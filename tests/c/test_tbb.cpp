// oneTBB in contexts, through a real library built on it (Debian's OpenCV
// core): a private TBB per context, then one TBB shared as a service with
// each context's arena sized to its CPUs.
#include "check.h"

#include <dlfcn.h>
#include <oneapi/tbb/task_arena.h>
#include <sched.h>

#include <cstdint>
#include <cstring>
#include <future>
#include <thread>

typedef int (*int_fn)(void);
typedef long long (*sum_fn)(int, int *, int *);
typedef void *(*ptr_fn)(void);

static const int N = 200000;
static long long expected_sum(void)
{
    long long s = 0;
    for (int i = 0; i < N; i++)
        s += (long long)i * i;
    return s;
}

// The fields of oneTBB's task_arena_base that libvlcs reads (service_tbb.c),
// at the offsets it reads them from.
static int field(const tbb::task_arena &a, size_t off)
{
    int v;
    std::memcpy(&v, reinterpret_cast<const char *>(&a) + off, sizeof v);
    return v;
}
enum { MAX_CONCURRENCY = 24, NUMA_ID = 36, CORE_TYPE = 40 };

struct result {
    int num_threads = 0, new_arena = 0, threads = 0, arena = 0;
    long long sum = 0;
};

static void run_in(vlcs_ctx *c, void *lib, result *r)
{
    CHECK_EQ(0, vlcs_enter(c), "enter");
    r->num_threads = SYM(lib, int_fn, "cvt_num_threads")();
    r->new_arena = SYM(lib, int_fn, "cvt_new_arena")();
    r->sum = SYM(lib, sum_fn, "cvt_parallel_sum")(N, &r->threads, &r->arena);
    CHECK_EQ(0, vlcs_leave(), "leave");
}

static void expect_one_cpu(const result &r, const char *who)
{
    CHECK(r.num_threads == 1, "%s: cv::getNumThreads() is %d, want its 1 CPU", who,
          r.num_threads);
    CHECK(r.new_arena == 1, "%s: a new task_arena has %d slots, want 1", who, r.new_arena);
    CHECK(r.arena == 1, "%s: cv::parallel_for_ ran in an arena of %d, want 1", who, r.arena);
    CHECK(r.threads == 1, "%s: %d threads ran the loop on 1 CPU", who, r.threads);
    CHECK(r.sum == expected_sum(), "%s: wrong sum %lld", who, r.sum);
}

int main()
{
    cpu_set_t set;
    sched_getaffinity(0, sizeof set, &set);
    int ncpu = CPU_COUNT(&set);
    if (ncpu < 2 || !CPU_ISSET(0, &set) || !CPU_ISSET(1, &set)) {
        std::printf("SKIP: needs CPUs 0 and 1\n");
        return 77;
    }

    tbb::task_arena automatic, sized(3, 1);
    tbb::task_arena::constraints on_node;
    on_node.numa_id = 0;
    tbb::task_arena numa(on_node);
    CHECK_EQ(-1, field(automatic, MAX_CONCURRENCY), "automatic concurrency");
    CHECK_EQ(3, field(sized, MAX_CONCURRENCY), "explicit concurrency");
    CHECK_EQ(-1, field(automatic, NUMA_ID), "no NUMA node");
    CHECK_EQ(0, field(numa, NUMA_ID), "NUMA node");
    CHECK_EQ(-1, field(numa, CORE_TYPE), "no core type");

    // A private TBB in a context: it opens libtbbmalloc with RTLD_GLOBAL,
    // which glibc cannot do inside a namespace unless vlcs steps in.
    vlcs_ctx *p = vlcs_ctx_create("private");
    CHECK_EQ(0, vlcs_ctx_set_cpus(p, "0"), "cpus");
    void *lp = must_load(p, CV_TBB_LIB);
    result rp;
    run_in(p, lp, &rp);
    expect_one_cpu(rp, "private TBB");

    // One TBB for the process.
    CHECK_EQ(0, vlcs_service_add("libtbb.so.12"), "add TBB as a service");
    void *tbb = dlopen("libtbb.so.12", RTLD_NOW | RTLD_NOLOAD);
    void *one = dlsym(tbb, "_ZN3tbb6detail2r114execution_slotEPKNS0_2d114execution_dataE");
    CHECK(one != nullptr, "TBB's execution_slot");
    CHECK(SYM(lp, ptr_fn, "cvt_tbb_entry")() != one, "the earlier context keeps its own TBB");

    vlcs_ctx *a = vlcs_ctx_create("a"), *b = vlcs_ctx_create("b");
    CHECK_EQ(0, vlcs_ctx_set_cpus(a, "0"), "cpus a");
    CHECK_EQ(0, vlcs_ctx_set_cpus(b, "1"), "cpus b");
    void *la = must_load(a, CV_TBB_LIB), *lb = must_load(b, CV_TBB_LIB);
    CHECK(la != lb, "OpenCV has a copy per context");
    CHECK(SYM(la, ptr_fn, "cvt_tbb_entry")() == one, "a binds to the one TBB");
    CHECK(SYM(lb, ptr_fn, "cvt_tbb_entry")() == one, "b binds to the one TBB");

    // Both at once, on the shared TBB.
    result ra, rb;
    std::thread ta(run_in, a, la, &ra), tb(run_in, b, lb, &rb);
    ta.join();
    tb.join();
    expect_one_cpu(ra, "context a");
    expect_one_cpu(rb, "context b");

    // Elastic, on the shared TBB: an arena is sized when it is made (oneTBB
    // fixes its concurrency then), so one made while a has borrowed b's CPU
    // gets both, and one made after b took its CPU back gets one.
    CHECK_EQ(0, vlcs_ctx_set_elastic(a, "0-1", 0), "a elastic");
    CHECK_EQ(0, vlcs_ctx_set_elastic(b, "0-1", 0), "b elastic");
    CHECK_EQ(0, vlcs_enter(a), "enter a");
    CHECK_EQ(2, SYM(la, int_fn, "cvt_new_arena")(), "an arena made while a holds both CPUs");
    CHECK_EQ(0, vlcs_leave(), "leave a");
    std::promise<void> inside, done;
    std::future<void> go = done.get_future();
    std::thread holder([&] {
        CHECK_EQ(0, vlcs_enter(b), "enter b");
        inside.set_value();
        go.wait();
        CHECK_EQ(0, vlcs_leave(), "leave b");
    });
    inside.get_future().wait();
    CHECK_EQ(0, vlcs_enter(a), "enter a again");
    CHECK_EQ(1, SYM(la, int_fn, "cvt_new_arena")(), "an arena made while b is busy");
    CHECK_EQ(0, vlcs_leave(), "leave a again");
    done.set_value();
    holder.join();

    // The base keeps the whole process: contexts did not shrink TBB's default.
    void *lbase = dlopen(CV_TBB_LIB, RTLD_NOW);
    CHECK(lbase != nullptr, "base copy: %s", dlerror());
    CHECK_EQ(ncpu, SYM(lbase, int_fn, "cvt_num_threads")(), "the base's OpenCV threads");
    CHECK_EQ(ncpu, SYM(lbase, int_fn, "cvt_new_arena")(), "the base's new arena");
    PASS("tbb");
    return 0;
}

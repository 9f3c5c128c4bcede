// The C++ wrapper: RAII scope guards, typed symbols, exceptions that carry
// vlcs_error()'s sentence.
#include "vlcs.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#define EXPECT(cond)                                                                     \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            std::fprintf(stderr, "%s:%d: FAIL: %s\n", __FILE__, __LINE__, #cond);        \
            return 1;                                                                    \
        }                                                                                \
    } while (0)

int main()
{
    vlcs::Runtime rt;
    vlcs::Context a("a"), b("b");
    a.set_allowed_cpus({0});
    b.set_allowed_cpus("1");
    a.setenv("OMP_NUM_THREADS", "1");
    b.setenv("OMP_NUM_THREADS", "2");
    EXPECT(a.allowed_cpus() == "0" && b.allowed_cpus() == "1");
    vlcs::Loader la(a, PROBE_CXX_LIB), lb(b, PROBE_CXX_LIB);
    auto hc_a = la.sym<unsigned (*)()>("probe_hardware_concurrency");
    auto hc_b = lb.sym<unsigned (*)()>("probe_hardware_concurrency");
    EXPECT(hc_a() == 1 && hc_b() == 1);
    EXPECT(std::thread::hardware_concurrency() >= 2); // the base is unchanged

    vlcs::Loader oa(a, OMP_LIB), ob(b, OMP_LIB);
    auto max_a = oa.sym<int (*)()>("omp_probe_max_threads");
    auto max_b = ob.sym<int (*)()>("omp_probe_max_threads");
    EXPECT(max_a() == 1 && max_b() == 2);

    {
        auto in = a.enter();
        EXPECT(vlcs::Runtime::current() == a.get());
        {
            auto in2 = b.enter();
            EXPECT(vlcs::Runtime::current() == b.get());
        }
        EXPECT(vlcs::Runtime::current() == a.get());
    }
    EXPECT(vlcs::Runtime::current() == nullptr);

    // call: a result, an exception of the function's own, and a fault
    EXPECT(a.call([&] { return max_a(); }) == 1 && b.call([&] { return max_b(); }) == 2);
    int ran = 0;
    a.call([&] { ran = vlcs::Runtime::current() == a.get(); });
    EXPECT(ran == 1 && vlcs::Runtime::current() == nullptr);
    bool threw = false;
    try {
        a.call([]() -> int { throw std::out_of_range("mine"); });
    } catch (const std::out_of_range &e) {
        threw = std::strcmp(e.what(), "mine") == 0;
    }
    EXPECT(threw && a.fault().empty());
    {
        vlcs::Context g("g");
        vlcs::Loader crash(g, CRASH_LIB);
        auto null = crash.sym<void *(*)(void *)>("crash_null");
        threw = false;
        try {
            g.call([&] { null(nullptr); });
        } catch (const vlcs::Error &e) {
            threw = e.code() == VLCS_E_FAULT && std::strstr(e.what(), "SIGSEGV") != nullptr;
        }
        EXPECT(threw && g.fault().find("crash_null") != std::string::npos);
        EXPECT(a.call([&] { return max_a(); }) == 1); // the others go on
    }

    {
        vlcs::Context e("e"), f("f");
        e.set_allowed_cpus("0");
        f.set_allowed_cpus("1");
        e.set_elastic("0-1");
        f.set_elastic("0-1");
        auto in = f.enter(); // e idle: f borrows its CPU
        EXPECT(f.allowed_cpus() == "0-1" && f.cpuset(VLCS_CPUSET_HOME) == "1");
        EXPECT(e.cpuset(VLCS_CPUSET_LENT) == "0" && f.cpuset(VLCS_CPUSET_BOUND) == "0-1");
        f.progress(3);
        f.progress();
        EXPECT(f.progress_info().units == 4 && f.progress_info().most_cpus == 0);
    }

    threw = false;
    try {
        a.set_allowed_cpus("3-1");
    } catch (const vlcs::Error &e) {
        threw = std::strstr(e.what(), "ends before it starts") != nullptr &&
                e.code() == VLCS_E_INVALID;
    }
    EXPECT(threw);
    threw = false;
    try {
        vlcs::Loader missing(a, "libnot-there.so.3");
    } catch (const vlcs::Error &e) {
        threw = std::strstr(e.what(), "libnot-there.so.3") != nullptr &&
                e.code() == VLCS_E_NOT_FOUND;
    }
    EXPECT(threw);
    threw = false;
    setenv("VLCS_NODE_LEDGER", "/nonexistent-vlcs-dir/ledger", 1);
    try {
        vlcs::Runtime::join_node();
    } catch (const vlcs::Error &e) {
        threw = std::strstr(e.what(), "node ledger") != nullptr && e.code() == VLCS_E_SYSTEM;
    }
    EXPECT(threw && vlcs::Runtime::node_ledger() == nullptr);
    // A program run inside a context: its status; one that cannot run throws.
    {
        vlcs::Context tool("tool");
        EXPECT(tool.exec({"sh", "-c", "exit 7"}) == 7);
        threw = false;
        try {
            tool.exec({"vlcs-no-such-program"});
        } catch (const vlcs::Error &e) {
            threw = e.code() == VLCS_E_NOT_FOUND;
        }
        EXPECT(threw);
    }
    std::printf("ok - c++ wrapper\n");
    return 0;
}

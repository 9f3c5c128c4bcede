// vlcs bench scale's thread-unsafe row: arpack-ng eigen-solves on every CPU
// of the machine at once, one context per CPU, each with its own libarpack
// (and OpenBLAS), against the one correct way to share one copy (a mutex
// around each solve, so one CPU at a time).  arpack-ng keeps a solve's
// state in Fortran SAVE variables: two solves in one copy at once go wrong.
//
//   vlcs run --contexts C -- arpack_many N SOLVES CONTEXTS
//
// The contexts' mode is VLCS_MODE's (auto: namespaces while there are free
// ones, then copies).  Prints one JSON line: seconds for the jobs on one
// copy behind a mutex and in the contexts (after a first, untimed round),
// whether every solve was exact, the contexts' modes and their load time.
#include "vlcs.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "arpack_solve.h"

namespace {

bool solves_exact(void *lib, int n, int solves, double scale)
{
    bool ok = true;
    for (int j = 0; j < solves; j++) {
        struct solve s;
        solve_init(&s, lib, n, scale);
        solve_run(&s);
        ok = solve_correct(&s) && ok;
        solve_free(&s);
    }
    return ok;
}

double seconds_since(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace

int main(int argc, char **argv)
{
    if (argc != 4) {
        std::fprintf(stderr, "usage: vlcs run --contexts C -- %s N SOLVES CONTEXTS\n", argv[0]);
        return 2;
    }
    int n = std::atoi(argv[1]), solves = std::atoi(argv[2]), k = std::atoi(argv[3]);
    try {
        void *base = dlopen("libarpack.so.2", RTLD_NOW);
        if (base == nullptr) {
            std::fprintf(stderr, "arpack_many: %s (install libarpack2)\n", dlerror());
            return 1;
        }
        cpu_set_t mine;
        sched_getaffinity(0, sizeof mine, &mine);
        std::vector<int> cpus;
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &mine))
                cpus.push_back(c);
        std::vector<std::unique_ptr<vlcs::Context>> ctxs;
        std::vector<std::unique_ptr<vlcs::Loader>> libs;
        int copies = 0;
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < k; i++) {
            ctxs.push_back(std::make_unique<vlcs::Context>("arpack-" + std::to_string(i)));
            ctxs[i]->set_allowed_cpus(std::to_string(cpus[i % cpus.size()]));
            libs.push_back(std::make_unique<vlcs::Loader>(*ctxs[i], "libarpack.so.2"));
            copies += vlcs_ctx_mode(ctxs[i]->get()) == VLCS_MODE_COPIES;
        }
        double load_ms = seconds_since(t0) * 1e3 / k;

        std::mutex one_copy;
        double shared_s = 0, contexts_s = 0;
        bool shared_ok = true, contexts_ok = true;
        for (int round = 0; round < 2; round++) {
            std::vector<char> ok(size_t(k), 0);
            auto t1 = std::chrono::steady_clock::now();
            std::vector<std::thread> ts;
            for (int i = 0; i < k; i++)
                ts.emplace_back([&, i] {
                    std::lock_guard<std::mutex> hold(one_copy);
                    ok[size_t(i)] = solves_exact(base, n, solves, 1.0 + i);
                });
            for (auto &t : ts)
                t.join();
            double shared = seconds_since(t1);
            for (int i = 0; i < k; i++)
                shared_ok = shared_ok && ok[size_t(i)];

            ts.clear();
            auto t2 = std::chrono::steady_clock::now();
            for (int i = 0; i < k; i++)
                ts.emplace_back([&, i] {
                    auto in = ctxs[size_t(i)]->enter();
                    ok[size_t(i)] = solves_exact(libs[size_t(i)]->handle(), n, solves, 1.0 + i);
                });
            for (auto &t : ts)
                t.join();
            double in_contexts = seconds_since(t2);
            for (int i = 0; i < k; i++)
                contexts_ok = contexts_ok && ok[size_t(i)];
            if (round == 1) {
                shared_s = shared;
                contexts_s = in_contexts;
            }
        }
        std::printf("{\"n\": %d, \"solves_per_context\": %d, \"contexts\": %d, \"copies\": %d, "
                    "\"load_ms_per_context\": %.3f, \"one_copy_mutex_s\": %.6f, "
                    "\"contexts_s\": %.6f, \"exact\": %s}\n",
                    n, solves, k, copies, load_ms, shared_s, contexts_s,
                    shared_ok && contexts_ok ? "true" : "false");
    } catch (const vlcs::Error &e) {
        std::fprintf(stderr, "arpack_many: %s\n", e.what());
        return 1;
    }
    return 0;
}

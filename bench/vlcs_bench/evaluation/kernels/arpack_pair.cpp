// Case 6 in C++: two eigen-solves with arpack-ng, which keeps a solve's
// state in Fortran SAVE variables and so cannot run two solves at once in
// one copy.  Four ways, interleaved per repeat (the first round is dropped):
//   sequential  - one copy, one solve after the other
//   threads     - two threads and one copy, a mutex around each solve (the
//                 only correct way to share one copy)
//   processes   - fork two children, eigenvalues back through a pipe
//   contexts    - two contexts, each with its own libarpack (and OpenBLAS)
//                 on its share of the CPUs, on two threads
//
//   vlcs run -- arpack_pair N SOLVES REPEATS CPUS_A CPUS_B
//
// Each job is SOLVES solves of the n x n problem (one solve converges only
// up to n of about 1500, too short alone to time well).
// Prints one JSON line: every run's seconds per strategy, and whether each
// strategy's eigenvalues were exact in every run.
#include "vlcs.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <mutex>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "arpack_solve.h"

namespace {

const double scales[2] = {1.0, 3.0};

int per_job = 1;

// One job: per_job solves; true when every one was exact.
bool solve_exact(void *lib, int n, double scale, double *eig = nullptr)
{
    bool ok = true;
    for (int j = 0; j < per_job; j++) {
        struct solve s;
        solve_init(&s, lib, n, scale);
        solve_run(&s);
        ok = solve_correct(&s) && ok;
        if (eig != nullptr)
            std::copy(s.eig, s.eig + NEV, eig);
        solve_free(&s);
    }
    return ok;
}

// One child per solve; each writes its eigenvalues and verdict to a pipe.
bool in_processes(void *lib, int n)
{
    int fds[2][2];
    pid_t pids[2];
    for (int i = 0; i < 2; i++) {
        if (pipe(fds[i]) != 0 || (pids[i] = fork()) < 0)
            return false;
        if (pids[i] == 0) {
            double out[NEV + 1];
            out[NEV] = solve_exact(lib, n, scales[i], out) ? 1 : 0;
            ssize_t w = write(fds[i][1], out, sizeof out);
            _exit(w == ssize_t(sizeof out) ? 0 : 1);
        }
        close(fds[i][1]);
    }
    bool ok = true;
    for (int i = 0; i < 2; i++) {
        double in[NEV + 1] = {0};
        ok = read(fds[i][0], in, sizeof in) == ssize_t(sizeof in) && in[NEV] == 1 && ok;
        close(fds[i][0]);
        int status = 0;
        waitpid(pids[i], &status, 0);
        ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
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
    if (argc != 6) {
        std::fprintf(stderr, "usage: vlcs run -- %s N SOLVES REPEATS CPUS_A CPUS_B\n", argv[0]);
        return 2;
    }
    int n = std::atoi(argv[1]), repeats = std::atoi(argv[3]);
    per_job = std::atoi(argv[2]);
    try {
        void *base = dlopen("libarpack.so.2", RTLD_NOW);
        if (base == nullptr) {
            std::fprintf(stderr, "arpack_pair: %s (install libarpack2)\n", dlerror());
            return 1;
        }
        vlcs::Context a("arpack-a"), b("arpack-b");
        a.set_allowed_cpus(argv[4]);
        b.set_allowed_cpus(argv[5]);
        vlcs::Loader la(a, "libarpack.so.2"), lb(b, "libarpack.so.2");

        const char *names[4] = {"sequential", "threads", "processes", "contexts"};
        std::vector<double> times[4];
        bool exact[4] = {true, true, true, true};
        std::mutex one_copy;
        for (int r = 0; r <= repeats; r++) {
            for (int k = 0; k < 4; k++) {
                bool ok[2] = {false, false};
                auto t0 = std::chrono::steady_clock::now();
                if (k == 0) {
                    for (int i = 0; i < 2; i++)
                        ok[i] = solve_exact(base, n, scales[i]);
                } else if (k == 1) {
                    std::vector<std::thread> ts;
                    for (int i = 0; i < 2; i++)
                        ts.emplace_back([&, i] {
                            std::lock_guard<std::mutex> hold(one_copy);
                            ok[i] = solve_exact(base, n, scales[i]);
                        });
                    for (auto &t : ts)
                        t.join();
                } else if (k == 2) {
                    ok[0] = ok[1] = in_processes(base, n);
                } else {
                    std::thread ta([&] {
                        auto in = a.enter();
                        ok[0] = solve_exact(la.handle(), n, scales[0]);
                    });
                    std::thread tb([&] {
                        auto in = b.enter();
                        ok[1] = solve_exact(lb.handle(), n, scales[1]);
                    });
                    ta.join();
                    tb.join();
                }
                double t = seconds_since(t0);
                if (r > 0)
                    times[k].push_back(t);
                exact[k] = exact[k] && ok[0] && ok[1];
            }
        }
        std::printf("{\"n\": %d, \"solves_per_job\": %d", n, per_job);
        for (int k = 0; k < 4; k++) {
            std::printf(", \"%s\": {\"exact\": %s, \"times\": [", names[k],
                        exact[k] ? "true" : "false");
            for (size_t i = 0; i < times[k].size(); i++)
                std::printf("%s%.6f", i ? ", " : "", times[k][i]);
            std::printf("]}");
        }
        std::printf("}\n");
    } catch (const vlcs::Error &e) {
        std::fprintf(stderr, "arpack_pair: %s\n", e.what());
        return 1;
    }
    return 0;
}

// The paper's nested-GEMM case, sized for this machine: one large DGEMM and
// many small ones.  Run four ways and compare:
//   sequential   - one after the other, each with every core
//   threads      - the large and the small ones on two threads, one OpenBLAS
//                  shared by both (its pool is sized for the whole machine,
//                  so the two oversubscribe)
//   threads, limited - the same with openblas_set_num_threads(cores / 2):
//                  the C++ user's threadpoolctl (process-wide, one limit for both)
//   contexts     - two contexts, each with its own OpenBLAS sized to a
//                  tailored share of the cores
#include "vlcs.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <string>
#include <thread>
#include <vector>

using dgemm_t = void (*)(const char *, const char *, const int *, const int *, const int *,
                         const double *, const double *, const int *, const double *,
                         const int *, const double *, double *, const int *);

struct Work {
    int big_n, small_n, small_count;
};

static void gemm(dgemm_t f, int n, const std::vector<double> &a, const std::vector<double> &b,
                 std::vector<double> &c)
{
    double one = 1, zero = 0;
    f("N", "N", &n, &n, &n, &one, a.data(), &n, b.data(), &n, &zero, c.data(), &n);
}

struct Data {
    std::vector<double> A, B, C, a, b;
    std::vector<std::vector<double>> c;
    explicit Data(const Work &w)
        : A(size_t(w.big_n) * w.big_n, 1.0), B(A.size(), 0.5), C(A.size()),
          a(size_t(w.small_n) * w.small_n, 1.0), b(a.size(), 2.0),
          c(w.small_count, std::vector<double>(a.size()))
    {
    }
};

static void run_big(dgemm_t f, const Work &w, Data &d) { gemm(f, w.big_n, d.A, d.B, d.C); }
static void run_small(dgemm_t f, const Work &w, Data &d)
{
    for (int i = 0; i < w.small_count; i++)
        gemm(f, w.small_n, d.a, d.b, d.c[i]);
}

static double seconds(const std::chrono::steady_clock::time_point &t0)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int main(int argc, char **argv)
{
    int ncpu = int(std::thread::hardware_concurrency());
    // Small GEMMs of 64 run single-threaded in OpenBLAS (below its threading
    // threshold), so run one after the other they leave every other core
    // idle.  Sized so that on 2 cores the large GEMM on one core takes about
    // as long as the small ones on the other.
    Work w{ncpu >= 8 ? 3000 : 1500, 64, ncpu >= 8 ? 40000 : 10000};
    int reps = argc > 1 ? std::atoi(argv[1]) : 3;
    if (argc > 4)
        w = Work{std::atoi(argv[2]), std::atoi(argv[3]), std::atoi(argv[4])};
    std::printf("nested GEMM on %d CPUs: one %dx%d DGEMM and %d of %dx%d\n", ncpu, w.big_n,
                w.big_n, w.small_count, w.small_n, w.small_n);

    // The base's OpenBLAS: what a program uses today.
    void *base = dlopen("libopenblas.so.0", RTLD_NOW);
    if (base == nullptr) {
        std::fprintf(stderr, "demo: %s (install libopenblas0)\n", dlerror());
        return 1;
    }
    auto base_gemm = reinterpret_cast<dgemm_t>(dlsym(base, "dgemm_"));
    auto set_threads = reinterpret_cast<void (*)(int)>(dlsym(base, "openblas_set_num_threads"));
    auto get_threads = reinterpret_cast<int (*)()>(dlsym(base, "openblas_get_num_threads"));

    // Two contexts with tailored core counts: the large GEMM gets all but
    // one core, the small ones (which do not scale) get one.
    int big_cpus = ncpu > 1 ? ncpu - 1 : 1;
    vlcs::Context big("big"), small("small");
    big.set_allowed_cpus(ncpu > 1 ? "0-" + std::to_string(big_cpus - 1) : "0");
    small.set_allowed_cpus(std::to_string(ncpu - 1));
    vlcs::Loader big_blas(big, "libopenblas.so.0"), small_blas(small, "libopenblas.so.0");
    auto big_gemm = big_blas.sym<dgemm_t>("dgemm_");
    auto small_gemm = small_blas.sym<dgemm_t>("dgemm_");

    Data d(w);
    const int kinds = 4;
    std::vector<double> times[kinds];
    // The large and the small GEMMs on two plain threads, one OpenBLAS.
    auto on_two_threads = [&] {
        std::thread tb([&] { run_big(base_gemm, w, d); });
        std::thread ts([&] { run_small(base_gemm, w, d); });
        tb.join();
        ts.join();
    };
    for (int r = 0; r < reps; r++) {
        auto t0 = std::chrono::steady_clock::now();
        run_big(base_gemm, w, d);
        run_small(base_gemm, w, d);
        times[0].push_back(seconds(t0));

        t0 = std::chrono::steady_clock::now();
        on_two_threads();
        times[1].push_back(seconds(t0));

        int before = get_threads();
        set_threads(ncpu > 1 ? ncpu / 2 : 1);
        t0 = std::chrono::steady_clock::now();
        on_two_threads();
        times[3].push_back(seconds(t0));
        set_threads(before);

        t0 = std::chrono::steady_clock::now();
        {
            std::thread tb([&] {
                auto in = big.enter();
                run_big(big_gemm, w, d);
            });
            std::thread ts([&] {
                auto in = small.enter();
                run_small(small_gemm, w, d);
            });
            tb.join();
            ts.join();
        }
        times[2].push_back(seconds(t0));
    }
    const char *names[kinds] = {"sequential (all cores each)", "threads, one OpenBLAS",
                                "vlcs contexts", "threads, OpenBLAS limited"};
    const int order[kinds] = {0, 1, 3, 2};
    double best0 = *std::min_element(times[0].begin(), times[0].end());
    std::printf("\n%-30s %10s %12s\n", "strategy", "best s", "vs sequential");
    for (int i : order) {
        double b = *std::min_element(times[i].begin(), times[i].end());
        std::printf("%-30s %10.3f %11.2fx\n", names[i], b, best0 / b);
    }
    // Every run's time, for `vlcs bench all` (medians and ranges).
    if (std::getenv("VLCS_DEMO_TIMES") != nullptr) {
        std::printf("TIMES");
        for (int i : order) {
            std::printf(" %s=", i == 0 ? "sequential" : i == 1 ? "threads" : i == 2 ? "contexts" : "limited");
            for (size_t k = 0; k < times[i].size(); k++)
                std::printf("%s%.6f", k ? "," : "", times[i][k]);
        }
        std::printf("\n");
    }
    std::printf("\ncontexts: '%s' on CPUs %s, '%s' on CPUs %s (best of %d runs each)\n",
                big.name().c_str(), big.allowed_cpus().c_str(), small.name().c_str(),
                small.allowed_cpus().c_str(), reps);
    return 0;
}

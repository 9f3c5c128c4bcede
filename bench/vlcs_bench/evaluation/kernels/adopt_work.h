// The workload of case 3's two C++ drivers (adopt_plain.cpp, adopt_vlcs.cpp):
// repeated LAPACK dgesv solves, timed, with a checksum.  Only the drivers
// differ, so their diff is what adopting vlcs costs in C++.
#pragma once
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

using dgesv_t = void (*)(const int *, const int *, double *, const int *, int *, double *,
                         const int *, int *);

inline int solve_all(dgesv_t dgesv, int argc, char **argv)
{
    int n = argc > 1 ? std::atoi(argv[1]) : 1000, reps = argc > 2 ? std::atoi(argv[2]) : 5;
    const int nrhs = 8;
    std::vector<double> a0(size_t(n) * n), a, b;
    std::vector<int> piv(n);
    unsigned seed = 3;
    for (auto &x : a0)
        x = (seed = seed * 1103515245u + 12345u) / 4294967296.0;
    for (int i = 0; i < n; i++)
        a0[size_t(i) * n + i] += n;
    double sum = 0;
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; r++) {
        a = a0;
        b.assign(size_t(n) * nrhs, 1.0);
        int info = 0;
        dgesv(&n, &nrhs, a.data(), &n, piv.data(), b.data(), &n, &info);
        if (info != 0)
            return 1;
        for (double x : b)
            sum += x;
    }
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("{\"seconds\": %.6f, \"checksum\": %.17g}\n", s, sum);
    return 0;
}

// A C++ program linked against arpack-ng as usual: it calls dsaupd_ and
// dseupd_ directly.  Its only vlcs code is the context set-up.  Run with a
// vlcs shim of libarpack first on LD_LIBRARY_PATH, each thread's calls reach
// its own context's copy of the (thread-unsafe) library.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "vlcs.hpp"

extern "C" {
void dsaupd_(int *, const char *, const int *, const char *, const int *, const double *,
             double *, const int *, double *, const int *, int *, int *, double *, double *,
             const int *, int *, size_t, size_t);
void dseupd_(const int *, const char *, int *, double *, double *, const int *, const double *,
             const char *, const int *, const char *, const int *, const double *, double *,
             const int *, double *, const int *, int *, int *, double *, double *, const int *,
             int *, size_t, size_t, size_t);
}

struct Solve {
    int n, nev = 4, ncv = 20, lworkl = 20 * 28, ido = 0, info = 0;
    double scale, tol = 0;
    std::vector<double> resid, v, workd, workl, eig;
    int iparam[11] = {1, 0, 3000, 0, 0, 0, 1}, ipntr[11] = {};
    Solve(int n_, double s)
        : n(n_), scale(s), resid(n_), v(size_t(n_) * 20), workd(3 * size_t(n_)), workl(20 * 28),
          eig(4)
    {
    }
    bool step() // one reverse-communication step; false when finished
    {
        dsaupd_(&ido, "I", &n, "LM", &nev, &tol, resid.data(), &ncv, v.data(), &n, iparam, ipntr,
                workd.data(), workl.data(), &lworkl, &info, 1, 2);
        if (ido == 1 || ido == -1) {
            const double *x = &workd[ipntr[0] - 1];
            double *y = &workd[ipntr[1] - 1];
            for (int i = 0; i < n; i++)
                y[i] = scale * (2 * x[i] - (i ? x[i - 1] : 0) - (i + 1 < n ? x[i + 1] : 0));
            return true;
        }
        if (info == 0) {
            int rvec = 0;
            std::vector<int> select(ncv);
            double sigma = 0;
            dseupd_(&rvec, "A", select.data(), eig.data(), nullptr, &n, &sigma, "I", &n, "LM",
                    &nev, &tol, resid.data(), &ncv, v.data(), &n, iparam, ipntr, workd.data(),
                    workl.data(), &lworkl, &info, 1, 1, 2);
        }
        return false;
    }
    bool correct() const
    {
        if (info != 0)
            return false;
        for (int k = 0; k < nev; k++) {
            double exact = scale * (2 - 2 * std::cos((n - 3 + k) * M_PI / (n + 1)));
            if (std::fabs(eig[k] - exact) > 1e-8 * scale)
                return false;
        }
        return true;
    }
};

int main(int argc, char **argv)
{
    bool outside = argc > 1 && std::string(argv[1]) == "outside";
    try {
        vlcs::Context a("a"), b("b");
        vlcs::Loader la(a, "libarpack.so.2", /*transparent=*/true);
        vlcs::Loader lb(b, "libarpack.so.2", /*transparent=*/true);

        bool m1 = true, m2 = true;
        if (outside) {
            // Outside contexts: one default copy shared, so the solves clash
            // (wrong results, or a corrupted heap).
            Solve d1(600, 1.0), d2(600, 3.0);
            while (m1 || m2) {
                if (m1)
                    m1 = d1.step();
                if (m2)
                    m2 = d2.step();
            }
            std::printf("interleaved outside contexts: %s\n",
                        d1.correct() && d2.correct() ? "both ok" : "broken");
            std::fflush(stdout);
            std::_Exit(0); // the heap may be corrupt: no destructors
        }

        // Interleaved step by step on one thread, switching contexts: the
        // shim sends each step to the right copy.
        Solve s1(600, 1.0), s2(600, 3.0);
        while (m1 || m2) {
            if (m1) {
                auto in = a.enter();
                m1 = s1.step();
            }
            if (m2) {
                auto in = b.enter();
                m2 = s2.step();
            }
        }
        std::printf("interleaved in contexts: %s %s\n", s1.correct() ? "ok" : "wrong",
                    s2.correct() ? "ok" : "wrong");

        // Two threads, each in its own context, concurrently.
        int good = 0;
        for (int round = 0; round < 3; round++) {
            Solve t1(600, 1.0), t2(600, 3.0);
            std::thread x([&] {
                auto in = a.enter();
                while (t1.step())
                    ;
            });
            std::thread y([&] {
                auto in = b.enter();
                while (t2.step())
                    ;
            });
            x.join();
            y.join();
            good += t1.correct() && t2.correct();
        }
        std::printf("concurrent threads: %d/3 rounds correct\n", good);
    } catch (const vlcs::Error &e) {
        std::printf("vlcs error: %s\n", e.what());
        return 3;
    }
    return 0;
}

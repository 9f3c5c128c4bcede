// A C++ program for tests/python/test_tune.py: OpenMP threads spin over a
// fixed amount of work; argv[2] (the CPU list vlcs tune filled in) must be
// the CPUs it may run on, or it fails.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sched.h>

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    long work = std::atol(argv[1]);
    cpu_set_t s;
    CPU_ZERO(&s);
    sched_getaffinity(0, sizeof s, &s);
    char list[256] = "";
    for (int c = 0, first = -1; c <= CPU_SETSIZE; c++) {
        bool in = c < CPU_SETSIZE && CPU_ISSET(c, &s);
        if (in && first < 0)
            first = c;
        if (!in && first >= 0) {
            char part[32];
            std::snprintf(part, sizeof part, "%s%d%s", *list ? "," : "", first,
                          c - 1 > first ? "" : "");
            if (c - 1 > first)
                std::snprintf(part, sizeof part, "%s%d-%d", *list ? "," : "", first, c - 1);
            std::strncat(list, part, sizeof list - std::strlen(list) - 1);
            first = -1;
        }
    }
    if (std::strcmp(list, argv[2]) != 0) {
        std::fprintf(stderr, "runs on %s, expected %s\n", list, argv[2]);
        return 1;
    }
    double x = 0;
#pragma omp parallel for reduction(+ : x)
    for (long i = 0; i < work; i++)
        x += (i % 7) * 0.5;
    std::printf("%f\n", x);
    return 0;
}

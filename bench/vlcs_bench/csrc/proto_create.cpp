// What one context costs in the paper's prototype (pecos/Virtual-Library-
// Context, header-only), for `vlcs bench create --prototype DIR`: built
// against DIR/include, never shipped.
//
//   vlcs-bench-proto-create LIBRARY WAY N
//
// WAY "prototype": its runtime started once (it forks its ptrace monitor),
// then per context what its examples do: a Context on this thread with CPU
// 0, register_vlc (the monitor applies it), and a Loader of LIBRARY in a
// new namespace.  WAY "prototype-bare": the Context and Loader only, no
// monitor (its contexts then have no CPU set).  Prints the N times in
// microseconds as JSON, as vlcs-bench-create does.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <unistd.h>
#include <vector>

#include "VLC/loader.h"
#include "VLC/runtime.h"

static double now_us()
{
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
    if (argc != 4 || atoi(argv[3]) < 1 ||
        (strcmp(argv[2], "prototype") != 0 && strcmp(argv[2], "prototype-bare") != 0)) {
        fprintf(stderr, "usage: vlcs-bench-proto-create LIBRARY prototype|prototype-bare N\n");
        return 2;
    }
    const bool monitor = strcmp(argv[2], "prototype") == 0;
    const int n = atoi(argv[3]);
    VLC::Runtime runtime;
    if (monitor)
        runtime.initialize(); // the monitor is the parent from here on
    std::vector<double> us;
    std::vector<VLC::Loader *> kept; // the namespaces stay, as vlcs's do
    for (int i = 1; i <= n; i++) {
        double t0 = now_us();
        VLC::Context ctx(i, gettid());
        ctx.avaliable_cpu("0");
        if (monitor)
            VLC::register_vlc(&ctx);
        kept.push_back(new VLC::Loader(argv[1], i, false));
        us.push_back(now_us() - t0);
    }
    printf("{\"way\": \"%s\", \"us\": [", argv[2]);
    for (size_t i = 0; i < us.size(); i++)
        printf("%s%.1f", i ? ", " : "", us[i]);
    printf("]}\n");
    fflush(stdout);
    return 0;
}

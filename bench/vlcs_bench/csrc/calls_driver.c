#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "vlcs.h"

int vlcs_bench_add(int x); /* resolved to the shim's stub */
typedef int (*add_fn)(int);
typedef long (*loop_fn)(long);

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }

static volatile long sink;
static double per_call(add_fn f, long n)
{
    double t0 = now();
    long s = 0;
    for (long i = 0; i < n; i++)
        s += f((int)i);
    sink += s;
    return (now() - t0) / n;
}
static double per_loop(loop_fn f, long n) { double t0 = now(); sink += f(n); return (now() - t0) / n; }

/* A call into a context: entered and left around it, or through
 * vlcs_ctx_call, which also contains a fault in it. */
static void *task(void *arg) { return (void *)((long)arg + 1); }
static double per_enter_call(vlcs_ctx *c, long n)
{
    double t0 = now();
    long s = 0;
    for (long i = 0; i < n; i++) {
        vlcs_enter(c);
        s += (long)task((void *)i);
        vlcs_leave();
    }
    sink += s;
    return (now() - t0) / n;
}
static double per_guarded_call(vlcs_ctx *c, long n)
{
    double t0 = now();
    long s = 0;
    for (long i = 0; i < n; i++) {
        void *r;
        vlcs_ctx_call(c, task, (void *)i, &r);
        s += (long)r;
    }
    sink += s;
    return (now() - t0) / n;
}

int main(int argc, char **argv)
{
    (void)argc;
    void *real = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL); /* the real library, by path */
    add_fn direct = (add_fn)dlsym(real, "vlcs_bench_add");
    volatile add_fn via_shim = vlcs_bench_add;
    vlcs_ctx *c = vlcs_ctx_create("bench");
    if (!direct || !vlcs_ctx_load_transparent(c, argv[2])) { fprintf(stderr, "%s\n", vlcs_error()); return 1; }
    /* Before the calls into a context below, which install vlcs's fault
     * handlers: the base's own calls cost the same with them in place. */
    double d0[5];
    per_call(direct, 2000000);
    for (int b = 0; b < 5; b++)
        d0[b] = per_call(direct, 2000000);
    /* on the thread's own CPUs: entering moves no thread, so what is
     * measured is the call's own cost */
    vlcs_ctx *g = vlcs_ctx_create("guarded");
    if (!g) { fprintf(stderr, "%s\n", vlcs_error()); return 1; }
    vlcs_enter(c);

    /* Service: the user library in the base vs in a context bound through the forwarder. */
    void *svc_user_base = dlopen(argv[3], RTLD_NOW | RTLD_LOCAL);
    if (vlcs_service_add(argv[4]) != 0) { fprintf(stderr, "%s\n", vlcs_error()); return 1; }
    vlcs_ctx *s = vlcs_ctx_create("svc");
    void *svc_user_ctx = vlcs_ctx_load(s, argv[3]);
    if (!svc_user_base || !svc_user_ctx) { fprintf(stderr, "%s %s\n", dlerror(), vlcs_error()); return 1; }
    loop_fn base_loop = (loop_fn)dlsym(svc_user_base, "vlcs_bench_user_loop");
    loop_fn ctx_loop = (loop_fn)vlcs_ctx_sym(svc_user_ctx, "vlcs_bench_user_loop");

    enum { B = 15 };
    double d[B], sh[B], bl[B], cl[B], el[B], gc[B];
    long n = 2000000;
    per_call(direct, n); per_call(via_shim, n);
    for (int b = 0; b < B; b++) {
        d[b] = per_call(direct, n);
        sh[b] = per_call(via_shim, n);
        bl[b] = per_loop(base_loop, n);
        cl[b] = per_loop(ctx_loop, n);
        el[b] = per_enter_call(g, n / 20);
        gc[b] = per_guarded_call(g, n / 20);
    }
    qsort(d0, 5, sizeof *d0, cmp);
    qsort(el, B, sizeof *el, cmp); qsort(gc, B, sizeof *gc, cmp);
    qsort(d, B, sizeof *d, cmp); qsort(sh, B, sizeof *sh, cmp);
    qsort(bl, B, sizeof *bl, cmp); qsort(cl, B, sizeof *cl, cmp);
    printf("{\"direct_ns\": %.3f, \"shim_ns\": %.3f, \"service_base_ns\": %.3f, \"service_context_ns\": %.3f, "
           "\"direct_before_handlers_ns\": %.3f, \"enter_call_leave_ns\": %.3f, \"guarded_call_ns\": %.3f}\n",
           d[B / 2], sh[B / 2], bl[B / 2], cl[B / 2], d0[2], el[B / 2], gc[B / 2]);
    return 0;
}

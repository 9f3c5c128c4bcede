/*
 * bench_core.c - overheads of the core runtime, measured side by side in one
 * run and printed as JSON (`vlcs bench core --json` runs this).
 *
 * "Inside" calls go through the interposer a library in a context binds to;
 * "outside" calls go to the base libc the same way (through a pointer), so
 * the ratio is the cost vlcs adds to a library's call.  Each figure is the
 * median of several batches; inside and outside batches alternate so that
 * machine noise hits both alike.
 */
#define _GNU_SOURCE
#include "vlcs.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BATCHES 15

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return v[n / 2];
}

typedef int (*getaff_fn)(pid_t, size_t, cpu_set_t *);
typedef int (*open_fn)(const char *, int, ...);
typedef pid_t (*getppid_fn)(void);
typedef ssize_t (*read_fn)(int, void *, size_t);
typedef off_t (*lseek_fn)(int, off_t, int);

struct side {
    getaff_fn getaff;
    open_fn open;
    getppid_fn getppid;
    read_fn read;
    lseek_fn lseek;
};

static volatile long sink;

static double per_call_getaff(struct side *s, int n)
{
    cpu_set_t set;
    double t0 = now_ns();
    for (int i = 0; i < n; i++)
        sink += s->getaff(0, sizeof set, &set);
    return (now_ns() - t0) / n;
}

static double per_call_cpuinfo(struct side *s, int n)
{
    static char buf[1 << 16];
    double t0 = now_ns();
    for (int i = 0; i < n; i++) {
        int fd = s->open("/proc/cpuinfo", O_RDONLY);
        ssize_t r;
        while ((r = s->read(fd, buf, sizeof buf)) > 0)
            sink += r;
        close(fd);
    }
    return (now_ns() - t0) / n;
}

static double per_call_getppid(struct side *s, int n)
{
    double t0 = now_ns();
    for (int i = 0; i < n; i++)
        sink += s->getppid();
    return (now_ns() - t0) / n;
}

static int data_fd;
static double per_call_read(struct side *s, int n)
{
    char buf[64];
    double t0 = now_ns();
    for (int i = 0; i < n; i++) {
        s->lseek(data_fd, 0, SEEK_SET);
        sink += s->read(data_fd, buf, sizeof buf);
    }
    return (now_ns() - t0) / n;
}

static void pair(const char *name, double (*f)(struct side *, int), struct side *in,
                 struct side *out, int n, double target, int first)
{
    double vi[BATCHES], vo[BATCHES];
    f(in, n / 10 + 1);
    f(out, n / 10 + 1);
    for (int b = 0; b < BATCHES; b++) {
        vo[b] = f(out, n);
        vi[b] = f(in, n);
    }
    double mi = median(vi, BATCHES), mo = median(vo, BATCHES);
    printf("%s    \"%s\": {\"inside_ns\": %.1f, \"outside_ns\": %.1f, \"ratio\": %.3f",
           first ? "" : ",\n", name, mi, mo, mi / mo);
    if (target > 0)
        printf(", \"target_ratio\": %.2f, \"meets_target\": %s", target,
               mi / mo <= target ? "true" : "false");
    printf("}");
}

static double time_enter_leave(vlcs_ctx *c, int n)
{
    double t0 = now_ns();
    for (int i = 0; i < n; i++) {
        vlcs_enter(c);
        vlcs_leave();
    }
    return (now_ns() - t0) / n;
}

static void single(const char *name, double *v, int n, double target_ns, int first)
{
    double m = median(v, n);
    printf("%s    \"%s\": {\"ns\": %.1f", first ? "" : ",\n", name, m);
    if (target_ns > 0)
        printf(", \"target_ns\": %.0f, \"meets_target\": %s", target_ns,
               m <= target_ns ? "true" : "false");
    printf("}");
}

/* Time to load `lib` into the base once vs into 4 fresh contexts, in a child
 * process each so every measurement starts from an unloaded library. */
static double load_ms(const char *lib, int copies)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        double t0 = now_ns();
        for (int i = 0; i < copies; i++) {
            void *h;
            if (copies == 1 && i == 0) {
                h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
            } else {
                vlcs_ctx *c = vlcs_ctx_create(NULL);
                h = c ? vlcs_ctx_load(c, lib) : NULL;
            }
            if (h == NULL) {
                fprintf(stderr, "bench: loading %s: %s\n", lib,
                        copies == 1 ? dlerror() : vlcs_error());
                _exit(1);
            }
        }
        double ms = (now_ns() - t0) / 1e6;
        if (write(fds[1], &ms, sizeof ms) != sizeof ms)
            _exit(1);
        _exit(0);
    }
    close(fds[1]);
    double ms = -1;
    if (read(fds[0], &ms, sizeof ms) != sizeof ms)
        ms = -1;
    close(fds[0]);
    int st;
    waitpid(pid, &st, 0);
    return ms;
}

static void load_case(const char *name, const char *lib, int first)
{
    double one[5], four[5];
    load_ms(lib, 1); /* warm the page cache */
    for (int r = 0; r < 5; r++) {
        one[r] = load_ms(lib, 1);
        four[r] = load_ms(lib, 4);
    }
    double m1 = median(one, 5), m4 = median(four, 5);
    printf("%s    \"%s\": {\"once_ms\": %.3f, \"four_contexts_ms\": %.3f, \"ratio\": %.2f}",
           first ? "" : ",\n", name, m1, m4, m4 / m1);
}

int main(void)
{
    if (vlcs_init() != 0) {
        fprintf(stderr, "bench: %s\n", vlcs_error());
        return 1;
    }
    int ncpu = get_nprocs();
    vlcs_ctx *c = vlcs_ctx_create("bench");
    void *ip = vlcs_ctx_load(c, "libvlcs_interpose.so");
    if (ip == NULL) {
        fprintf(stderr, "bench: %s\n", vlcs_error());
        return 1;
    }
    struct side in = {
        (getaff_fn)vlcs_ctx_sym(ip, "sched_getaffinity"), (open_fn)vlcs_ctx_sym(ip, "open"),
        (getppid_fn)vlcs_ctx_sym(ip, "getppid"), (read_fn)vlcs_ctx_sym(ip, "read"),
        (lseek_fn)vlcs_ctx_sym(ip, "lseek")};
    struct side out = {(getaff_fn)dlsym(RTLD_DEFAULT, "sched_getaffinity"),
                       (open_fn)dlsym(RTLD_DEFAULT, "open"),
                       (getppid_fn)dlsym(RTLD_DEFAULT, "getppid"),
                       (read_fn)dlsym(RTLD_DEFAULT, "read"),
                       (lseek_fn)dlsym(RTLD_DEFAULT, "lseek")};
    char tmpl[] = "/tmp/vlcs-bench-XXXXXX";
    data_fd = mkstemp(tmpl);
    unlink(tmpl);
    if (data_fd < 0 || write(data_fd, tmpl, sizeof tmpl) < 0)
        return 1;

    printf("{\n  \"benchmark\": \"core\",\n  \"cpus\": %d,\n  \"vlcs_version\": \"%s\",\n"
           "  \"calls\": {\n",
           ncpu, vlcs_version());
    pair("sched_getaffinity", per_call_getaff, &in, &out, 20000, 1.5, 1);
    pair("open_read_proc_cpuinfo", per_call_cpuinfo, &in, &out, 300, 3.0, 0);
    pair("getppid", per_call_getppid, &in, &out, 50000, 0, 0);
    pair("lseek_read_file", per_call_read, &in, &out, 20000, 0, 0);
    printf("\n  },\n  \"contexts\": {\n");

    double v[BATCHES];
    for (int b = 0; b < BATCHES; b++) {
        int n = 2000;
        double t0 = now_ns();
        for (int i = 0; i < n; i++)
            vlcs_ctx_destroy(vlcs_ctx_create(NULL));
        v[b] = (now_ns() - t0) / n;
    }
    single("create_destroy", v, BATCHES, 40000, 1);

    vlcs_ctx *same = vlcs_ctx_create("same");  /* every CPU: no affinity change */
    vlcs_ctx *other = vlcs_ctx_create("other"); /* one CPU: a change each way */
    vlcs_ctx_set_cpus(other, ncpu > 1 ? "1" : "0");
    for (int b = 0; b < BATCHES; b++)
        v[b] = time_enter_leave(same, 20000);
    single("enter_leave", v, BATCHES, 1000, 0);
    for (int b = 0; b < BATCHES; b++)
        v[b] = time_enter_leave(other, 2000);
    single("enter_leave_with_affinity_change", v, BATCHES, 0, 0);
    /* The same enter and leave while a trace records (two events each);
     * the trace's cost per event is half the difference with enter_leave. */
    char trace_file[] = "/tmp/vlcs-bench-trace-XXXXXX";
    int tfd = mkstemp(trace_file);
    if (tfd >= 0 && vlcs_trace_start(trace_file) == 0) {
        for (int b = 0; b < BATCHES; b++)
            v[b] = time_enter_leave(same, 20000);
        vlcs_trace_stop();
        single("enter_leave_tracing", v, BATCHES, 3000, 0);
    }
    if (tfd >= 0) {
        close(tfd);
        unlink(trace_file);
    }
    if (ncpu > 1) {
        /* An elastic owner reclaims its CPU from a busy borrower whose
         * OpenBLAS is resized, and lends it again on leaving: two plans. */
        vlcs_ctx *owner = vlcs_ctx_create("owner"), *borrower = vlcs_ctx_create("borrower");
        char home[32], bound[32];
        snprintf(home, sizeof home, "1-%d", ncpu - 1);
        snprintf(bound, sizeof bound, "0-%d", ncpu - 1);
        vlcs_ctx_set_cpus(owner, "0");
        vlcs_ctx_set_cpus(borrower, home);
        if (vlcs_ctx_set_elastic(owner, bound, 0) != 0 || vlcs_ctx_set_elastic(borrower, bound, 0) != 0 ||
            vlcs_ctx_load(borrower, "libopenblas.so.0") == NULL) {
            fprintf(stderr, "bench: %s\n", vlcs_error());
            return 1;
        }
        vlcs_enter(borrower);
        for (int b = 0; b < BATCHES; b++)
            v[b] = time_enter_leave(owner, 2000);
        vlcs_leave();
        single("elastic_reclaim_and_lend", v, BATCHES, 1000000, 0);
    }
    for (int b = 0; b < BATCHES; b++) {
        double t0 = now_ns();
        vlcs_ctx *n = vlcs_ctx_create(NULL);
        vlcs_ctx_load(n, "libvlcs_interpose.so");
        v[b] = now_ns() - t0;
        if (b == 4)
            break; /* each of these takes a namespace */
    }
    single("create_and_first_load_namespace", v, 5, 0, 0);
    printf("\n  },\n  \"load\": {\n");
    fflush(stdout);
    load_case("libopenblas.so.0", "libopenblas.so.0", 1);
    load_case("libgomp.so.1", "libgomp.so.1", 0);
    load_case("libarpack.so.2", "libarpack.so.2", 0);
    printf("\n  }\n}\n");
    return 0;
}

/*
 * bench_strict.c - the cost of strict mode, printed as JSON
 * (`vlcs bench strict --json` runs this).
 *
 * Strict mode cannot be turned off, so each figure comes from child
 * processes: one without strict mode and one with it, started alternately
 * several times; the figure is the median over children.  In both, the same
 * calls are made from code loaded in a context (libc's syscall() and open()
 * of the context's namespace), and untrapped calls from the base.
 */
#define _GNU_SOURCE
#include "vlcs.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 7
enum { TRAPPED_GETAFF, CTX_OPEN_CLOSE, BASE_OPEN_CLOSE, GETPPID, READ, NFIG };
static const char *names[NFIG] = {"trapped_sched_getaffinity", "context_open_close_file",
                                  "base_open_close_file", "getppid_loop", "read_loop"};

/* The platform's floor, measured the same way in a third kind of child:
 * a filter that allows everything (what any seccomp filter costs an
 * untrapped syscall here) and a trap whose handler does nothing (what any
 * SIGSYS round trip costs). */
static void empty_handler(int sig, siginfo_t *info, void *uc)
{
    (void)sig;
    (void)info;
    ((ucontext_t *)uc)->uc_mcontext.gregs[REG_RAX] = 0;
}

static void install_floor_filters(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = empty_handler;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSYS, &sa, NULL);
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_sched_getaffinity, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {4, f};
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_SPEC_ALLOW, &prog))
        _exit(3);
}

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static volatile long sink;

static void measure(int strict, const char *file, double out[NFIG])
{
    if (strict == 2) {
        install_floor_filters();
    } else if (strict) {
        vlcs_opts o = {.size = sizeof o, .strict = 1};
        if (vlcs_init_opts(&o) != 0) {
            fprintf(stderr, "bench: %s\n", vlcs_error());
            _exit(2);
        }
    }
    vlcs_ctx *c = vlcs_ctx_create("bench");
    void *libc = vlcs_ctx_load(c, "libc.so.6"); /* the context's own libc */
    if (libc == NULL) {
        fprintf(stderr, "bench: %s\n", vlcs_error());
        _exit(2);
    }
    long (*ctx_syscall)(long, ...) = (long (*)(long, ...))vlcs_ctx_sym(libc, "syscall");
    if (strict == 2)
        ctx_syscall = syscall; /* the floor filter traps every caller */
    cpu_set_t set;
    int n = 20000;
    double t0 = now_ns();
    for (int i = 0; i < n; i++)
        sink += ctx_syscall(SYS_sched_getaffinity, 0, sizeof set, &set);
    out[TRAPPED_GETAFF] = (now_ns() - t0) / n;

    n = 5000;
    t0 = now_ns();
    for (int i = 0; i < n; i++)
        syscall(SYS_close, ctx_syscall(SYS_openat, AT_FDCWD, file, O_RDONLY));
    out[CTX_OPEN_CLOSE] = (now_ns() - t0) / n;
    t0 = now_ns();
    for (int i = 0; i < n; i++)
        close(open(file, O_RDONLY));
    out[BASE_OPEN_CLOSE] = (now_ns() - t0) / n;

    n = 200000;
    t0 = now_ns();
    for (int i = 0; i < n; i++)
        sink += getppid();
    out[GETPPID] = (now_ns() - t0) / n;
    int fd = open(file, O_RDONLY);
    char buf[64];
    t0 = now_ns();
    for (int i = 0; i < n; i++)
        sink += pread(fd, buf, sizeof buf, 0);
    out[READ] = (now_ns() - t0) / n;
    close(fd);
}

static int child(int strict, const char *file, double out[NFIG])
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        double v[NFIG];
        measure(strict, file, v);
        _exit(write(fds[1], v, sizeof v) == sizeof v ? 0 : 1);
    }
    close(fds[1]);
    ssize_t r = read(fds[0], out, sizeof(double) * NFIG);
    close(fds[0]);
    int st;
    waitpid(pid, &st, 0);
    return r == (ssize_t)(sizeof(double) * NFIG) && WIFEXITED(st) && WEXITSTATUS(st) == 0
               ? 0
               : -1;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(void)
{
    char file[] = "/tmp/vlcs-bench-strict-XXXXXX";
    int fd = mkstemp(file);
    if (fd < 0 || write(fd, "0123456789abcdef0123456789abcdef", 32) != 32)
        return 1;
    close(fd);
    double plain[NFIG][ROUNDS], strict[NFIG][ROUNDS], floor_[NFIG][ROUNDS], v[NFIG];
    for (int r = 0; r < ROUNDS; r++) {
        if (child(0, file, v) != 0)
            goto fail;
        for (int k = 0; k < NFIG; k++)
            plain[k][r] = v[k];
        if (child(1, file, v) != 0)
            goto fail;
        for (int k = 0; k < NFIG; k++)
            strict[k][r] = v[k];
        if (child(2, file, v) != 0)
            goto fail;
        for (int k = 0; k < NFIG; k++)
            floor_[k][r] = v[k];
    }
    unlink(file);
    printf("{\n  \"benchmark\": \"strict\",\n  \"rounds\": %d,\n  \"calls\": {\n", ROUNDS);
    for (int k = 0; k < NFIG; k++) {
        qsort(plain[k], ROUNDS, sizeof(double), cmp);
        qsort(strict[k], ROUNDS, sizeof(double), cmp);
        qsort(floor_[k], ROUNDS, sizeof(double), cmp);
        double p = plain[k][ROUNDS / 2], s = strict[k][ROUNDS / 2], fl = floor_[k][ROUNDS / 2];
        printf("    \"%s\": {\"plain_ns\": %.1f, \"strict_ns\": %.1f, \"ratio\": %.3f, "
               "\"extra_ns\": %.1f",
               names[k], p, s, s / p, s - p);
        if (k != CTX_OPEN_CLOSE)
            printf(", \"platform_floor_ns\": %.1f", fl);
        if (k == TRAPPED_GETAFF)
            printf(", \"target_ns\": 3000, \"meets_target\": %s", s <= 3000 ? "true" : "false");
        if (k == CTX_OPEN_CLOSE || k == BASE_OPEN_CLOSE)
            printf(", \"target_extra_ns\": 3000, \"meets_target\": %s",
                   s - p <= 3000 ? "true" : "false");
        if (k == GETPPID || k == READ)
            printf(", \"target_ratio\": 1.02, \"meets_target\": %s",
                   s / p <= 1.02 ? "true" : "false");
        printf("}%s\n", k + 1 < NFIG ? "," : "");
    }
    printf("  }\n}\n");
    return 0;
fail:
    unlink(file);
    fprintf(stderr, "bench: a measuring child failed\n");
    return 1;
}

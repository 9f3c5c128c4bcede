/* Node-wide lending: two processes, each with one elastic context whose
 * home is one CPU and whose bound is both, share the node through the
 * ledger.  While one idles, the other runs on both CPUs with Debian's
 * OpenBLAS grown to 2 threads; when the first enters its context, the
 * second shrinks; a member killed with SIGKILL (left a zombie, then reaped),
 * exiting while busy, or exec'ing another program while busy gives its CPU
 * back within a second.  Bad input:
 * no shared memory, a file that is not a ledger, a forked child. */
#define _GNU_SOURCE
#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef int (*nthreads_fn)(void);

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static unsigned long my_affinity(void)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    sched_getaffinity(0, sizeof s, &s);
    unsigned long m = 0;
    for (int i = 0; i < 64; i++)
        if (CPU_ISSET(i, &s))
            m |= 1ul << i;
    return m;
}

/* ---- a member process, driven line by line over stdin/stdout ------------ */

static int member(const char *name, const char *home, const char *bound)
{
    vlcs_opts o = {.size = sizeof o, .node = 1};
    if (vlcs_init_opts(&o) != 0) {
        printf("error %s\n", vlcs_error());
        return 1;
    }
    vlcs_ctx *c = vlcs_ctx_create(name);
    CHECK_EQ(0, vlcs_ctx_set_cpus(c, home), "home");
    CHECK_EQ(0, vlcs_ctx_set_elastic(c, bound, 0), "elastic");
    void *blas = must_load(c, "libopenblas.so.0");
    nthreads_fn threads = SYM(blas, nthreads_fn, "openblas_get_num_threads");
    char cur[64], line[64];
    printf("ready\n");
    fflush(stdout);
    while (fgets(line, sizeof line, stdin) != NULL) {
        int want;
        CHECK(vlcs_ctx_get_cpuset(c, VLCS_CPUSET_CURRENT, cur, sizeof cur) >= 0, "cpus");
        if (strcmp(line, "enter\n") == 0) {
            CHECK_EQ(0, vlcs_enter(c), "enter");
            CHECK(vlcs_ctx_get_cpuset(c, VLCS_CPUSET_CURRENT, cur, sizeof cur) >= 0, "cpus");
            printf("%s %d %lu\n", cur, threads(), my_affinity());
        } else if (strcmp(line, "leave\n") == 0) {
            CHECK_EQ(0, vlcs_leave(), "leave");
            printf("left\n");
        } else if (strcmp(line, "state\n") == 0) {
            printf("%s %d %lu\n", cur, threads(), my_affinity());
        } else if (strcmp(line, "gemm\n") == 0) {
            printf("%s\n", dgemm_right(blas, 400) ? "right" : "wrong");
        } else if (sscanf(line, "wait %d", &want) == 1) {
            /* A condition awaited with a deadline: the other process's
             * change reaches this one through its watcher thread. */
            double t0 = now_us();
            int n = -1;
            while (now_us() - t0 < 1e6) {
                n = vlcs_ctx_get_cpuset(c, VLCS_CPUSET_CURRENT, cur, sizeof cur);
                if ((want == 1 && n == 1) || (want == 2 && n == 3)) /* "1" or "0-1" */
                    break;
                nanosleep(&(struct timespec){0, 100000}, NULL);
            }
            if ((want == 1 && n == 1) || (want == 2 && n == 3))
                printf("ok %.0f\n", now_us() - t0);
            else
                printf("timeout %s\n", cur);
        } else if (strcmp(line, "exec\n") == 0) {
            /* Another program, same pid, inside the context when told so:
             * it is no member any more. */
            execl("/bin/sleep", "sleep", "120", (char *)NULL);
            printf("exec failed\n");
        } else if (strcmp(line, "quit\n") == 0) {
            printf("bye\n");
            fflush(stdout);
            exit(0); /* while inside, when told so: the atexit leave gives the CPUs back */
        }
        fflush(stdout);
    }
    return 0;
}

/* ---- the driver ----------------------------------------------------------- */

struct proc {
    pid_t pid;
    FILE *in, *out;
};

static struct proc spawn(const char *name, const char *home)
{
    int to[2], from[2];
    CHECK(pipe(to) == 0 && pipe(from) == 0, "pipe");
    struct proc p;
    p.pid = fork();
    CHECK(p.pid >= 0, "fork");
    if (p.pid == 0) {
        dup2(to[0], 0);
        dup2(from[1], 1);
        close(to[1]);
        close(from[0]);
        execl("/proc/self/exe", "test_node", "member", name, home, "0-1", (char *)NULL);
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    p.in = fdopen(to[1], "w");
    p.out = fdopen(from[0], "r");
    char line[512];
    CHECK(fgets(line, sizeof line, p.out) != NULL && strcmp(line, "ready\n") == 0,
          "member %s joins the node: %s", name, line);
    return p;
}

/* Sends a command and returns the member's one-line answer. */
static const char *ask(struct proc *p, const char *cmd)
{
    static char line[256];
    fprintf(p->in, "%s\n", cmd);
    fflush(p->in);
    CHECK(fgets(line, sizeof line, p->out) != NULL, "member %d answers '%s'", (int)p->pid, cmd);
    line[strcspn(line, "\n")] = '\0';
    return line;
}

static void waited(struct proc *p, int count, const char *what)
{
    char cmd[16];
    snprintf(cmd, sizeof cmd, "wait %d", count);
    const char *r = ask(p, cmd);
    CHECK(strncmp(r, "ok ", 3) == 0, "%s within a second: %s", what, r);
}

static void two_processes(void)
{
    struct proc a = spawn("a", "0"), b = spawn("b", "1");
    CHECK_STR("0 1 3", ask(&a, "state"), "a: idle at home, OpenBLAS at 1 thread, its main thread free");

    /* b busy, a idle: b borrows CPU 0 of the other process. */
    CHECK_STR("0-1 2 3", ask(&b, "enter"), "b borrows a's CPU before its enter returns");
    CHECK_STR("0-1 2 3", ask(&b, "state"), "b: both CPUs, OpenBLAS at 2 threads, on both");
    CHECK_STR("right", ask(&b, "gemm"), "b's product while grown");

    /* a enters: its CPU is free when its enter returns, b shrinks. */
    double t0 = now_us();
    CHECK_STR("0 1 1", ask(&a, "enter"), "a runs on its home at once");
    waited(&b, 1, "b gives CPU 0 back");
    double us = now_us() - t0;
    CHECK_STR("1 1 2", ask(&b, "state"), "b: CPU 1 only, OpenBLAS at 1 thread");
    CHECK_STR("0 1 1", ask(&a, "state"), "a keeps its home: the node is not oversubscribed");
    CHECK_STR("right", ask(&b, "gemm"), "b's product while shrunk");
    printf("  reclaim across processes: the borrower had shrunk %.0f us after the owner was told to "
           "enter (two pipe round trips included)\n", us);

    CHECK_STR("left", ask(&a, "leave"), "a leaves");
    waited(&b, 2, "b borrows again");

    /* a busy, then killed: its CPU returns to b although it never left. */
    CHECK_STR("0 1 1", ask(&a, "enter"), "a enters again");
    waited(&b, 1, "b shrinks");
    t0 = now_us();
    kill(a.pid, SIGKILL);
    /* Not reaped yet: a zombie holds no CPUs. */
    waited(&b, 2, "a's CPU comes back after SIGKILL (zombie)");
    printf("  SIGKILL: the borrower had the killed member's CPU %.0f ms later\n",
           (now_us() - t0) / 1e3);
    int st;
    CHECK_EQ(a.pid, waitpid(a.pid, &st, 0), "reap");
    CHECK(WIFSIGNALED(st), "killed");
    fclose(a.in);
    fclose(a.out);

    /* A new member joins; it exits while busy: its CPU comes back too. */
    struct proc a2 = spawn("a2", "0");
    CHECK_STR("0 1 3", ask(&a2, "state"), "a2 idle at home");
    CHECK_STR("0-1 2 3", ask(&b, "state"), "b still borrows from an idle member");
    CHECK_STR("0 1 1", ask(&a2, "enter"), "a2 enters");
    waited(&b, 1, "b shrinks for a2");
    CHECK_STR("bye", ask(&a2, "quit"), "a2 exits inside its context");
    waited(&b, 2, "a2's CPU comes back at its exit");
    CHECK_EQ(a2.pid, waitpid(a2.pid, &st, 0), "reap");
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a2 exited cleanly");

    /* A member that execs another program while busy is no member. */
    struct proc a3 = spawn("a3", "0");
    CHECK_STR("0 1 1", ask(&a3, "enter"), "a3 enters");
    waited(&b, 1, "b shrinks for a3");
    fprintf(a3.in, "exec\n");
    fflush(a3.in);
    waited(&b, 2, "a3's CPU comes back once it runs another program (same pid, alive)");
    CHECK_EQ(0, kill(a3.pid, 0), "a3's pid still runs: sleep");
    kill(a3.pid, SIGKILL);
    CHECK_EQ(a3.pid, waitpid(a3.pid, &st, 0), "reap");
    fclose(a3.in);
    fclose(a3.out);

    CHECK_STR("left", ask(&b, "leave"), "b leaves");
    CHECK_STR("1 1 3", ask(&b, "state"), "idle: home");
    fclose(b.in); /* end of input: the member returns */
    CHECK_EQ(b.pid, waitpid(b.pid, &st, 0), "reap");
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "b exited cleanly");
    fclose(b.out);
}

static void bad_input(const char *dir)
{
    vlcs_opts o = {.size = sizeof o, .node = 1};
    setenv("VLCS_NODE_LEDGER", "/nonexistent-vlcs-dir/ledger", 1);
    CHECK_ERRC(VLCS_E_SYSTEM, vlcs_init_opts(&o));
    CHECK(strstr(vlcs_error(), "cannot open the node ledger /nonexistent-vlcs-dir/ledger") &&
              strstr(vlcs_error(), "/dev/shm") && strstr(vlcs_error(), "within this process"),
          "%s", vlcs_error());
    CHECK(vlcs_node_ledger() == NULL, "not a member");

    char path[512];
    snprintf(path, sizeof path, "%s/not-a-ledger", dir);
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
    CHECK(fd >= 0 && write(fd, "not a ledger\n", 13) == 13, "write");
    close(fd);
    setenv("VLCS_NODE_LEDGER", path, 1);
    CHECK_ERRC(VLCS_E_INVALID, vlcs_init_opts(&o));
    CHECK(strstr(vlcs_error(), "another build of vlcs") != NULL, "%s", vlcs_error());
    unlink(path);

    /* Lending within the process goes on. */
    vlcs_ctx *x = vlcs_ctx_create("x"), *y = vlcs_ctx_create("y");
    CHECK_EQ(0, vlcs_ctx_set_cpus(x, "0"), "set");
    CHECK_EQ(0, vlcs_ctx_set_cpus(y, "1"), "set");
    CHECK_EQ(0, vlcs_ctx_set_elastic(x, "0-1", 0), "elastic");
    CHECK_EQ(0, vlcs_ctx_set_elastic(y, "0-1", 0), "elastic");
    char cur[64];
    CHECK_EQ(0, vlcs_enter(y), "enter");
    CHECK(vlcs_ctx_get_cpuset(y, VLCS_CPUSET_CURRENT, cur, sizeof cur) >= 0, "cpus");
    CHECK_STR("0-1", cur, "in-process lending still works");
    CHECK_EQ(0, vlcs_leave(), "leave");

    /* A forked child of a member is none. */
    snprintf(path, sizeof path, "%s/ledger-fork", dir);
    setenv("VLCS_NODE_LEDGER", path, 1);
    CHECK_EQ(0, vlcs_init_opts(&o), "joins after the failures");
    CHECK_STR(path, vlcs_node_ledger(), "the ledger in use");
    CHECK_EQ(0, vlcs_enter(y), "enter");
    CHECK(vlcs_ctx_get_cpuset(y, VLCS_CPUSET_CURRENT, cur, sizeof cur) >= 0, "cpus");
    CHECK_STR("0-1", cur, "this process's own contexts lend through the ledger");
    CHECK(vlcs_ctx_get_cpuset(x, VLCS_CPUSET_LENT, cur, sizeof cur) >= 0, "cpus");
    CHECK_STR("0", cur, "x lends CPU 0");
    CHECK_EQ(0, vlcs_leave(), "leave");
    pid_t kid = fork();
    if (kid == 0) {
        int rc = vlcs_init_opts(&o);
        _exit(rc != 0 && vlcs_errcode() == VLCS_E_UNSUPPORTED && vlcs_node_ledger() == NULL &&
                      strstr(vlcs_error(), "forked child") != NULL
                  ? 0
                  : 1);
    }
    int st;
    CHECK_EQ(kid, waitpid(kid, &st, 0), "wait");
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a forked child is refused, with a clear error");
    CHECK(vlcs_ctx_destroy(x) >= 0 && vlcs_ctx_destroy(y) >= 0, "destroy: %s", vlcs_error());
    unlink(path);
}

static char dir[256], ledger[300];
static pid_t driver;

/* Also on a failed check (exit(1)): no ledger is left in /dev/shm. */
static void clean(void)
{
    if (getpid() != driver)
        return;
    unlink(ledger);
    char path[512];
    snprintf(path, sizeof path, "%s/not-a-ledger", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/ledger-fork", dir);
    unlink(path);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "member") == 0)
        return member(argv[2], argv[3], argv[4]);
    if (get_nprocs() < 2) {
        printf("SKIP: needs 2 CPUs\n");
        return 77;
    }
    driver = getpid();
    snprintf(dir, sizeof dir, "/dev/shm/vlcs-test-node-%d", (int)getpid());
    CHECK(mkdir(dir, 0700) == 0, "mkdir %s", dir);
    atexit(clean);
    snprintf(ledger, sizeof ledger, "%s/ledger", dir);
    setenv("VLCS_NODE_LEDGER", ledger, 1); /* the members' */
    two_processes();
    bad_input(dir);
    PASS("node");
    return 0;
}

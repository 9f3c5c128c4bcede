/* Strict mode: raw syscalls made by code in a context see the context's
 * CPUs; without strict mode they see the machine (which is why the mode
 * exists); syscalls from code outside contexts are untouched.  Filters cannot be removed, so the two halves run in separate
 * processes: `test_strict --plain` and `test_strict`. */
#define _GNU_SOURCE
#include "check.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <unistd.h>

typedef int (*int_fn)(void);
typedef int (*set_fn)(int);
typedef int (*online_fn)(char *, int);

static volatile sig_atomic_t app_sigsys;
static void app_handler(int sig) { app_sigsys = sig; }

struct hammer {
    int_fn cpuinfo;
    int expect;
    int bad;
};
static void *hammer(void *p)
{
    struct hammer *h = p;
    for (int i = 0; i < 500; i++)
        if (h->cpuinfo() != h->expect)
            h->bad++;
    return NULL;
}

int main(int argc, char **argv)
{
    int ncpu = get_nprocs();
    if (ncpu < 2) {
        printf("SKIP: needs 2 CPUs\n");
        return 77;
    }
    int plain = argc > 1 && strcmp(argv[1], "--plain") == 0;
    if (plain)
        unsetenv("VLCS_STRICT"); /* vlcs reads it at its first call */
    /* An application's own SIGSYS handler, installed before vlcs's. */
    signal(SIGSYS, app_handler);
    if (!plain) {
        vlcs_opts o = {.size = sizeof o, .strict = 1};
        CHECK_EQ(0, vlcs_init_opts(&o), "enable strict mode");
        CHECK_EQ(1, vlcs_strict_active(), "strict mode is on");
        CHECK_EQ(0, vlcs_init_opts(&o), "enabling twice is fine");
    }
    vlcs_ctx *c = vlcs_ctx_create("strict");
    CHECK_EQ(0, vlcs_ctx_set_cpus(c, "1"), "set");
    void *lib = must_load(c, RAWSYS_LIB);
    void *base = dlopen(RAWSYS_LIB, RTLD_NOW);
    CHECK(base != NULL, "%s", dlerror());
    int expect = plain ? ncpu : 1;
    const char *why = plain ? "without strict mode raw syscalls see the machine"
                            : "strict mode gives raw syscalls the context's view";
    /* libc's syscall() is the symbol layer's: the context's view either way */
    CHECK_EQ(1, SYM(lib, int_fn, "raw_affinity_count")(), "syscall(SYS_sched_getaffinity)");
    CHECK_EQ(expect, SYM(lib, int_fn, "inline_affinity_count")(), why);
    CHECK_EQ(expect, SYM(lib, int_fn, "raw_cpuinfo_count")(), why);
    char online[64];
    CHECK_EQ(0, SYM(lib, online_fn, "raw_cpu_online")(online, sizeof online), "read online");
    CHECK_STR(plain ? (ncpu == 2 ? "0-1" : online) : "1", online, why);
    /* Context code that saves, probes and restores the mask of a thread of
     * the base (a library starting on the thread that loads it) leaves the
     * thread's mask as it was, through libc's wrappers and syscall(2). */
    for (int how = 0; how < 2; how++) {
        cpu_set_t before, after;
        CHECK_EQ(0, sched_getaffinity(0, sizeof before, &before), "mask before");
        CHECK_EQ(0, SYM(lib, set_fn, "probe_and_restore")(how), "probed and restored");
        CHECK_EQ(0, sched_getaffinity(0, sizeof after, &after), "mask after");
        CHECK(CPU_EQUAL(&before, &after), "the base thread's mask is the base's again (%s)",
              how ? "syscall" : "libc");
    }
    if (plain) {
        CHECK_EQ(EINVAL, SYM(lib, set_fn, "raw_setaffinity")(0),
                 "syscall(SYS_sched_setaffinity) outside the context's CPUs: EINVAL");
        PASS("plain: raw syscalls bypass the symbol layer");
        return 0;
    }

    /* Code outside contexts is never trapped: the real answers. */
    CHECK_EQ(ncpu, ((int_fn)dlsym(base, "raw_affinity_count"))(), "base code");
    CHECK_EQ(ncpu, ((int_fn)dlsym(base, "raw_cpuinfo_count"))(), "base code");
    /* A thread inside the context runs on its CPUs for real. */
    CHECK_EQ(0, vlcs_enter(c), "enter");
    CHECK_EQ(1, ((int_fn)dlsym(base, "raw_affinity_count"))(), "entered thread");
    CHECK_EQ(ncpu, ((int_fn)dlsym(base, "raw_cpuinfo_count"))(), "base code reads the real file");
    CHECK_EQ(EINVAL, SYM(lib, set_fn, "raw_setaffinity")(0),
             "raw setaffinity outside the set: EINVAL as the kernel would");
    CHECK_EQ(0, SYM(lib, set_fn, "raw_setaffinity")(1), "inside the set");
    CHECK_EQ(0, vlcs_leave(), "leave");
    CHECK_EQ(ncpu, ((int_fn)dlsym(base, "raw_affinity_count"))(), "left: real again");

    /* Ordinary opens still behave exactly like the kernel. */
    char path[] = "/tmp/vlcs-strict-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    CHECK_EQ(5, write(fd, "hello", 5), "write");
    close(fd);
    fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY);
    char buf[8] = {0};
    CHECK(fd >= 0 && read(fd, buf, 5) == 5 && strcmp(buf, "hello") == 0, "openat a real file");
    close(fd);
    struct { unsigned long long flags, mode, resolve; } how = {O_RDONLY, 0, 0};
    fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
    CHECK(fd >= 0 || errno == ENOSYS, "openat2 a real file: %s", strerror(errno));
    if (fd >= 0)
        close(fd);
    unlink(path);
    CHECK_EQ(-1, open(path, O_RDONLY), "open a missing file");
    CHECK_EQ(ENOENT, errno, "ENOENT");
    CHECK_EQ(-1, syscall(SYS_open, (const char *)8, O_RDONLY), "bad pointer");
    CHECK_EQ(EFAULT, errno, "EFAULT, not a crash");

    /* Reentrant across threads: inside and outside at once. */
    pthread_t t[4];
    struct hammer h[4];
    for (int i = 0; i < 4; i++) {
        h[i] = (struct hammer){i % 2 ? SYM(lib, int_fn, "raw_cpuinfo_count")
                                     : (int_fn)dlsym(base, "raw_cpuinfo_count"),
                               i % 2 ? 1 : ncpu, 0};
        pthread_create(&t[i], NULL, hammer, &h[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        CHECK_EQ(0, h[i].bad, "every concurrent answer right");
    }

    /* Programs started from here inherit the filters but not the handler;
     * their code is not context code, so nothing of theirs traps. */
    CHECK_EQ(0, system("cat /proc/cpuinfo /sys/devices/system/cpu/online > /dev/null"),
             "a child program runs normally");

    /* SIGSYS that is not vlcs's reaches the application's handler. */
    raise(SIGSYS);
    CHECK_EQ(SIGSYS, app_sigsys, "the application's earlier SIGSYS handler still runs");
    PASS("strict");
    return 0;
}

/* test_exec.c - an unmodified program run many times inside one process
 * (vlcs_ctx_exec): 8 instances at once, each in its own context, with its
 * own globals, CPU, environment, getopt, OpenMP team and exit status, built
 * with GCC's OpenMP runtime and again with LLVM's; runs again in one
 * context; refusals that leave the process as it was. */
#include <elf.h>
#include <fcntl.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

#define N 8

struct instance {
    const char *prog;
    vlcs_ctx *ctx;
    int out[2];
    int status;
    char rounds[16];
};

static void *run(void *arg)
{
    struct instance *in = arg;
    char *argv[] = {(char *)in->prog, "-r", in->rounds, "-t", "tagged", "rest", NULL};
    in->status = vlcs_ctx_exec(in->ctx, argv);
    return NULL;
}

/* Everything written to the read end of p until every writer closed it. */
static void read_all(int fd, char *buf, size_t size)
{
    size_t n = 0;
    ssize_t r;
    while (n + 1 < size && (r = read(fd, buf + n, size - 1 - n)) > 0)
        n += (size_t)r;
    buf[n] = '\0';
}

/* LLVM's runtime (libomp, exec_prog linked with it) looks names up with
 * dlsym(RTLD_DEFAULT) as it starts, which left each instance's thread
 * marked as looking up (src/gscope.h): the instances' ends, each unloading
 * its program, waited for each other for ever. */
static void eight_at_once(const char *prog)
{
    struct instance in[N];
    pthread_t t[N];
    for (int i = 0; i < N; i++) {
        in[i].prog = prog;
        char name[32], value[8];
        snprintf(name, sizeof name, "instance-%d", i);
        snprintf(value, sizeof value, "%d", i);
        snprintf(in[i].rounds, sizeof in[i].rounds, "%d", 10 + i);
        CHECK((in[i].ctx = vlcs_ctx_create(name)) != NULL, "create %d", i);
        CHECK(vlcs_ctx_set_cpus(in[i].ctx, i % 2 ? "1" : "0") == 0, "cpus");
        CHECK(vlcs_ctx_setenv(in[i].ctx, "VLCS_INSTANCE", value) == 0, "setenv");
        CHECK(pipe(in[i].out) == 0, "pipe");
        CHECK(vlcs_ctx_set_stdio(in[i].ctx, -1, in[i].out[1], -1) == 0, "set_stdio");
    }
    for (int i = 0; i < N; i++)
        CHECK(pthread_create(&t[i], NULL, run, &in[i]) == 0, "thread");
    for (int i = 0; i < N; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < N; i++) {
        CHECK_EQ(3, in[i].status, "exit(3) ends the instance with its status");
        CHECK(vlcs_ctx_destroy(in[i].ctx) >= 0, "destroy"); /* strict mode keeps it */
        close(in[i].out[1]);
        char got[1024], want[1024];
        read_all(in[i].out[0], got, sizeof got);
        close(in[i].out[0]);
        /* its own counter (10 + i rounds from a fresh 0), getopt run
         * afresh, its setenv in its environ, one CPU: an OpenMP team of 1 */
        snprintf(want, sizeof want,
                 "instance=%d counter=%d tag=tagged optind=5 rest=rest env_seen=1 getenv=yes "
                 "procs=1 team=1\n",
                 i, 10 + i);
        CHECK_STR(want, got, "the instance's whole output, on its own stdout");
    }
    /* the base: its environment and getopt are its own */
    CHECK(getenv("PROG_SET") == NULL, "an instance's setenv reached the base");
    CHECK(getenv("VLCS_INSTANCE") == NULL, "a context's variable reached the base");
    CHECK_EQ(1, optind, "the base's optind moved");
}

/* Each run a fresh copy of the program, in either mode: in copy mode the
 * second run was given the first's copy, its counter going on from 2. */
static void again_in_one_context(int mode)
{
    vlcs_ctx *c = vlcs_ctx_create(mode == VLCS_MODE_COPIES ? "again-copies" : "again");
    CHECK(c != NULL, "create");
    CHECK(vlcs_ctx_set_mode(c, mode) == 0, "set_mode %d", mode);
    int out[2];
    CHECK(pipe(out) == 0, "pipe");
    CHECK(vlcs_ctx_set_stdio(c, -1, out[1], -1) == 0, "set_stdio");
    char *first[] = {EXEC_PROG, "-r", "2", NULL};
    char *second[] = {EXEC_PROG, "-t", "two", "-r", "5", "x", NULL};
    CHECK_EQ(3, vlcs_ctx_exec(c, first), "first run");
    CHECK_EQ(3, vlcs_ctx_exec(c, second), "second run");
    CHECK(vlcs_ctx_set_stdio(c, -1, out[1], -1) != 0, "streams set after the first load");
    CHECK(vlcs_ctx_destroy(c) >= 0, "destroy");
    close(out[1]);
    char got[2048];
    read_all(out[0], got, sizeof got);
    close(out[0]);
    /* a fresh copy each run: its counter from 0, getopt from the start */
    CHECK(strstr(got, "counter=2 tag=none optind=3 rest=-") != NULL, "first: %s", got);
    CHECK(strstr(got, "counter=5 tag=two optind=5 rest=x") != NULL, "second: %s", got);
}

/* A program closing its descriptors 0 and 1 closes them for itself: the
 * descriptors behind them close once, with its streams, and never under a
 * number the program or another thread opened since. */
static void closing_its_descriptors(void)
{
    vlcs_ctx *c = vlcs_ctx_create("closer");
    CHECK(c != NULL, "create");
    int in[2], out[2];
    CHECK(pipe(in) == 0 && pipe(out) == 0, "pipes");
    CHECK(vlcs_ctx_set_stdio(c, in[0], out[1], -1) == 0, "set_stdio");
    char report[] = "/tmp/vlcs-closer-XXXXXX";
    int r = mkstemp(report);
    CHECK(r >= 0, "mkstemp");
    close(r);
    char *argv[] = {EXEC_CLOSER, "close", report, NULL};
    CHECK_EQ(0, vlcs_ctx_exec(c, argv), "run");
    char got[256] = "";
    FILE *f = fopen(report, "r");
    CHECK(f != NULL && fgets(got, sizeof got, f) != NULL, "its report");
    fclose(f);
    unlink(report);
    int fd = -1;
    CHECK(sscanf(got, "fd=%d", &fd) == 1, "report: %s", got);
    CHECK(strstr(got, "close0=0 close1=0 again=-1/EBADF read=-1/EBADF") != NULL,
          "close, close again and read as in a process of its own: %s", got);
    (void)fd; /* the program's own descriptor: its thread's, closed when it ended */
    /* the descriptors the context was given are the caller's still */
    CHECK(fcntl(in[0], F_GETFD) >= 0 && fcntl(out[1], F_GETFD) >= 0, "given descriptors closed");
    CHECK(vlcs_ctx_destroy(c) >= 0, "destroy");
    close(in[0]);
    close(in[1]);
    close(out[0]);
    close(out[1]);
}

/* exit() in an atexit handler ends the instance with that status and the
 * other handlers run, as in exit(); _exit() ends it at once.  The process
 * goes on either way. */
static void exits_in_handlers(void)
{
    static const struct {
        const char *mode;
        int status;
        const char *out;
    } cases[] = {
        {"exit", 4, "second handler ran after exit\n"},
        {"_exit", 6, ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        vlcs_ctx *c = vlcs_ctx_create("handlers");
        CHECK(c != NULL, "create");
        int out[2];
        CHECK(pipe(out) == 0, "pipe");
        CHECK(vlcs_ctx_set_stdio(c, -1, out[1], -1) == 0, "set_stdio");
        char *argv[] = {EXEC_CLOSER, (char *)cases[i].mode, NULL};
        CHECK_EQ(cases[i].status, vlcs_ctx_exec(c, argv), cases[i].mode);
        CHECK(vlcs_ctx_destroy(c) >= 0, "destroy");
        close(out[1]);
        char got[256];
        read_all(out[0], got, sizeof got);
        close(out[0]);
        CHECK_STR(cases[i].out, got, cases[i].mode);
    }
}

/* A copy of EXEC_PROG at path, changed by change (NULL: as is). */
static void copy_program(const char *path, void (*change)(unsigned char *, size_t))
{
    FILE *in = fopen(EXEC_PROG, "rb");
    CHECK(in != NULL, "open %s", EXEC_PROG);
    static unsigned char buf[4 << 20];
    size_t n = fread(buf, 1, sizeof buf, in);
    fclose(in);
    if (change)
        change(buf, n);
    FILE *out = fopen(path, "wb");
    CHECK(out != NULL && fwrite(buf, 1, n, out) == n && fclose(out) == 0, "write %s", path);
}

static void other_machine(unsigned char *elf, size_t n)
{
    (void)n;
    Elf64_Half m = EM_AARCH64;
    memcpy(elf + offsetof(Elf64_Ehdr, e_machine), &m, sizeof m);
}

static void refusals(void)
{
    vlcs_ctx *c = vlcs_ctx_create("refusals");
    CHECK(c != NULL, "create");
    char dir[] = "/tmp/vlcs-exec-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char setuid_prog[64], arm_prog[64], script[64];
    snprintf(setuid_prog, sizeof setuid_prog, "%s/setuid", dir);
    snprintf(arm_prog, sizeof arm_prog, "%s/arm", dir);
    snprintf(script, sizeof script, "%s/script", dir);
    copy_program(setuid_prog, NULL);
    CHECK(chmod(setuid_prog, 04755) == 0, "chmod");
    copy_program(arm_prog, other_machine);
    chmod(arm_prog, 0755);
    FILE *f = fopen(script, "w");
    CHECK(f != NULL, "script");
    fputs("#!/bin/sh\necho hi\n", f);
    fclose(f);
    chmod(script, 0755);

    struct {
        const char *path, *needle;
        int code;
    } cases[] = {
        {EXEC_STATIC, "statically linked", VLCS_E_UNSUPPORTED},
        {EXEC_NOPIE, "not position-independent", VLCS_E_UNSUPPORTED},
        {EXEC_EXECSTACK, "executable stack", VLCS_E_UNSUPPORTED},
        {setuid_prog, "setuid", VLCS_E_UNSUPPORTED},
        {arm_prog, "another architecture", VLCS_E_UNSUPPORTED},
        {script, "not an ELF program", VLCS_E_INVALID},
        {"/nonexistent/prog", "No such file", VLCS_E_NOT_FOUND},
        {"vlcs-no-such-program", "no such program on PATH", VLCS_E_NOT_FOUND},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *argv[] = {(char *)cases[i].path, NULL};
        CHECK_ERR(vlcs_ctx_exec(c, argv), cases[i].needle);
        CHECK_CODE(cases[i].code, cases[i].path);
    }
    char *empty[] = {NULL};
    CHECK_ERRC(VLCS_E_INVALID, vlcs_ctx_exec(c, empty));
    CHECK_ERRC(VLCS_E_INVALID, vlcs_ctx_set_stdio(c, -1, 12345, -1));
    /* nothing was loaded: the context runs a program as if new */
    char *ok[] = {EXEC_PROG, "-r", "1", NULL};
    CHECK_EQ(3, vlcs_ctx_exec(c, ok), "a program after the refusals");
    CHECK(vlcs_ctx_destroy(c) >= 0, "destroy");
    unlink(setuid_prog);
    unlink(arm_prog);
    unlink(script);
    rmdir(dir);
}

int main(void)
{
    eight_at_once(EXEC_PROG);
    again_in_one_context(VLCS_MODE_NAMESPACE);
    again_in_one_context(VLCS_MODE_COPIES);
    closing_its_descriptors();
    exits_in_handlers();
    refusals();
    eight_at_once(EXEC_PROG_LIBOMP);
    puts("test_exec: ok");
    return 0;
}

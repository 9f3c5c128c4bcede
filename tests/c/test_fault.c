/* A fault in a context's code, run through vlcs_ctx_call, ends that call and
 * breaks that context; the process, the other contexts and the base go on.
 * What cannot be contained still ends the process, as without vlcs, with a
 * line saying why (each such case in a child process). */
#define _GNU_SOURCE
#include "check.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_THREAD__)
#define SANITIZER_EXIT 66
#else
#define SANITIZER_EXIT 1
#endif

typedef void *(*task_fn)(void *);

static task_fn task(void *lib, const char *name)
{
    task_fn f = (task_fn)vlcs_ctx_sym(lib, name);
    CHECK(f != NULL, "no %s", name);
    return f;
}

static vlcs_ctx *make(const char *name, int mode, void **lib)
{
    vlcs_ctx *c = vlcs_ctx_create(name);
    CHECK(c != NULL, "create %s", name);
    if (mode)
        CHECK_EQ(0, vlcs_ctx_set_mode(c, mode), "set_mode");
    CHECK_EQ(0, vlcs_ctx_set_cpus(c, "0"), "cpus");
    *lib = vlcs_ctx_load(c, CRASH_LIB);
    CHECK(*lib != NULL, "load into %s", name);
    return c;
}

/* The base's own copy of the library answers as it did before any fault. */
static void base_intact(void)
{
    void *h = dlopen(CRASH_LIB, RTLD_NOW);
    CHECK(h != NULL, "dlopen in the base: %s", dlerror());
    int before = ((int (*)(void))dlsym(h, "crash_calls"))();
    CHECK_EQ(42, (long)((task_fn)dlsym(h, "crash_ok"))((void *)21), "the base's copy computes");
    CHECK_EQ(before + 1, ((int (*)(void))dlsym(h, "crash_calls"))(), "the base's own counter");
    dlclose(h);
    CHECK(vlcs_current() == NULL, "the thread is back in the base");
}

/* fn faults inside c: contained, named, and c is broken for good. */
static void faults(vlcs_ctx *c, void *lib, const char *fn, void *arg, const char *sig,
                   const char *meaning)
{
    void *result = (void *)-1;
    CHECK_EQ(-1, vlcs_ctx_call(c, task(lib, fn), arg, &result), fn);
    CHECK_EQ(VLCS_E_FAULT, vlcs_errcode(), vlcs_error());
    CHECK(strstr(vlcs_error(), sig) && strstr(vlcs_error(), meaning), "%s: %s", fn, vlcs_error());
    CHECK(result == (void *)-1, "%s: no result is stored", fn);
    const char *report = vlcs_ctx_fault(c);
    CHECK(report != NULL && strstr(report, "libvlcs_crash") != NULL,
          "%s: the report names the library: %s", fn, report ? report : "(none)");
    CHECK(strstr(report, "\n  #0 ") != NULL, "%s: the report has the stack: %s", fn, report);
    CHECK(vlcs_current() == NULL, "%s: the thread left the context", fn);
    CHECK_ERR(vlcs_enter(c), "broken");
    CHECK_EQ(VLCS_E_FAULT, vlcs_errcode(), "enter refused");
    CHECK_NULL(vlcs_ctx_load(c, PROBE_LIB), "broken");
    CHECK_ERR(vlcs_ctx_call(c, task(lib, "crash_ok"), NULL, NULL), "broken");
    printf("%-18s contained: %.*s\n", fn, (int)strcspn(report, "\n"), report);
    base_intact();
}

struct other {
    vlcs_ctx *c;
    task_fn ok;
    int calls;
    atomic_int stop;
};

/* Another context computing the whole time on another thread. */
static void *keep_computing(void *p)
{
    struct other *o = p;
    while (!o->stop || o->calls < 100) {
        void *r = NULL;
        CHECK_EQ(0, vlcs_ctx_call(o->c, o->ok, (void *)(long)o->calls, &r), "the other context");
        CHECK_EQ(2L * o->calls, (long)r, "the other context's result");
        o->calls++;
    }
    return NULL;
}

/* ---- what ends the process, each in a child -------------------------------- */

/* unmapped; not NULL, which UBSan would report before the fault */
static volatile uintptr_t nowhere = 16;

static void *base_null(void *arg)
{
    (void)arg;
    return (void *)(long)*(volatile int *)nowhere;
}

/* How a child doing `what` ended, and what it wrote to stderr. */
static int child(int what, char *err, size_t size)
{
    int fds[2];
    CHECK_EQ(0, pipe(fds), "pipe");
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        void *lib;
        vlcs_ctx *c = make("child", what == 0 ? VLCS_MODE_COPIES : 0, &lib);
        if (vlcs_ctx_call(c, task(lib, "crash_ok"), NULL, NULL) != 0) /* handlers installed */
            _exit(90);
        if (what == 0) /* in the base's libc: copy mode's copies share it */
            vlcs_ctx_call(c, task(lib, "crash_in_libc"), NULL, NULL);
        else if (what == 1) /* in the base's own code, called inside the context */
            vlcs_ctx_call(c, base_null, NULL, NULL);
        else if (what == 2) { /* the context's code, but not through vlcs_ctx_call */
            vlcs_enter(c);
            task(lib, "crash_null")(NULL);
        } else /* the heap is the process's: glibc's check aborts in the base's libc */
            vlcs_ctx_call(c, task(lib, "crash_double_free"), NULL, NULL);
        _exit(91);
    }
    close(fds[1]);
    size_t n = 0;
    ssize_t r;
    char rest[4096];
    while ((r = n + 1 < size ? read(fds[0], err + n, size - 1 - n) : read(fds[0], rest, sizeof rest)) > 0)
        n += n + 1 < size ? (size_t)r : 0; /* all read: a long report must not meet a closed pipe */
    err[n] = '\0';
    close(fds[0]);
    int st;
    CHECK_EQ(pid, waitpid(pid, &st, 0), "waitpid");
    return st;
}

static void ends_process(void)
{
    static const struct {
        const char *what, *line;
        int sig;
    } cases[] = {
        {"a fault in the base's libc (copy mode)", "vlcs: SIGSEGV in context 'child'", SIGSEGV},
        {"a fault in the base's code", "vlcs: SIGSEGV in context 'child'", SIGSEGV},
        {"a fault outside vlcs_ctx_call", NULL, SIGSEGV},
        {"a double free (the heap is the process's)", "vlcs: SIGABRT in context 'child'", SIGABRT},
    };
    for (int what = 0; what < 4; what++) {
        char err[2048];
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
        /* The sanitizer's handler, the one before vlcs's, reports and
         * exits (ASan 1, TSan 66); its allocator has its own double free
         * checks (TSan's none). */
        if (cases[what].sig == SIGABRT)
            continue;
        int st = child(what, err, sizeof err);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == SANITIZER_EXIT,
              "%s: the child ended with status %#x, saying:\n%s", cases[what].what, st, err);
#else
        int st = child(what, err, sizeof err);
        CHECK(WIFSIGNALED(st) && WTERMSIG(st) == cases[what].sig,
              "%s: the child ended with status %#x, saying:\n%s", cases[what].what, st, err);
#endif
        if (cases[what].line)
            CHECK(strstr(err, cases[what].line) && strstr(err, "cannot be contained"),
                  "%s: stderr says why: %s", cases[what].what, err);
        else
            CHECK(strstr(err, "vlcs:") == NULL, "%s: vlcs says nothing: %s", cases[what].what, err);
        printf("%s ends the process with %s%s\n", cases[what].what, strsignal(cases[what].sig),
               cases[what].line ? ", saying why" : ", as without vlcs");
    }
}

int main(void)
{
    ends_process();

    void *other_lib;
    struct other o = {.c = make("other", 0, &other_lib)};
    o.ok = task(other_lib, "crash_ok");
    pthread_t t;
    CHECK_EQ(0, pthread_create(&t, NULL, keep_computing, &o), "thread");

    static const struct {
        const char *fn, *sig, *meaning;
        void *arg;
        int copies; /* also in copy mode */
    } cases[] = {
        {"crash_null", "SIGSEGV", "address not mapped", NULL, 1},
        {"crash_divide", "SIGFPE", "integer divide by zero", NULL, 1},
        {"crash_abort", "SIGABRT", "abort() was called", NULL, 1},
        {"crash_assert", "SIGABRT", "abort() was called", NULL, 0},
        {"crash_in_libc", "SIGSEGV", "address not mapped", NULL, 0},
        {"crash_overflow", "SIGSEGV", "SIGSEGV", NULL, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
#if defined(__SANITIZE_THREAD__)
        /* ThreadSanitizer's signal interception does not hand a SIGFPE to
         * the handler in place (the process ends, as with no handler), and
         * a SIGABRT sent by raise() is delivered late, from its own frames,
         * which a jump out of the handler leaves in a state in which it
         * delivers no later signal */
        if (strcmp(cases[i].sig, "SIGFPE") == 0 || strcmp(cases[i].fn, "crash_assert") == 0)
            continue;
#endif
        for (int copies = 0; copies <= cases[i].copies; copies++) {
            void *lib;
            vlcs_ctx *c = make(cases[i].fn, copies ? VLCS_MODE_COPIES : 0, &lib);
            printf("%s: ", copies ? "copies  " : "namespace");
            faults(c, lib, cases[i].fn, cases[i].arg, cases[i].sig, cases[i].meaning);
            CHECK_EQ(1, vlcs_ctx_destroy(c), "a broken context is destroyed, its memory kept");
            CHECK(strstr(vlcs_error(), "loaded: a fault broke it") != NULL, "%s", vlcs_error());
        }
    }

    /* A library's own handler for its own faults is left alone. */
    void *lib;
    vlcs_ctx *c = make("handles", 0, &lib);
    void *handled = NULL;
    CHECK_EQ(0, vlcs_ctx_call(c, task(lib, "crash_handled_by_itself"), NULL, &handled),
             "a fault the library handles itself");
    CHECK_EQ(1, (long)handled, "its handler ran and the access was retried");
    int rc = vlcs_ctx_destroy(c); /* strict mode keeps every namespace */
    CHECK(rc == 0 || (rc == 1 && vlcs_strict_active()), "destroyed as usual: %d", rc);

    /* Fault after fault: each costs its context and nothing else. */
    for (int i = 0; i < 100; i++) {
        c = make("again", VLCS_MODE_COPIES, &lib);
        CHECK_EQ(-1, vlcs_ctx_call(c, task(lib, "crash_null"), NULL, NULL), "fault again");
        CHECK_EQ(VLCS_E_FAULT, vlcs_errcode(), vlcs_error());
        CHECK_EQ(1, vlcs_ctx_destroy(c), "kept");
    }
    printf("100 faults in a row in copy mode: each contained\n");

    o.stop = 1;
    CHECK_EQ(0, pthread_join(t, NULL), "join");
    printf("the other context computed %d times meanwhile, every result right\n", o.calls);
    int (*counted)(void) = (int (*)(void))vlcs_ctx_sym(other_lib, "crash_calls");
    CHECK_EQ(0, vlcs_enter(o.c), "enter the other context");
    CHECK_EQ(o.calls, counted(), "its copy counted its calls, and only those");
    vlcs_leave();
    base_intact();
    rc = vlcs_ctx_destroy(o.c);
    CHECK(rc == 0 || (rc == 1 && vlcs_strict_active()), "the other context is destroyed as usual");
    printf("OK\n");
    return 0;
}

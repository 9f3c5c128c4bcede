/* A library in a context that ends the process (exit, quick_exit, _exit,
 * _Exit, abort) ends it as the same library dlopen'ed by the base would:
 * the base's buffered output flushed, its atexit (or at_quick_exit) handlers
 * run once, the same status.  Each case runs in a child whose output goes
 * to a pipe (fully buffered, as when output is redirected to a file). */
#define _GNU_SOURCE
#include "check.h"

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

typedef void (*end_fn)(int, int);

static void on_exit_handler(void) { (void)!write(1, "base-atexit\n", 12); }
static void on_quick_exit_handler(void) { (void)!write(1, "base-quick-exit\n", 16); }

/* What the child printed and how it ended, with the library loaded into a
 * context (in_context) or dlopen'ed by the base. */
static void run(int how, int in_context, char *out, size_t size, int *wstatus)
{
    int fds[2];
    CHECK_EQ(0, pipe(fds), "pipe");
    fflush(NULL); /* the child must not inherit our buffered lines */
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        atexit(on_exit_handler);
        at_quick_exit(on_quick_exit_handler);
        printf("base-buffered\n");
        void *h;
        if (in_context) {
            vlcs_ctx *c = vlcs_ctx_create("ends");
            h = c ? vlcs_ctx_load(c, PROBE_LIB) : NULL;
        } else {
            h = dlopen(PROBE_LIB, RTLD_NOW);
        }
        if (h == NULL)
            _exit(99);
        ((end_fn)dlsym(h, "probe_end_process"))(how, 3);
        _exit(98); /* not reached */
    }
    close(fds[1]);
    size_t n = 0;
    ssize_t r;
    while (n + 1 < size && (r = read(fds[0], out + n, size - 1 - n)) > 0)
        n += (size_t)r;
    out[n] = '\0';
    close(fds[0]);
    CHECK_EQ(pid, waitpid(pid, wstatus, 0), "waitpid");
}

int main(void)
{
#if defined(__SANITIZE_THREAD__)
    /* TSan's _exit interceptor flushes stdio, so its _exit and glibc's
     * _Exit (not intercepted) differ in the base itself. */
    printf("SKIP: under ThreadSanitizer _exit flushes stdio and _Exit does not\n");
    return 77;
#endif
    static const char *names[] = {"exit", "quick_exit", "_exit", "_Exit", "abort"};
    for (int how = 0; how < 5; how++) {
        char base[512], ctx[512];
        int base_status, ctx_status;
        run(how, 0, base, sizeof base, &base_status);
        run(how, 1, ctx, sizeof ctx, &ctx_status);
        CHECK(ctx_status == base_status, "%s: status %#x in a context, %#x in the base",
              names[how], ctx_status, base_status);
        CHECK(strcmp(ctx, base) == 0, "%s: output in a context:\n%s\nin the base:\n%s", names[how],
              ctx, base);
        printf("%s: status %#x, output %zu bytes, as in the base\n", names[how], ctx_status,
               strlen(ctx));
    }
    /* what the base's exit does, to be sure the comparison means something */
    char out[512];
    int st;
    run(0, 1, out, sizeof out, &st);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 3, "exit(3) in a context: status %#x", st);
    CHECK(strcmp(out, "base-atexit\nbase-buffered\nlibrary-buffered\n") == 0,
          "exit: the base's atexit handler ran once and both buffered lines came out:\n%s", out);
    run(1, 1, out, sizeof out, &st);
    CHECK(strcmp(out, "base-quick-exit\n") == 0, "quick_exit: its handler, no flush:\n%s", out);
    run(4, 1, out, sizeof out, &st);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "abort: SIGABRT, status %#x", st);
    PASS("a context's library ends the process as the base would");
    return 0;
}

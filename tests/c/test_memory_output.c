/* Nothing lost: output printed inside contexts reaches a pipe even without
 * a newline at exit, and memory allocated in one context may be freed in
 * another or in the base (all contexts share the base allocator; run under
 * AddressSanitizer this test would report any cross-heap free). */
#define _GNU_SOURCE
#include "check.h"

#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

typedef void (*print_fn)(const char *);
typedef void *(*malloc_fn)(size_t);
typedef void (*free_fn)(void *);
typedef void *(*realloc_fn)(void *, size_t);
typedef char *(*strdup_fn)(const char *);

static char *run_child(int (*body)(void))
{
    int fds[2];
    CHECK_EQ(0, pipe(fds), "pipe");
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[0]);
        exit(body());
    }
    close(fds[1]);
    static char buf[4096];
    size_t n = 0;
    ssize_t r;
    while ((r = read(fds[0], buf + n, sizeof buf - 1 - n)) > 0)
        n += (size_t)r;
    buf[n] = '\0';
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d, output: %s", status,
          buf);
    return buf;
}

static int print_body(void)
{
    vlcs_ctx *a = vlcs_ctx_create("a"), *b = vlcs_ctx_create("b");
    print_fn pa = SYM(must_load(a, PROBE_LIB), print_fn, "probe_print");
    print_fn pb = SYM(must_load(b, PROBE_LIB), print_fn, "probe_print");
    printf("base1 ");
    pa("from-a ");
    pb("from-b ");
    printf("base2 ");
    pa("a-without-newline");
    return 0; /* exit() with everything still buffered: stdout is a pipe */
}

int main(void)
{
    CHECK_STR("base1 from-a from-b base2 a-without-newline", run_child(print_body),
              "every line arrives, in program order");

    vlcs_ctx *a = vlcs_ctx_create("a"), *b = vlcs_ctx_create("b");
    void *la = must_load(a, PROBE_LIB), *lb = must_load(b, PROBE_LIB);
    malloc_fn ma = SYM(la, malloc_fn, "probe_malloc");
    free_fn fb = SYM(lb, free_fn, "probe_free");
    realloc_fn rb = SYM(lb, realloc_fn, "probe_realloc");
    strdup_fn sa = SYM(la, strdup_fn, "probe_strdup");
    for (int i = 0; i < 10000; i++) {
        char *p = ma(64 + (size_t)i % 512);
        CHECK(p != NULL, "malloc in a");
        memset(p, 'x', 64);
        if (i % 3 == 0) {
            fb(p); /* freed by b's libc */
        } else if (i % 3 == 1) {
            p = rb(p, 4096); /* grown by b */
            CHECK(p != NULL && p[63] == 'x', "realloc in b keeps the content");
            free(p); /* freed by the base */
        } else {
            CHECK(malloc_usable_size(p) >= 64, "the base knows a's block");
            free(p);
        }
    }
    char *s = sa("made by libc in a"); /* libc-internal allocation */
    CHECK_STR("made by libc in a", s, "strdup");
    free(s);
    char *base = malloc(100);
    fb(base); /* base block freed in b */
    PASS("memory and output");
    return 0;
}

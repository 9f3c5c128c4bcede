/* A context's vlcs_ctx_set_stdio streams outlive what binds to them.
 * libstdc++ makes std::cout when it loads, on the context's stdout, and
 * flushes it in its destructor: when it unloads, or at the process's exit
 * where it stays loaded (a namespace that holds it is kept).  Closing the
 * context lets go of the streams' descriptors (the reader sees the end,
 * with what std::cout had buffered) and keeps the streams themselves until
 * nothing holds them: the flush at exit reads no freed memory, which
 * ctest runs this under valgrind to see, and writes nothing onto a
 * descriptor number reused since.  In a namespace and in copy mode. */
#define _GNU_SOURCE
#include "check.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What a C++ program run in a context of `mode` wrote to the context's
 * stdout, read to its end once the context is destroyed. */
static void run_and_close(int mode, const char *shown, int *reused)
{
    int fds[2];
    CHECK_EQ(0, pipe2(fds, O_CLOEXEC), "a pipe");
    vlcs_ctx *c = vlcs_ctx_create(shown);
    CHECK(c != NULL, "create: %s", vlcs_error());
    CHECK_EQ(0, vlcs_ctx_set_mode(c, mode), vlcs_error());
    CHECK_EQ(0, vlcs_ctx_set_stdio(c, -1, fds[1], -1), vlcs_error());
    char *argv[] = {(char *)EXEC_COUT, NULL};
    CHECK_EQ(0, vlcs_ctx_exec(c, argv), vlcs_error());
    int destroyed = vlcs_ctx_destroy(c); /* 1: its namespace stays, libstdc++ with it */
    CHECK(destroyed == 0 || destroyed == 1, "destroy: %s", vlcs_error());
    close(fds[1]);
    char out[256];
    size_t n = 0;
    ssize_t k;
    while (n < sizeof out - 1 && (k = read(fds[0], out + n, sizeof out - 1 - n)) > 0)
        n += (size_t)k;
    out[n] = '\0';
    close(fds[0]);
    CHECK_STR("from std::cout\nunflushed", out, "the reader sees the end, with all of it");
    /* numbers free again, taken by files of the base's */
    *reused = open("/dev/zero", O_RDONLY | O_CLOEXEC);
}

int main(void)
{
    CHECK_EQ(0, vlcs_init(), "init");
    int a = -1, b = -1;
    run_and_close(VLCS_MODE_NAMESPACE, "namespace", &a);
    run_and_close(VLCS_MODE_COPIES, "copies", &b);
    /* the base's memory reused where the streams were */
    for (int i = 0; i < 256; i++)
        memset(malloc(512), 0x5a, 512);
    PASS("the streams of closed contexts outlive std::cout");
    return 0;
}

/* The launcher with a long GLIBC_TUNABLES (8 KiB, over the 4 KiB buffer it
 * once had): the user's tunables are kept whole and the two vlcs needs are
 * appended; the program it starts sees exactly that. */
#define _GNU_SOURCE
#include "check.h"

#include <sys/wait.h>
#include <unistd.h>

#define PIECE "glibc.malloc.tcache_count=7:"
#define PIECES 300 /* 28 * 300 = 8400 bytes */

static char *user_tunables(void)
{
    static char t[sizeof PIECE * PIECES + 64];
    size_t n = 0;
    for (int i = 0; i < PIECES; i++)
        n += (size_t)snprintf(t + n, sizeof t - n, "%s", PIECE);
    snprintf(t + n, sizeof t - n, "glibc.malloc.arena_max=3");
    return t;
}

int main(int argc, char **argv)
{
    const char *user = user_tunables();
    char want[sizeof PIECE * PIECES + 256];
    snprintf(want, sizeof want, "%s:glibc.rtld.nns=16:glibc.rtld.optional_static_tls=65536",
             user);
    if (argc > 1 && strcmp(argv[1], "--child") == 0) {
        const char *got = getenv("GLIBC_TUNABLES");
        CHECK(got != NULL, "the launcher set GLIBC_TUNABLES");
        CHECK_EQ(strlen(want), strlen(got), "the merged value's length");
        CHECK_STR(want, got, "user tunables kept, nns and optional_static_tls appended");
        return 0;
    }
    CHECK(strlen(user) > 8192, "the user's tunables are over 8 KiB");
    CHECK_EQ(0, setenv("GLIBC_TUNABLES", user, 1), "setenv");
    char self[4096]; /* the launcher's /proc/self/exe would be itself */
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    CHECK(len > 0, "readlink /proc/self/exe");
    self[len] = '\0';
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        execl(VLCS_RUN, VLCS_RUN, "--", self, "--child", (char *)NULL);
        _exit(126);
    }
    int status = 0;
    CHECK_EQ(pid, waitpid(pid, &status, 0), "waitpid");
    CHECK(!WIFSIGNALED(status), "vlcs-run or the child died of signal %d",
          WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    CHECK_EQ(0, WEXITSTATUS(status), "the child saw the merged value (its output says if not)");

    /* A user's own nns and optional_static_tls win, and nothing is appended. */
    CHECK_EQ(0, setenv("GLIBC_TUNABLES", "glibc.rtld.nns=8:glibc.rtld.optional_static_tls=4096", 1),
             "setenv");
    int fds[2];
    CHECK_EQ(0, pipe(fds), "pipe");
    pid = fork();
    if (pid == 0) {
        dup2(fds[1], 1);
        execl(VLCS_RUN, VLCS_RUN, "--", "/bin/sh", "-c", "printf %s \"$GLIBC_TUNABLES\"",
              (char *)NULL);
        _exit(126);
    }
    close(fds[1]);
    char out[256] = "";
    ssize_t n = read(fds[0], out, sizeof out - 1);
    out[n > 0 ? n : 0] = '\0';
    waitpid(pid, &status, 0);
    CHECK_STR("glibc.rtld.nns=8:glibc.rtld.optional_static_tls=4096", out, "user values win");
    PASS("vlcs-run with long GLIBC_TUNABLES");
    return 0;
}

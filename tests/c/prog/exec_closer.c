/* A program that closes its standard descriptors and exits from its atexit
 * handlers, as coreutils and other tools do at their end.
 *   exec_closer close FILE   close(0) and close(1), then report what it sees
 *                            in FILE, on a descriptor it leaves open
 *   exec_closer exit         its first handler calls exit(4), the second
 *                            prints and still runs
 *   exec_closer _exit        its first handler calls _exit(6): the second
 *                            never runs */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *mode = "";

static void second(void)
{
    printf("second handler ran after %s\n", mode);
    fflush(stdout);
}

static void first(void)
{
    if (strcmp(mode, "exit") == 0)
        exit(4);
    _exit(6);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    mode = argv[1];
    if (strcmp(mode, "close") == 0 && argc == 3) {
        int in = close(0), out = close(1);
        errno = 0;
        int again = close(1), again_errno = errno;
        char c;
        errno = 0;
        ssize_t r = read(0, &c, 1);
        int read_errno = errno;
        int f = open(argv[2], O_WRONLY | O_APPEND);
        if (f < 0)
            return 3;
        dprintf(f, "fd=%d close0=%d close1=%d again=%d/%s read=%zd/%s\n", f, in, out, again,
                again_errno == EBADF ? "EBADF" : "other", r, read_errno == EBADF ? "EBADF" : "other");
        return 0; /* f stays open, as a program's may: vlcs must not close it */
    }
    atexit(second);
    atexit(first); /* runs first */
    return 0;
}

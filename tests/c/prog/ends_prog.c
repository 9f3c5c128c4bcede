/* Ends a program reaches inside libc, one per instance (VLCS_INSTANCE):
 * tests/python/test_exec_ends.py runs it under vlcs exec and alone. */
#include <err.h>
#include <errno.h>
#include <error.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(void)
{
    const char *at = getenv("VLCS_INSTANCE");
    int i = at ? atoi(at) : 0;
    printf("start %d\n", i);
    fflush(stdout);
    switch (i) {
    case 1:
        error_at_line(2, 0, "in.c", 7, "bad line in instance %d", i);
        break;
    case 2:
        errx(5, "bad input %d", i);
    case 3:
        error(4, ENOENT, "cannot open in.%d", i);
        break;
    case 4:
        abort();
    case 5:
        execlp("sh", "sh", "-c", "echo child of $VLCS_INSTANCE; exit 9", (char *)NULL);
        perror("execlp");
        return 1;
    case 6:
        execl("/nonexistent/program", "program", (char *)NULL);
        perror("execl /nonexistent/program");
        return 3;
    case 7:
        err(6, "cannot read in.%d", i);
    }
    printf("done %d\n", i);
    return 0;
}

/* Faults, one per instance (VLCS_INSTANCE): tests/python/test_exec_ends.py
 * runs it under vlcs exec and alone.  Each prints a line first, flushed, as
 * a program's output before its crash reaches the terminal. */
#undef NDEBUG /* its assert is one of the faults */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

static long deeper(long n)
{
    volatile char pad[512];
    pad[0] = (char)n;
    return deeper(n + 1) + pad[0];
}

int main(void)
{
    const char *at = getenv("VLCS_INSTANCE");
    volatile int i = at ? atoi(at) : 0, zero = 0;
    volatile int *volatile nowhere = NULL;
    printf("start %d\n", i);
    fflush(stdout);
    switch (i) {
    case 1:
        return *nowhere;
    case 2:
        return i / zero;
    case 3:
        assert(i != 3 && "instance 3 fails its assertion");
        break;
    case 4:
        return (int)deeper(i);
    }
    printf("done %d\n", i);
    return 0;
}

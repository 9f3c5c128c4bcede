/* The small library each new context of `vlcs bench create` loads first:
 * it needs libc, as every real library does. */
#include <stdio.h>

int vlcs_bench_tiny(void) { return puts("tiny"); }

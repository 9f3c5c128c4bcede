/* Turns strict mode on, says "ready", then waits in a recognisable function
 * until its standard input closes: a target for gdb in the Python tests. */
#include <stdio.h>
#include <unistd.h>

#include "vlcs.h"

__attribute__((noinline)) static void vlcs_waiting_in_strict_mode(void)
{
    char c;
    while (read(0, &c, 1) > 0)
        ;
}

int main(void)
{
    vlcs_opts o = {.size = sizeof o, .strict = 1};
    if (vlcs_init_opts(&o) != 0) {
        fprintf(stderr, "%s\n", vlcs_error());
        return 1;
    }
    vlcs_ctx *c = vlcs_ctx_create("sleeper");
    vlcs_ctx_set_cpus(c, "0");
    if (vlcs_ctx_load(c, "libc.so.6") == NULL) {
        fprintf(stderr, "%s\n", vlcs_error());
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    vlcs_waiting_in_strict_mode();
    return 0;
}

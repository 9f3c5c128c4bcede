/* A program that prints one line: built static, -no-pie and with an
 * executable stack, each of which vlcs_ctx_exec must refuse. */
#include <stdio.h>

int main(void)
{
    puts("ran");
    return 0;
}

/* arpack_prog.c - the thread-unsafe solver of case 6 as a plain program:
 * linked against Debian's arpack-ng like any user's, no vlcs in it.  It
 * solves the scaled 1-D Laplacian (arpack_solve.h) ROUNDS times and prints
 * whether every solve was right.  `vlcs bench exec` runs N of it in one
 * process (vlcs exec), as N processes, and one after another.
 * Usage: arpack_prog [N [ROUNDS [SCALE]]] */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void dsaupd_(void);
void dseupd_(void);

/* What arpack_solve.h asks for: the two entry points, linked here. */
static void *vlcs_ctx_sym(void *lib, const char *name)
{
    (void)lib;
    return strcmp(name, "dsaupd_") == 0 ? (void *)dsaupd_ : (void *)dseupd_;
}

#include "arpack_solve.h"

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 2000;
    int rounds = argc > 2 ? atoi(argv[2]) : 3;
    double scale = argc > 3 ? atof(argv[3]) : 1.0;
    int right = 0;
    for (int r = 0; r < rounds; r++) {
        struct solve s;
        solve_init(&s, NULL, n, scale);
        solve_run(&s);
        right += solve_correct(&s);
        solve_free(&s);
    }
    printf("solves=%d right=%d\n", rounds, right);
    return right == rounds ? 0 : 1;
}

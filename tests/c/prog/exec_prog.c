/* An unmodified program as users build one (gcc prog.c -fopenmp): getopt,
 * printf, setenv/getenv, environ, a global counter, OpenMP and exit(3).
 * test_exec runs it many times inside one process. */
#include <getopt.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;
static int counter;

int main(int argc, char **argv)
{
    int opt, rounds = 1;
    const char *tag = "none";
    while ((opt = getopt(argc, argv, "r:t:")) != -1) {
        switch (opt) {
        case 'r': rounds = atoi(optarg); break;
        case 't': tag = optarg; break;
        default: fprintf(stderr, "usage: %s [-r N] [-t TAG]\n", argv[0]); return 2;
        }
    }
    for (int i = 0; i < rounds; i++)
        counter++;
    setenv("PROG_SET", "yes", 1);
    int seen = 0;
    for (char **e = environ; *e; e++)
        if (strncmp(*e, "PROG_SET=yes", 12) == 0)
            seen = 1;
    int team = 0;
#pragma omp parallel
    {
#pragma omp single
        team = omp_get_num_threads();
    }
    const char *inst = getenv("VLCS_INSTANCE");
    printf("instance=%s counter=%d tag=%s optind=%d rest=%s env_seen=%d getenv=%s procs=%d team=%d\n",
           inst ? inst : "-", counter, tag, optind, optind < argc ? argv[optind] : "-", seen,
           getenv("PROG_SET"), omp_get_num_procs(), team);
    fflush(stdout);
    exit(3);
}

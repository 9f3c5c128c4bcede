/* An OpenMP library built with gcc -fopenmp: libgomp sizes its pool when it
 * loads, from the CPUs and OMP_NUM_THREADS it sees. */
#define _GNU_SOURCE
#include <omp.h>
#include <stdlib.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

int omp_probe_num_procs(void) { return omp_get_num_procs(); }
int omp_probe_max_threads(void) { return omp_get_max_threads(); }

/* Runs a parallel region; returns the team size and ORs into *cpus_mask the
 * CPUs each team thread may run on (real affinity, from the kernel). */
int omp_probe_region(unsigned long *cpus_mask)
{
    int team = 0;
    unsigned long all = 0;
#pragma omp parallel reduction(| : all)
    {
        cpu_set_t s;
        CPU_ZERO(&s);
        if (syscall(SYS_sched_getaffinity, 0, sizeof s, &s) > 0)
            for (int i = 0; i < 64; i++)
                if (CPU_ISSET(i, &s))
                    all |= 1ul << i;
#pragma omp single
        team = omp_get_num_threads();
    }
    *cpus_mask = all;
    return team;
}

/* Work that keeps a team busy: a reduction over n terms. */
double omp_probe_sum(long n)
{
    double s = 0;
#pragma omp parallel for reduction(+ : s)
    for (long i = 0; i < n; i++)
        s += 1.0 / (double)(i + 1);
    return s;
}

/* The load average as code in the context reads it (libgomp's dynamic
 * teams subtract it). */
int omp_probe_loadavg(double *avg) { return getloadavg(avg, 3); }

/* Work that a larger team does slower: every term goes through one
 * critical section, so two threads hand its lock back and forth (here
 * 7-8 times slower than one).  Returns the team size it ran with. */
int omp_probe_contended(long n, double *sum)
{
    double s = 0;
    int team = 0;
#pragma omp parallel
    {
#pragma omp single
        team = omp_get_num_threads();
#pragma omp for
        for (long i = 0; i < n; i++) {
            double x = (double)i * 0.5;
#pragma omp critical
            s += x;
        }
    }
    *sum = s;
    return team;
}

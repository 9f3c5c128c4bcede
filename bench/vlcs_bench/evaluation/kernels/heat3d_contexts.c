/* Case 8, the vlcs way: one context per part in one process, each with its
 * own copy of the solver (and of libgomp) on its own CPUs; a thread per
 * part, halos copied with memcpy straight from the neighbour's copy.
 *
 *   vlcs run -- heat3d_contexts SOLVER.so NX NY NZ STEPS CPUS [CPUS...]
 *   vlcs run -- heat3d_contexts SOLVER.so NX NY NZ STEPS whole
 *
 * `whole` runs the undivided box in the base namespace with every core: the
 * reference for time and checksum.  Prints one JSON line like heat3d_mpi. */
#define _GNU_SOURCE
#include "heat3d_api.h"
#include "vlcs.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_PARTS 15

struct part {
    vlcs_ctx *ctx;
    struct heat_api h;
    int index, first, count, threads;
    /* Published before each step's barrier, in the slot of the step's parity:
     * a neighbour still copying step s's planes reads the other slot than
     * the one this part fills for step s + 1. */
    const double *top[2], *bottom[2];
    double *sums;
};

static struct part parts[MAX_PARTS];
static int nparts, nx, ny, nz, steps;
static double loop_s;

/* The step barrier spins (yielding after a while), as MPI's shared-memory
 * transport polls: a pthread_barrier_t sleeps in the kernel and pays a futex
 * wake-up per step, which the ranks do not (measured here: about 5 % of the
 * 48^3 loop, within this VM's noise).  Sense-reversing: the last part to
 * arrive resets the count and flips the shared sense; its release store
 * publishes every part's boundary pointers to the waiters. */
static atomic_int arrived;
static atomic_int sense;

static void step_barrier(int *my_sense)
{
    *my_sense = !*my_sense;
    if (atomic_fetch_add_explicit(&arrived, 1, memory_order_acq_rel) == nparts - 1) {
        atomic_store_explicit(&arrived, 0, memory_order_relaxed);
        atomic_store_explicit(&sense, *my_sense, memory_order_release);
        return;
    }
    for (unsigned spins = 0; atomic_load_explicit(&sense, memory_order_acquire) != *my_sense;)
        if (++spins > 2000)
            sched_yield();
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void *lookup(void *lib, const char *name) { return dlsym(lib, name); }

static void *run_part(void *arg)
{
    struct part *me = arg;
    if (me->ctx != NULL && vlcs_enter(me->ctx) != 0) {
        fprintf(stderr, "heat3d_contexts: %s\n", vlcs_error());
        exit(1);
    }
    me->threads = me->h.threads();
    size_t bytes = me->h.plane_bytes();
    struct part *below = me->index > 0 ? me - 1 : NULL;
    struct part *above = me->index < nparts - 1 ? me + 1 : NULL;
    double t0 = 0;
    int my_sense = 0;
    for (int s = 0; s <= steps; s++) {
        /* My current boundary planes stay untouched until the barrier after
         * my next step: a neighbour may read them until then. */
        me->bottom[s & 1] = me->h.boundary(0);
        me->top[s & 1] = me->h.boundary(1);
        step_barrier(&my_sense);
        if (s == 0 && me->index == 0)
            t0 = now();
        if (s == steps)
            break;
        if (below != NULL)
            memcpy(me->h.ghost(0), below->top[s & 1], bytes);
        if (above != NULL)
            memcpy(me->h.ghost(1), above->bottom[s & 1], bytes);
        me->h.step();
    }
    if (me->index == 0)
        loop_s = now() - t0;
    me->h.plane_sums(me->sums);
    if (me->ctx != NULL)
        vlcs_leave();
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 7) {
        fprintf(stderr, "usage: %s SOLVER.so NX NY NZ STEPS whole|CPUS [CPUS...]\n", argv[0]);
        return 2;
    }
    nx = atoi(argv[2]), ny = atoi(argv[3]), nz = atoi(argv[4]), steps = atoi(argv[5]);
    int whole = strcmp(argv[6], "whole") == 0;
    nparts = whole ? 1 : argc - 6;
    if (nparts > MAX_PARTS) {
        fprintf(stderr, "heat3d_contexts: at most %d parts\n", MAX_PARTS);
        return 2;
    }
    double *sums = calloc((size_t)nz, sizeof *sums);
    for (int p = 0; p < nparts; p++) {
        struct part *q = &parts[p];
        q->index = p;
        heat_split(nz, p, nparts, &q->first, &q->count);
        q->sums = sums + q->first;
        void *lib;
        if (whole) {
            lib = dlopen(argv[1], RTLD_NOW);
            if (lib == NULL || heat_api_bind(lib, lookup, &q->h) != 0) {
                fprintf(stderr, "heat3d_contexts: %s\n", lib ? "bad solver" : dlerror());
                return 1;
            }
        } else {
            char name[16];
            snprintf(name, sizeof name, "part%d", p);
            q->ctx = vlcs_ctx_create(name);
            if (q->ctx == NULL || vlcs_ctx_set_cpus(q->ctx, argv[6 + p]) != 0 ||
                (lib = vlcs_ctx_load(q->ctx, argv[1])) == NULL ||
                heat_api_bind(lib, vlcs_ctx_sym, &q->h) != 0) {
                fprintf(stderr, "heat3d_contexts: part %d: %s\n", p, vlcs_error());
                return 1;
            }
        }
        if (q->h.init(nx, ny, q->first, q->count) != 0) {
            fprintf(stderr, "heat3d_contexts: out of memory for part %d\n", p);
            return 1;
        }
    }
    pthread_t tid[MAX_PARTS];
    for (int p = 0; p < nparts; p++)
        pthread_create(&tid[p], NULL, run_part, &parts[p]);
    for (int p = 0; p < nparts; p++)
        pthread_join(tid[p], NULL);
    printf("{\"strategy\": \"%s\", \"parts\": %d, \"loop_s\": %.6f, \"checksum\": %.17g, "
           "\"threads\": [",
           whole ? "whole" : "contexts", nparts, loop_s, parts[0].h.checksum(sums, nz));
    for (int p = 0; p < nparts; p++)
        printf("%s%d", p ? ", " : "", parts[p].threads);
    printf("]}\n");
    free(sums);
    return 0;
}

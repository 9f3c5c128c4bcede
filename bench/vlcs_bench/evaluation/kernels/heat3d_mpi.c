/* Case 8, the MPI way: one rank per part, halos exchanged with
 * MPI_Sendrecv before every step, plane sums gathered on rank 0.
 *
 *   mpirun -np P heat3d_mpi SOLVER.so NX NY NZ STEPS
 *
 * Rank 0 prints one JSON line: loop seconds, checksum, OpenMP threads per rank. */
#include "heat3d_api.h"

#include <dlfcn.h>
#include <mpi.h>
#include <stdlib.h>

static void *lookup(void *lib, const char *name) { return dlsym(lib, name); }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 6) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np P %s SOLVER.so NX NY NZ STEPS\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int nx = atoi(argv[2]), ny = atoi(argv[3]), nz = atoi(argv[4]), steps = atoi(argv[5]);
    void *lib = dlopen(argv[1], RTLD_NOW);
    struct heat_api h;
    if (lib == NULL) {
        fprintf(stderr, "heat3d_mpi: %s\n", dlerror());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int first, count;
    heat_split(nz, rank, size, &first, &count);
    if (heat_api_bind(lib, lookup, &h) != 0 || h.init(nx, ny, first, count) != 0) {
        fprintf(stderr, "heat3d_mpi: rank %d could not set up its part\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int below = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    int above = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
    int n = (int)(h.plane_bytes() / sizeof(double));

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int s = 0; s < steps; s++) {
        /* Upwards: my top plane to the ghost below of the rank above; then down. */
        MPI_Sendrecv(h.boundary(1), n, MPI_DOUBLE, above, 0, h.ghost(0), n, MPI_DOUBLE, below,
                     0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Sendrecv(h.boundary(0), n, MPI_DOUBLE, below, 1, h.ghost(1), n, MPI_DOUBLE, above,
                     1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        h.step();
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double loop = MPI_Wtime() - t0;

    double *mine = malloc(sizeof(double) * (size_t)(count > 0 ? count : 1));
    double *all = rank == 0 ? malloc(sizeof(double) * (size_t)nz) : NULL;
    int *counts = rank == 0 ? malloc(sizeof(int) * (size_t)size) : NULL;
    int *firsts = rank == 0 ? malloc(sizeof(int) * (size_t)size) : NULL;
    if (rank == 0)
        for (int p = 0; p < size; p++)
            heat_split(nz, p, size, &firsts[p], &counts[p]);
    h.plane_sums(mine);
    MPI_Gatherv(mine, count, MPI_DOUBLE, all, counts, firsts, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    int threads = h.threads(), *all_threads = rank == 0 ? malloc(sizeof(int) * (size_t)size) : NULL;
    MPI_Gather(&threads, 1, MPI_INT, all_threads, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("{\"strategy\": \"mpi\", \"parts\": %d, \"loop_s\": %.6f, \"checksum\": %.17g, "
               "\"threads\": [",
               size, loop, h.checksum(all, nz));
        for (int p = 0; p < size; p++)
            printf("%s%d", p ? ", " : "", all_threads[p]);
        printf("]}\n");
    }
    free(mine);
    free(all);
    free(counts);
    free(firsts);
    free(all_threads);
    MPI_Finalize();
    return 0;
}

/* The solver of case 8: explicit 3-D heat equation (7-point Jacobi) on a
 * box of nx*ny*nz points, split along z into parts.  Written the way MPI
 * codes are: the part this process owns lives in globals, so one copy of
 * the library holds one part.  Two MPI ranks get two copies by being two
 * processes; two vlcs contexts get two copies in one process.
 *
 * Each part stores its nzl owned planes plus a ghost plane below and above;
 * the driver fills the ghosts from the neighbours' boundary planes between
 * steps.  Ghosts at the box's faces stay 0 (fixed temperature), as do the
 * x and y faces.  The update of a point reads only the previous step, so
 * any split gives bit-identical fields. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

static int nx, ny, nzl, z0;
static double *u, *unew; /* (nzl + 2) planes of ny * nx */

static size_t plane(void) { return (size_t)nx * ny; }

/* Own planes first .. first + count - 1 of the box; 0, or -1 when out of memory. */
int heat_init(int nx_, int ny_, int first, int count)
{
    free(u);
    free(unew);
    nx = nx_, ny = ny_, nzl = count, z0 = first;
    size_t total = plane() * (size_t)(nzl + 2);
    u = calloc(total, sizeof *u);
    unew = calloc(total, sizeof *unew);
    if (!u || !unew)
        return -1;
    for (int k = 1; k <= nzl; k++) {
        int z = z0 + k - 1;
        for (int j = 1; j < ny - 1; j++)
            for (int i = 1; i < nx - 1; i++)
                u[((size_t)k * ny + j) * nx + i] =
                    (double)((i * 7 + j * 13 + z * 17) % 101) / 100.0;
    }
    return 0;
}

/* The plane a neighbour needs: side 0 = lowest owned, 1 = highest owned. */
const double *heat_boundary(int side) { return u + plane() * (side ? (size_t)nzl : 1); }

/* Where a neighbour's plane goes: side 0 = ghost below, 1 = ghost above. */
double *heat_ghost(int side) { return u + plane() * (side ? (size_t)nzl + 1 : 0); }

size_t heat_plane_bytes(void) { return plane() * sizeof(double); }

int heat_threads(void) { return omp_get_max_threads(); }

void heat_step(void)
{
    const double a = 0.1;
    const size_t p = plane();
#pragma omp parallel for schedule(static)
    for (int k = 1; k <= nzl; k++)
        for (int j = 1; j < ny - 1; j++)
            for (int i = 1; i < nx - 1; i++) {
                size_t c = ((size_t)k * ny + j) * nx + i;
                unew[c] = u[c] + a * (u[c - 1] + u[c + 1] + u[c - nx] + u[c + nx] + u[c - p] +
                                      u[c + p] - 6 * u[c]);
            }
    double *t = u;
    u = unew;
    unew = t;
}

/* The sum of each owned plane, in z order: a driver combines the parts'
 * sums in global z order, so every split yields the same checksum bits. */
void heat_plane_sums(double *out)
{
    for (int k = 1; k <= nzl; k++) {
        double s = 0;
        const double *q = u + plane() * (size_t)k;
        for (size_t c = 0; c < plane(); c++)
            s += q[c];
        out[k - 1] = s;
    }
}

double heat_checksum(const double *sums, int nz)
{
    double s = 0;
    for (int z = 0; z < nz; z++)
        s += (z + 1) * sums[z];
    return s;
}

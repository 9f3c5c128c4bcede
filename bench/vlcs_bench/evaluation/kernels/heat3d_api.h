/* The solver library's entry points (heat3d.c), looked up at run time so
 * that both drivers run the same shared object: the MPI driver from its one
 * namespace with dlsym, the contexts driver from each context's copy. */
#ifndef HEAT3D_API_H
#define HEAT3D_API_H
#include <stddef.h>
#include <stdio.h>

struct heat_api {
    int (*init)(int nx, int ny, int first, int count);
    const double *(*boundary)(int side);
    double *(*ghost)(int side);
    size_t (*plane_bytes)(void);
    int (*threads)(void);
    void (*step)(void);
    void (*plane_sums)(double *out);
    double (*checksum)(const double *sums, int nz);
};

/* Fill `api` from `lib` through `sym`; 0, or -1 after naming the missing symbol. */
static inline int heat_api_bind(void *lib, void *(*sym)(void *, const char *),
                                struct heat_api *api)
{
    static const char *const names[] = {"heat_init",    "heat_boundary", "heat_ghost",
                                        "heat_plane_bytes", "heat_threads", "heat_step",
                                        "heat_plane_sums",  "heat_checksum"};
    void **slots[] = {(void **)&api->init,       (void **)&api->boundary,
                      (void **)&api->ghost,      (void **)&api->plane_bytes,
                      (void **)&api->threads,    (void **)&api->step,
                      (void **)&api->plane_sums, (void **)&api->checksum};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        if ((*slots[i] = sym(lib, names[i])) == NULL) {
            fprintf(stderr, "heat3d: the solver library lacks %s\n", names[i]);
            return -1;
        }
    }
    return 0;
}

/* The first plane and the number of planes of part `p` of `parts`. */
static inline void heat_split(int nz, int p, int parts, int *first, int *count)
{
    *first = (int)((long)nz * p / parts);
    *count = (int)((long)nz * (p + 1) / parts) - *first;
}
#endif

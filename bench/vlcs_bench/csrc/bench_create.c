/* What one context costs to make: a new context and the first load of a
 * small library into it, against glibc's own dlmopen(LM_ID_NEWLM) of the
 * same library (what the paper's prototype does per context, before its
 * monitor's part).
 *
 *   vlcs-bench-create LIBRARY WAY N
 *
 * WAY: "dlmopen" (the floor), "dlmopen-local" (glibc's libc in a new
 * namespace, then the library by a second call: kept local, as a context
 * keeps it), "namespace" (vlcs, a linker namespace of its own) or "copies"
 * (vlcs, renamed copies).  Prints the N times in
 * microseconds as JSON.  Run under vlcs-run: every way gets its tunables. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <vlcs.h>

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* One context with `library` loaded; 0, or -1 with the error printed. */
static int make_one(const char *way, const char *library)
{
    if (strcmp(way, "dlmopen") == 0) {
        if (dlmopen(LM_ID_NEWLM, library, RTLD_NOW | RTLD_LOCAL) != NULL)
            return 0;
        fprintf(stderr, "vlcs-bench-create: %s\n", dlerror());
        return -1;
    }
    if (strcmp(way, "dlmopen-local") == 0) {
        void *libc = dlmopen(LM_ID_NEWLM, "libc.so.6", RTLD_NOW | RTLD_LOCAL);
        Lmid_t ns;
        if (libc != NULL && dlinfo(libc, RTLD_DI_LMID, &ns) == 0 &&
            dlmopen(ns, library, RTLD_NOW | RTLD_LOCAL) != NULL)
            return 0;
        fprintf(stderr, "vlcs-bench-create: %s\n", dlerror());
        return -1;
    }
    vlcs_ctx *c = vlcs_ctx_create(NULL);
    int mode = strcmp(way, "copies") == 0 ? VLCS_MODE_COPIES : VLCS_MODE_NAMESPACE;
    if (c != NULL && vlcs_ctx_set_mode(c, mode) == 0 && vlcs_ctx_load(c, library) != NULL)
        return 0;
    fprintf(stderr, "vlcs-bench-create: %s\n", vlcs_error());
    return -1;
}

int main(int argc, char **argv)
{
    if (argc != 4 || atoi(argv[3]) < 1 ||
        (strcmp(argv[2], "dlmopen") && strcmp(argv[2], "dlmopen-local") &&
         strcmp(argv[2], "namespace") && strcmp(argv[2], "copies"))) {
        fprintf(stderr, "usage: vlcs-bench-create LIBRARY dlmopen|dlmopen-local|namespace|copies N\n");
        return 2;
    }
    int n = atoi(argv[3]);
    printf("{\"way\": \"%s\", \"us\": [", argv[2]);
    for (int i = 0; i < n; i++) {
        double t0 = now_us();
        if (make_one(argv[2], argv[1]) != 0)
            return 1;
        printf("%s%.1f", i ? ", " : "", now_us() - t0);
    }
    printf("]}\n");
    return 0;
}

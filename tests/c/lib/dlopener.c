/* A library that opens others itself, by bare name, found through its own
 * RUNPATH ($ORIGIN/runpath): as oneTBB opens libtbbmalloc, or a plugin host
 * its plugins. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>

static void *volatile last;

void *dlopener_open(const char *name, int global)
{
    /* Not a tail call: glibc must see this library as the caller. */
    last = dlopen(name, RTLD_NOW | (global ? RTLD_GLOBAL : RTLD_LOCAL));
    return last;
}

const char *dlopener_error(void) { return dlerror(); }

/* The file dladdr names for this library: libraries find their own folder
 * so (oneMKL opens its kernels from libmkl_core's). */
const char *dlopener_own_file(void)
{
    Dl_info info;
    return dladdr((void *)dlopener_open, &info) != 0 ? info.dli_fname : NULL;
}

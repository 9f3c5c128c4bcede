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

/* The same with the caller's flags (RTLD_NOLOAD | RTLD_GLOBAL promotes a
 * library already loaded). */
void *dlopener_open_mode(const char *name, int mode)
{
    last = dlopen(name, mode);
    return last;
}

const char *dlopener_error(void) { return dlerror(); }

/* What the namespace's global scope resolves name to (NULL: nothing). */
void *dlopener_default(const char *name)
{
    last = dlsym(RTLD_DEFAULT, name);
    return last;
}

/* The file dladdr names for this library: libraries find their own folder
 * so (oneMKL opens its kernels from libmkl_core's). */
const char *dlopener_own_file(void)
{
    Dl_info info;
    return dladdr((void *)dlopener_open, &info) != 0 ? info.dli_fname : NULL;
}

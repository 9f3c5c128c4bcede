/*
 * interposer_path.c - where libvlcs_interpose.so is: VLCS_INTERPOSER when
 * set, else beside libvlcs.so.  Found once, when vlcs starts; every
 * context's first object is loaded from there.
 */
#include "common.h"
#include "interposer_path.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char ip_path[PATH_MAX];

const char *interposer_path(void) { return ip_path; }

int libvlcs_directory(char *dir, size_t size)
{
    Dl_info info;
    if (dladdr((void *)libvlcs_directory, &info) == 0 || info.dli_fname == NULL)
        return -1;
    const char *slash = strrchr(info.dli_fname, '/');
    int n = snprintf(dir, size, "%.*s", slash ? (int)(slash - info.dli_fname) : 1,
                     slash ? info.dli_fname : ".");
    return n >= 0 && (size_t)n < size ? 0 : -1;
}

int interposer_locate(char *err, size_t errsize)
{
    const char *env = getenv("VLCS_INTERPOSER");
    char dir[PATH_MAX];
    if (env != NULL && *env != '\0') {
        snprintf(ip_path, sizeof ip_path, "%s", env);
    } else if (libvlcs_directory(dir, sizeof dir) != 0) {
        snprintf(err, errsize,
                 "Error initialising vlcs: cannot tell where libvlcs.so was loaded from");
        return VLCS_E_SYSTEM;
    } else if ((size_t)snprintf(ip_path, sizeof ip_path, "%s/libvlcs_interpose.so", dir) >=
               sizeof ip_path) {
        snprintf(err, errsize, "Error initialising vlcs: the path of libvlcs.so is too long");
        return VLCS_E_SYSTEM;
    }
    struct stat st;
    if (stat(ip_path, &st) != 0) {
        int e = errno;
        snprintf(err, errsize,
                 "Error initialising vlcs: %s: %s; reinstall vlcs or point VLCS_INTERPOSER "
                 "at libvlcs_interpose.so",
                 ip_path, strerror(e));
        return e == ENOENT ? VLCS_E_NOT_FOUND : VLCS_E_SYSTEM;
    }
    return 0;
}

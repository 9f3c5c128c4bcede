/*
 * interposer_path.c - where libvlcs_interpose.so is: VLCS_INTERPOSER when
 * set, else beside libvlcs.so.  Found once, when vlcs starts; every
 * context's first object is loaded from there.
 */
#include "internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char ip_path[PATH_MAX];

const char *interposer_path(void) { return ip_path; }

int interposer_locate(char *err, size_t errsize)
{
    const char *env = getenv("VLCS_INTERPOSER");
    if (env != NULL && *env != '\0') {
        snprintf(ip_path, sizeof ip_path, "%s", env);
    } else {
        Dl_info info;
        if (dladdr((void *)interposer_locate, &info) == 0 || info.dli_fname == NULL) {
            snprintf(err, errsize,
                     "Error initialising vlcs: cannot tell where libvlcs.so was loaded from");
            return VLCS_E_SYSTEM;
        }
        const char *slash = strrchr(info.dli_fname, '/');
        int dirlen = slash ? (int)(slash - info.dli_fname) : 1;
        snprintf(ip_path, sizeof ip_path, "%.*s/libvlcs_interpose.so", dirlen,
                 slash ? info.dli_fname : ".");
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

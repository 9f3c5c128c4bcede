/*
 * ip_files.c - the open family, for the files that describe CPUs.
 *
 * Opens of /proc/cpuinfo, /proc/self/status and
 * /sys/devices/system/cpu/{online,present,possible} return an in-memory file
 * with the context's view; every other path goes straight to libc.
 * fopen is covered separately because libc's fopen opens through an
 * internal entry point that no interposer can see.
 */
#define _GNU_SOURCE
#include "ip.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);
typedef int (*open2_fn)(const char *, int);
typedef int (*openat2_fn)(int, const char *, int);
typedef FILE *(*fopen_fn)(const char *, const char *);


/* Cheap prefix test so ordinary opens never leave the namespace. */
static int forged(int dirfd, const char *path, int flags)
{
    const struct vlcs_ip_api *a = vlcs_ip;
    if (a == NULL || path == NULL || (flags & O_ACCMODE) != O_RDONLY)
        return -2;
    if (strncmp(path, "/proc/", 6) != 0 && strncmp(path, "/sys/devices/system/cpu/", 24) != 0)
        return -2;
    return a->open_forged(a->ctx, dirfd, path, flags);
}

static mode_t mode_arg(int flags, va_list ap)
{
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, mode_t) : 0;
}

IP_EXPORT int open(const char *path, int flags, ...)
{
    int fd = forged(AT_FDCWD, path, flags);
    if (fd != -2)
        return fd;
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    NEXT(open_fn, open);
    return next_open(path, flags, mode);
}

IP_EXPORT int open64(const char *path, int flags, ...)
{
    int fd = forged(AT_FDCWD, path, flags);
    if (fd != -2)
        return fd;
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    NEXT(open_fn, open64);
    return next_open64(path, flags, mode);
}

IP_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
    int fd = forged(dirfd, path, flags);
    if (fd != -2)
        return fd;
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    NEXT(openat_fn, openat);
    return next_openat(dirfd, path, flags, mode);
}

IP_EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
    int fd = forged(dirfd, path, flags);
    if (fd != -2)
        return fd;
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    NEXT(openat_fn, openat64);
    return next_openat64(dirfd, path, flags, mode);
}

/* _FORTIFY_SOURCE entry points. */
IP_EXPORT int __open_2(const char *path, int flags)
{
    int fd = forged(AT_FDCWD, path, flags);
    if (fd != -2)
        return fd;
    NEXT(open2_fn, __open_2);
    return next___open_2(path, flags);
}

IP_EXPORT int __open64_2(const char *path, int flags)
{
    int fd = forged(AT_FDCWD, path, flags);
    if (fd != -2)
        return fd;
    NEXT(open2_fn, __open64_2);
    return next___open64_2(path, flags);
}

IP_EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
    int fd = forged(dirfd, path, flags);
    if (fd != -2)
        return fd;
    NEXT(openat2_fn, __openat_2);
    return next___openat_2(dirfd, path, flags);
}

IP_EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
    int fd = forged(dirfd, path, flags);
    if (fd != -2)
        return fd;
    NEXT(openat2_fn, __openat64_2);
    return next___openat64_2(dirfd, path, flags);
}

static FILE *fopen_common(const char *path, const char *mode, fopen_fn next)
{
    if (mode != NULL && mode[0] == 'r' && strchr(mode, '+') == NULL) {
        int flags = O_RDONLY | (strchr(mode, 'e') ? O_CLOEXEC : 0);
        int fd = forged(AT_FDCWD, path, flags);
        if (fd >= 0) {
            FILE *f = fdopen(fd, mode);
            if (f == NULL) {
                int saved = errno;
                close(fd);
                errno = saved;
            }
            return f;
        }
        if (fd == -1)
            return NULL;
    }
    return next(path, mode);
}

IP_EXPORT FILE *fopen(const char *path, const char *mode)
{
    NEXT(fopen_fn, fopen);
    return fopen_common(path, mode, next_fopen);
}

IP_EXPORT FILE *fopen64(const char *path, const char *mode)
{
    NEXT(fopen_fn, fopen64);
    return fopen_common(path, mode, next_fopen64);
}

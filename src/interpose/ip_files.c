/*
 * ip_files.c - the open family, for the files that describe CPUs; shm_open
 * and shm_unlink, for the objects a library names after its process.
 *
 * Opens of the files libvlcs forges (the table in src/view.c: /proc/cpuinfo,
 * /proc/self/status, /sys/devices/system/cpu/{online,present,possible})
 * return an in-memory file with the context's view; every other path goes
 * straight to libc.
 * fopen is covered separately because libc's fopen opens through an
 * internal entry point that no interposer can see.
 */
#define _GNU_SOURCE
#include "ip.h"
#include "ip_run.h"

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
typedef int (*shm_open_fn)(const char *, int, mode_t);
typedef int (*shm_unlink_fn)(const char *);


/* Cheap prefix test (the rows of libvlcs's table of forged files) so
 * ordinary opens never leave the namespace. */
static int forged(int dirfd, const char *path, int flags)
{
    const struct vlcs_ip_api *a = vlcs_ip;
    if (a == NULL || path == NULL || path[0] != '/')
        return -2;
    for (const char *const *p = a->forged_prefixes; *p != NULL; p++)
        if (strncmp(path, *p, strlen(*p)) == 0)
            return a->open_forged(a->ctx, dirfd, path, flags);
    return -2;
}

static mode_t mode_arg(int flags, va_list ap)
{
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, mode_t) : 0;
}

/* open(path, flags, ...) and openat(dirfd, path, flags, ...) in all their
 * spellings: forge, or pass through with the mode when there is one. */
#define OPEN_LIKE(name)                                                                  \
    IP_EXPORT int name(const char *path, int flags, ...)                                 \
    {                                                                                    \
        int fd = forged(AT_FDCWD, path, flags);                                          \
        if (fd != -2)                                                                    \
            return fd;                                                                   \
        va_list ap;                                                                      \
        va_start(ap, flags);                                                             \
        mode_t mode = mode_arg(flags, ap);                                               \
        va_end(ap);                                                                      \
        NEXT(open_fn, name);                                                             \
        return next_##name(path, flags, mode);                                           \
    }

#define OPENAT_LIKE(name)                                                                \
    IP_EXPORT int name(int dirfd, const char *path, int flags, ...)                      \
    {                                                                                    \
        int fd = forged(dirfd, path, flags);                                             \
        if (fd != -2)                                                                    \
            return fd;                                                                   \
        va_list ap;                                                                      \
        va_start(ap, flags);                                                             \
        mode_t mode = mode_arg(flags, ap);                                               \
        va_end(ap);                                                                      \
        NEXT(openat_fn, name);                                                           \
        return next_##name(dirfd, path, flags, mode);                                    \
    }

/* The _FORTIFY_SOURCE entry points take no mode. */
#define OPEN_2_LIKE(name)                                                                \
    IP_EXPORT int name(const char *path, int flags)                                      \
    {                                                                                    \
        int fd = forged(AT_FDCWD, path, flags);                                          \
        if (fd != -2)                                                                    \
            return fd;                                                                   \
        NEXT(open2_fn, name);                                                            \
        return next_##name(path, flags);                                                 \
    }

#define OPENAT_2_LIKE(name)                                                              \
    IP_EXPORT int name(int dirfd, const char *path, int flags)                           \
    {                                                                                    \
        int fd = forged(dirfd, path, flags);                                             \
        if (fd != -2)                                                                    \
            return fd;                                                                   \
        NEXT(openat2_fn, name);                                                          \
        return next_##name(dirfd, path, flags);                                          \
    }

OPEN_LIKE(open)
OPEN_LIKE(open64)
OPENAT_LIKE(openat)
OPENAT_LIKE(openat64)
OPEN_2_LIKE(__open_2)
OPEN_2_LIKE(__open64_2)
OPENAT_2_LIKE(__openat_2)
OPENAT_2_LIKE(__openat64_2)

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
    FILE *f = fopen_common(path, mode, next_fopen);
    ip_run_opened(f);
    return f;
}

IP_EXPORT FILE *fopen64(const char *path, const char *mode)
{
    NEXT(fopen_fn, fopen64);
    FILE *f = fopen_common(path, mode, next_fopen64);
    ip_run_opened(f);
    return f;
}

/* A name of the context's own where a library makes one object per
 * process (libvlcs's own_names.c: OpenMP runtimes' registrations). */
static const char *own(const char *name, char *buf, size_t size)
{
    const struct vlcs_ip_api *a = vlcs_ip;
    return a != NULL && a->own_name != NULL ? a->own_name(a->ctx, name, buf, size) : name;
}

IP_EXPORT int shm_open(const char *name, int flags, mode_t mode)
{
    char buf[256];
    NEXT(shm_open_fn, shm_open);
    return next_shm_open(own(name, buf, sizeof buf), flags, mode);
}

IP_EXPORT int shm_unlink(const char *name)
{
    char buf[256];
    NEXT(shm_unlink_fn, shm_unlink);
    return next_shm_unlink(own(name, buf, sizeof buf));
}

/*
 * ip_cpu.c - what code in the namespace learns about CPUs.
 *
 * Queries answer with the context's CPUs (intersected with the calling
 * thread's real affinity, so a thread pinned inside the context still sees
 * its pin); requests to change affinity are clamped to the context.
 */
#define _GNU_SOURCE
#include "ip.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <unistd.h>

typedef int (*sched_aff_fn)(pid_t, size_t, cpu_set_t *);
typedef int (*sched_setaff_fn)(pid_t, size_t, const cpu_set_t *);
typedef int (*pthread_aff_fn)(pthread_t, size_t, cpu_set_t *);
typedef int (*pthread_setaff_fn)(pthread_t, size_t, const cpu_set_t *);
typedef long (*sysconf_fn)(int);
typedef int (*nprocs_fn)(void);
typedef int (*loadavg_fn)(double *, int);


/* A thread of this process: the caller itself, or the process (pid). */
static int is_self(pid_t pid)
{
    return pid == 0 || pid == getpid() || pid == (pid_t)syscall(SYS_gettid);
}

IP_EXPORT int sched_getaffinity(pid_t pid, size_t size, cpu_set_t *mask)
{
    NEXT(sched_aff_fn, sched_getaffinity);
    int rc = next_sched_getaffinity(pid, size, mask);
    const struct vlcs_ip_api *a = vlcs_ip;
    if (rc == 0 && a != NULL && is_self(pid))
        a->filter_self(a->ctx, size, mask);
    return rc;
}

/* A requested mask clamped to the context (the calling thread's own: self)
 * into clamped (room for 8192 CPUs), its size in *csize; -1: nothing of
 * the context is left in it. */
#define CLAMP_ROOM 16
static int clamp(const struct vlcs_ip_api *a, int self, size_t size, const cpu_set_t *mask,
                 cpu_set_t clamped[CLAMP_ROOM], size_t *csize)
{
    *csize = size < CLAMP_ROOM * sizeof(cpu_set_t) ? size : CLAMP_ROOM * sizeof(cpu_set_t);
    return (self ? a->clamp_self : a->clamp_mask)(a->ctx, size, mask, *csize, clamped);
}

IP_EXPORT int sched_setaffinity(pid_t pid, size_t size, const cpu_set_t *mask)
{
    NEXT(sched_setaff_fn, sched_setaffinity);
    const struct vlcs_ip_api *a = vlcs_ip;
    if (a == NULL || mask == NULL)
        return next_sched_setaffinity(pid, size, mask);
    cpu_set_t clamped[CLAMP_ROOM];
    size_t csize;
    if (clamp(a, is_self(pid), size, mask, clamped, &csize) != 0) {
        errno = EINVAL;
        return -1;
    }
    return next_sched_setaffinity(pid, csize, clamped);
}

IP_EXPORT int pthread_getaffinity_np(pthread_t th, size_t size, cpu_set_t *mask)
{
    NEXT(pthread_aff_fn, pthread_getaffinity_np);
    int rc = next_pthread_getaffinity_np(th, size, mask);
    const struct vlcs_ip_api *a = vlcs_ip;
    if (rc == 0 && a != NULL)
        (pthread_equal(th, pthread_self()) ? a->filter_self : a->filter_mask)(a->ctx, size, mask);
    return rc;
}

IP_EXPORT int pthread_setaffinity_np(pthread_t th, size_t size, const cpu_set_t *mask)
{
    NEXT(pthread_setaff_fn, pthread_setaffinity_np);
    const struct vlcs_ip_api *a = vlcs_ip;
    if (a == NULL)
        return next_pthread_setaffinity_np(th, size, mask);
    cpu_set_t clamped[CLAMP_ROOM];
    size_t csize;
    if (clamp(a, pthread_equal(th, pthread_self()), size, mask, clamped, &csize) != 0)
        return EINVAL;
    return next_pthread_setaffinity_np(th, csize, clamped);
}

IP_EXPORT long sysconf(int name)
{
    const struct vlcs_ip_api *a = vlcs_ip;
    if (a != NULL && (name == _SC_NPROCESSORS_ONLN || name == _SC_NPROCESSORS_CONF))
        return a->ncpus(a->ctx);
    NEXT(sysconf_fn, sysconf);
    return next_sysconf(name);
}

IP_EXPORT long __sysconf(int name) { return sysconf(name); }

IP_EXPORT int get_nprocs(void)
{
    const struct vlcs_ip_api *a = vlcs_ip;
    if (a != NULL)
        return (int)a->ncpus(a->ctx);
    NEXT(nprocs_fn, get_nprocs);
    return next_get_nprocs();
}

IP_EXPORT int get_nprocs_conf(void)
{
    const struct vlcs_ip_api *a = vlcs_ip;
    if (a != NULL)
        return (int)a->ncpus(a->ctx);
    NEXT(nprocs_fn, get_nprocs_conf);
    return next_get_nprocs_conf();
}

IP_EXPORT int getloadavg(double loadavg[], int nelem)
{
    const struct vlcs_ip_api *a = vlcs_ip;
    if (a != NULL) {
        int rc = a->loadavg(a->ctx, loadavg, nelem);
        if (rc != -2)
            return rc;
    }
    NEXT(loadavg_fn, getloadavg);
    return next_getloadavg(loadavg, nelem);
}

#if defined(__x86_64__)
#include <stdarg.h>

/* The kernel's answer to a raw call, errno set as libc's syscall() sets it. */
static long raw(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
    long rc;
    register long r10 __asm__("r10") = a4;
    register long r8 __asm__("r8") = a5;
    register long r9 __asm__("r9") = a6;
    __asm__ volatile("syscall"
                     : "=a"(rc)
                     : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    if (rc < 0 && rc > -4096) {
        errno = (int)-rc;
        return -1;
    }
    return rc;
}

/* syscall(2) from a context's library: made here, in this copy's code, so
 * that strict mode's filters (which cover a context's code, and in copy
 * mode not the process's libc) see whose call it is.  The affinity calls
 * get the context's view as libc's wrappers above do: LLVM's and Intel's
 * OpenMP read the mask so (and their CPU count from sysconf), and a mask
 * wider than the count fails their start. */
IP_EXPORT long syscall(long nr, ...)
{
    va_list ap;
    va_start(ap, nr);
    long a1 = va_arg(ap, long), a2 = va_arg(ap, long), a3 = va_arg(ap, long);
    long a4 = va_arg(ap, long), a5 = va_arg(ap, long), a6 = va_arg(ap, long);
    va_end(ap);
    const struct vlcs_ip_api *a = vlcs_ip;
    if (a != NULL && nr == SYS_sched_setaffinity && a3 != 0) {
        cpu_set_t clamped[CLAMP_ROOM];
        size_t csize;
        if (clamp(a, is_self((pid_t)a1), (size_t)a2, (const cpu_set_t *)a3, clamped, &csize) !=
            0) {
            errno = EINVAL;
            return -1;
        }
        return raw(nr, a1, (long)csize, (long)clamped, a4, a5, a6);
    }
    long rc = raw(nr, a1, a2, a3, a4, a5, a6);
    /* the kernel wrote rc bytes of the mask */
    if (nr == SYS_sched_getaffinity && rc > 0 && a != NULL && is_self((pid_t)a1))
        a->filter_self(a->ctx, (size_t)rc, (cpu_set_t *)a3);
    return rc;
}
#endif

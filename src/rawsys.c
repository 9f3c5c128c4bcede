/*
 * rawsys.c - the one raw-syscall primitive of libvlcs.
 *
 * Used where vlcs must see the kernel's own answer: reading and setting real
 * affinity (cpuset.c), reading real files to forge from (view.c), and inside
 * strict mode's SIGSYS handler (strict.c).  It goes through the base libc's
 * syscall(), whose instruction lies outside every context, so strict mode's
 * filters let it pass, and no interposer sits in front of it.
 */
#include "common.h"
#include "rawsys.h"

#include <errno.h>
#include <unistd.h>

long raw_syscall(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
    /* Async-signal-safe: errno is restored, the result carries the error. */
    int saved = errno;
    long rc = syscall(nr, a1, a2, a3, a4, a5, a6);
    if (rc < 0)
        rc = -errno;
    errno = saved;
    return rc;
}

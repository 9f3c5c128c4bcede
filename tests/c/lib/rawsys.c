/* A library that bypasses libc's wrappers the way static runtimes and
 * hand-written code do: syscall(2) and an inline syscall instruction. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int raw_affinity_count(void)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    return syscall(SYS_sched_getaffinity, 0, sizeof s, &s) > 0 ? CPU_COUNT(&s) : -1;
}

int inline_affinity_count(void)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    long rc;
    __asm__ volatile("syscall"
                     : "=a"(rc)
                     : "a"((long)SYS_sched_getaffinity), "D"(0L), "S"((long)sizeof s), "d"(&s)
                     : "rcx", "r11", "memory");
    return rc > 0 ? CPU_COUNT(&s) : -1;
}

int raw_setaffinity(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    /* errno is per libc copy: report this namespace's. */
    return syscall(SYS_sched_setaffinity, 0, sizeof s, &s) == 0 ? 0 : errno;
}

/* Processors listed by /proc/cpuinfo, read with raw openat and read. */
int raw_cpuinfo_count(void)
{
    int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/cpuinfo", O_RDONLY);
    if (fd < 0)
        return -1;
    static __thread char buf[1 << 16];
    long n = 0, r;
    while ((r = syscall(SYS_read, fd, buf + n, sizeof buf - 1 - (size_t)n)) > 0)
        n += r;
    syscall(SYS_close, fd);
    buf[n] = '\0';
    int count = 0;
    for (char *p = buf; (p = strstr(p, "processor")) != NULL; p++)
        count++;
    return count;
}

/* First line of /sys/devices/system/cpu/online, raw. */
int raw_cpu_online(char *out, int size)
{
    int fd = (int)syscall(SYS_open, "/sys/devices/system/cpu/online", O_RDONLY);
    if (fd < 0)
        return -1;
    long n = syscall(SYS_read, fd, out, size - 1);
    syscall(SYS_close, fd);
    if (n <= 0)
        return -1;
    out[n] = '\0';
    out[strcspn(out, "\n")] = '\0';
    return 0;
}

/* probe_open_name with raw syscalls (openat, readlinkat, close): what strict
 * mode's trap gives code that bypasses libc. */
int raw_open_name(const char *path, char *out, int size)
{
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY);
    if (fd < 0)
        return -1;
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    long n = syscall(SYS_readlinkat, AT_FDCWD, link, out, (long)size - 1);
    syscall(SYS_close, fd);
    if (n < 0)
        return -1;
    out[n] = '\0';
    return 0;
}

/* What oneMKL does when it starts: the calling thread's mask saved, the
 * thread moved onto each CPU of it in turn, the mask put back; through
 * libc's wrappers (how 0) or syscall(2) (how 1).  0 when every call
 * succeeded. */
int probe_and_restore(int how)
{
    cpu_set_t saved, one;
    CPU_ZERO(&saved); /* the kernel writes only its own mask's bytes */
    long rc = how ? syscall(SYS_sched_getaffinity, 0, sizeof saved, &saved)
                  : sched_getaffinity(0, sizeof saved, &saved);
    if (rc < 0)
        return -1;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &saved))
            continue;
        CPU_ZERO(&one);
        CPU_SET(c, &one);
        rc = how ? syscall(SYS_sched_setaffinity, 0, sizeof one, &one)
                 : sched_setaffinity(0, sizeof one, &one);
        if (rc != 0)
            return -1;
    }
    return (int)(how ? syscall(SYS_sched_setaffinity, 0, sizeof saved, &saved)
                     : sched_setaffinity(0, sizeof saved, &saved));
}

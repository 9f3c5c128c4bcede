/*
 * cpuset.c - CPU masks and the list format of taskset and cgroup cpusets
 * ("0-3,8").
 */
#include "common.h"
#include "cpuset.h"
#include "context.h"
#include "rawsys.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static void mask_set(vmask *m, int cpu) { m->w[cpu / 64] |= UINT64_C(1) << (cpu % 64); }

static int parse_cpu(const char **p, int *out)
{
    if (!isdigit((unsigned char)**p))
        return -1;
    long v = 0;
    while (isdigit((unsigned char)**p)) {
        v = v * 10 + (**p - '0');
        if (v >= VLCS_MAX_CPUS)
            v = VLCS_MAX_CPUS; /* reported as out of range below */
        (*p)++;
    }
    *out = (int)v;
    return 0;
}

int mask_parse(const char *list, vmask *out, char *err, size_t errsize)
{
    vmask m = {{0}};
    if (list == NULL) {
        snprintf(err, errsize, "the CPU list is NULL");
        return -1;
    }
    const char *p = list;
    while (isspace((unsigned char)*p))
        p++;
    if (*p == '\0') {
        snprintf(err, errsize, "the CPU list is empty; give CPUs like \"0-3,8\"");
        return -1;
    }
    for (;;) {
        const char *item = p;
        int lo, hi;
        if (parse_cpu(&p, &lo) != 0)
            goto bad;
        hi = lo;
        if (*p == '-') {
            p++;
            if (parse_cpu(&p, &hi) != 0)
                goto bad;
        }
        if (lo >= VLCS_MAX_CPUS || hi >= VLCS_MAX_CPUS) {
            snprintf(err, errsize, "CPU %s in \"%s\" is beyond the %d CPUs vlcs supports",
                     item, list, VLCS_MAX_CPUS);
            return -1;
        }
        if (hi < lo) {
            snprintf(err, errsize, "range \"%d-%d\" in \"%s\" ends before it starts", lo, hi,
                     list);
            return -1;
        }
        for (int c = lo; c <= hi; c++)
            mask_set(&m, c);
        while (isspace((unsigned char)*p))
            p++;
        if (*p == '\0')
            break;
        if (*p != ',')
            goto bad;
        p++;
        continue;
    bad:
        snprintf(err, errsize,
                 "malformed CPU list \"%s\" at \"%s\"; expected CPUs like \"0-3,8\"", list,
                 item);
        return -1;
    }
    *out = m;
    return 0;
}

/* The first CPU of m at or after cpu; VLCS_MAX_CPUS: none. */
static int mask_next(const vmask *m, int cpu)
{
    for (int w = cpu / 64; cpu < VLCS_MAX_CPUS; w++, cpu = w * 64) {
        uint64_t bits = m->w[w] >> (cpu % 64);
        if (bits)
            return cpu + __builtin_ctzll(bits);
    }
    return VLCS_MAX_CPUS;
}

/* The first CPU after cpu not in m (VLCS_MAX_CPUS: none). */
static int mask_gap(const vmask *m, int cpu)
{
    for (int w = cpu / 64; cpu < VLCS_MAX_CPUS; w++, cpu = w * 64) {
        uint64_t gaps = ~m->w[w] >> (cpu % 64);
        if (gaps)
            return cpu + __builtin_ctzll(gaps);
    }
    return VLCS_MAX_CPUS;
}

int mask_format(const vmask *m, char *buf, size_t size)
{
    size_t len = 0;
    if (size > 0)
        buf[0] = '\0';
    for (int c = mask_next(m, 0); c < VLCS_MAX_CPUS; c = mask_next(m, c + 1)) {
        int e = mask_gap(m, c) - 1;
        char item[32]; /* "1023-1023" at most, and a comma */
        int n = e == c ? snprintf(item, sizeof item, "%s%d", len ? "," : "", c)
                       : snprintf(item, sizeof item, "%s%d-%d", len ? "," : "", c, e);
        if (len + 1 < size) { /* as snprintf truncates */
            size_t fits = len + (size_t)n < size ? (size_t)n : size - 1 - len;
            memcpy(buf + len, item, fits);
            buf[len + fits] = '\0';
        }
        len += (size_t)n;
        c = e;
    }
    return (int)len;
}

int mask_count(const vmask *m)
{
    int n = 0;
    for (int i = 0; i < MASK_WORDS; i++)
        n += __builtin_popcountll(m->w[i]);
    return n;
}

bool mask_eq(const vmask *a, const vmask *b) { return memcmp(a, b, sizeof *a) == 0; }

int mask_first_outside(const vmask *a, const vmask *b)
{
    for (int i = 0; i < MASK_WORDS; i++) {
        uint64_t extra = a->w[i] & ~b->w[i];
        if (extra)
            return i * 64 + __builtin_ctzll(extra);
    }
    return -1;
}

void mask_from_cpuset(vmask *m, size_t size, const cpu_set_t *set)
{
    memset(m, 0, sizeof *m);
    memcpy(m, set, size < sizeof *m ? size : sizeof *m);
}

void mask_to_cpuset(const vmask *m, size_t size, cpu_set_t *set)
{
    memset(set, 0, size);
    memcpy(set, m, size < sizeof *m ? size : sizeof *m);
}

/* Raw: these run inside strict mode's SIGSYS handler too. */
int mask_get_thread(pid_t tid, vmask *m)
{
    memset(m, 0, sizeof *m);
    long rc = raw_syscall(SYS_sched_getaffinity, tid, sizeof *m, (long)m, 0, 0, 0);
    if (rc < 0) {
        errno = (int)-rc;
        return -1;
    }
    return 0;
}

int mask_set_thread(pid_t tid, const vmask *m)
{
    long rc = raw_syscall(SYS_sched_setaffinity, tid, sizeof *m, (long)m, 0, 0, 0);
    if (rc < 0) {
        errno = (int)-rc;
        return -1;
    }
    return 0;
}

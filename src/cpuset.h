/*
 * cpuset.h - CPU masks (cpuset.c).
 */
#ifndef VLCS_CPUSET_H
#define VLCS_CPUSET_H

#include "common.h"

#define VLCS_MAX_CPUS 1024
#define MASK_WORDS (VLCS_MAX_CPUS / 64)

typedef struct {
    uint64_t w[MASK_WORDS];
} vmask;

/* A taskset list "0-3,8" (cpuset.c): GPU lists, and CPU lists once
 * places are resolved. */
HIDDEN int mask_parse(const char *list, vmask *out, char *err, size_t errsize);
HIDDEN int mask_format(const vmask *m, char *buf, size_t size);
HIDDEN int mask_count(const vmask *m);
HIDDEN bool mask_eq(const vmask *a, const vmask *b);
HIDDEN int mask_first_outside(const vmask *a, const vmask *b);
HIDDEN void mask_from_cpuset(vmask *m, size_t size, const cpu_set_t *set);
HIDDEN void mask_to_cpuset(const vmask *m, size_t size, cpu_set_t *set);
/* Real affinity of a thread (0 = caller), bypassing every interposer. */
HIDDEN int mask_get_thread(pid_t tid, vmask *m);
HIDDEN int mask_set_thread(pid_t tid, const vmask *m);

#endif

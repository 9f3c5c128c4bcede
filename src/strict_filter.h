/*
 * strict_filter.h - strict mode's seccomp program, built without installing
 * it: libvlcs installs it (strict.c), tests/c/test_strict_filter.c runs it in
 * a BPF interpreter of its own.  No state of libvlcs, so a test can compile
 * strict_filter.c on its own.  x86_64 only.
 */
#ifndef VLCS_STRICT_FILTER_H
#define VLCS_STRICT_FILTER_H

#include "common.h"
#include <linux/filter.h>
#include <stddef.h>
#include <stdint.h>

/* SECCOMP_RET_DATA of vlcs's traps: tells them from other filters' in the
 * SIGSYS handler (si_errno). */
#define STRICT_TRAP_DATA 0x766c

/* Code addresses [start, end). */
struct code_range {
    uint64_t start, end;
};

/* Instructions in the program for these ranges. */
__attribute__((visibility("hidden"))) size_t strict_filter_size(const struct code_range *r,
                                                                size_t n);

/* The program that returns SECCOMP_RET_TRAP | STRICT_TRAP_DATA for
 * sched_getaffinity, sched_setaffinity, open, openat and openat2 made on
 * x86_64 from an instruction pointer inside one of the ranges, and
 * SECCOMP_RET_ALLOW for everything else.  Writes it into out; returns its
 * length, or 0 if it needs more than cap instructions. */
__attribute__((visibility("hidden"))) size_t
strict_filter_build(const struct code_range *r, size_t n, struct sock_filter *out, size_t cap);

#endif

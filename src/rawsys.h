/*
 * rawsys.h - raw syscalls (rawsys.c).
 */
#ifndef VLCS_RAWSYS_H
#define VLCS_RAWSYS_H

#include "common.h"

/* A syscall past every interposer and strict-mode filter; leaves errno alone
 * and returns the result or -errno. */
HIDDEN long raw_syscall(long nr, long a1, long a2, long a3, long a4, long a5, long a6);

#endif

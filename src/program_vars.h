/*
 * program_vars.h - glibc's variables that the program holds (program_vars.c).
 */
#ifndef VLCS_PROGRAM_VARS_H
#define VLCS_PROGRAM_VARS_H

#include "common.h"

struct program_var {
    const char *name; /* glibc's name for it (each alias once) */
    void *addr;       /* the program's copy, which glibc's code uses */
    size_t size;
};

/* The variables of glibc's libraries that the program copied into its
 * own data (R_X86_64_COPY), under each of their names; found once. */
HIDDEN size_t program_vars(const struct program_var **out);

#endif

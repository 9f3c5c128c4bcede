/*
 * error.h - errors (error.c).
 */
#ifndef VLCS_ERROR_H
#define VLCS_ERROR_H

#include "common.h"
#include "context.h"

/* Sets the calling thread's error: a vlcs_errcode_t and its sentence,
 * worded "Error <doing what>: <detail>".  A VLCS_E_LIMIT names its limit in
 * the bits above the code, LIMIT_CODE(VLCS_LIMIT_...), so that helpers which
 * return a code carry the limit with it; vlcs_errlimit() reads it back. */
#define LIMIT_CODE(limit) (VLCS_E_LIMIT | ((limit) << 8))
HIDDEN void set_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The code for a dlopen/dlmopen/dlsym failure, from dlerror()'s words
 * (glibc's limits as LIMIT_CODE). */
HIDDEN int dl_errcode(const char *dlerr);
/* The calling thread's error, kept across work that may fail on the side. */
struct saved_error {
    char text[1024];
    int code, limit;
};
HIDDEN void error_save(struct saved_error *e);
HIDDEN void error_restore(const struct saved_error *e);
struct vlcs_ctx;
/* Sets the error for a failed dlmopen into c, with what to do about one of
 * glibc's limits when one was hit. */
HIDDEN void load_error(struct vlcs_ctx *c, const char *what, const char *dlerr);

#endif

/*
 * error.c - the per-thread error sentence behind vlcs_error().
 */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_error[1024];

void set_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
}

VLCS_API const char *vlcs_error(void) { return last_error; }

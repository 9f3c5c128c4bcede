/*
 * error.c - the per-thread error behind vlcs_error() and vlcs_errcode(): a
 * sentence for people and a vlcs_errcode_t for programs, set together by
 * every failing call and kept until the next one.
 */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char last_error[1024];
static _Thread_local int last_code;

void set_error(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    last_code = code;
}

int dl_errcode(const char *dlerr)
{
    static const struct {
        const char *words;
        int code;
    } known[] = {
        /* glibc's words for its limits first: a dependency that cannot be
         * loaded for lack of static TLS names a file too. */
        {"cannot allocate memory in static TLS block", VLCS_E_LIMIT},
        {"no more namespaces available", VLCS_E_LIMIT},
        {"too many", VLCS_E_LIMIT},
        {"cannot open shared object file", VLCS_E_NOT_FOUND},
        {"No such file", VLCS_E_NOT_FOUND},
        {"undefined symbol", VLCS_E_NOT_FOUND},
    };
    for (size_t i = 0; dlerr != NULL && i < sizeof known / sizeof known[0]; i++)
        if (strstr(dlerr, known[i].words) != NULL)
            return known[i].code;
    return VLCS_E_SYSTEM;
}

VLCS_API const char *vlcs_error(void) { return last_error; }

VLCS_API int vlcs_errcode(void) { return last_code; }

/*
 * error.c - the per-thread error behind vlcs_error() and vlcs_errcode(): a
 * sentence for people and a vlcs_errcode_t for programs, set together by
 * every failing call and kept until the next one.
 */
#include "common.h"
#include "error.h"
#include "context.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char last_error[1024];
static _Thread_local int last_code, last_limit;

void set_error(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    last_code = code & 0xff;
    last_limit = (last_code == VLCS_E_LIMIT) ? code >> 8 : VLCS_LIMIT_NONE;
}

int dl_errcode(const char *dlerr)
{
    static const struct {
        const char *words;
        int code;
    } known[] = {
        /* glibc's words for its limits first: a dependency that cannot be
         * loaded for lack of static TLS names a file too. */
        {"cannot allocate memory in static TLS block", LIMIT_CODE(VLCS_LIMIT_STATIC_TLS)},
        {"no more namespaces available", LIMIT_CODE(VLCS_LIMIT_NAMESPACES)},
        {"too many", LIMIT_CODE(VLCS_LIMIT_OTHER)},
        {"cannot open shared object file", VLCS_E_NOT_FOUND},
        {"No such file", VLCS_E_NOT_FOUND},
        {"undefined symbol", VLCS_E_NOT_FOUND},
    };
    for (size_t i = 0; dlerr != NULL && i < sizeof known / sizeof known[0]; i++)
        if (strstr(dlerr, known[i].words) != NULL)
            return known[i].code;
    return VLCS_E_SYSTEM;
}

/* What to do about one of glibc's limits. */
static const char *limit_advice(int limit)
{
    const char *t = getenv("GLIBC_TUNABLES");
    bool tuned = t != NULL && strstr(t, "glibc.rtld.nns") != NULL;
    switch (limit) {
    case VLCS_LIMIT_NAMESPACES:
        return tuned ? "every linker namespace glibc allows is in use (glibc.rtld.nns is at "
                       "most 16; destroy contexts no longer needed, and see vlcs_ctx_destroy "
                       "for those whose namespace stays)"
                     : "every linker namespace glibc allows by default is in use; start the "
                       "program with `vlcs run -- PROGRAM` to raise glibc.rtld.nns to 16";
    case VLCS_LIMIT_STATIC_TLS:
        return tuned ? "the static TLS block is full; start the program with `vlcs run "
                       "--contexts N -- PROGRAM` (N: the contexts it needs) or raise "
                       "glibc.rtld.optional_static_tls in GLIBC_TUNABLES"
                     : "the static TLS block is full; start the program with `vlcs run -- "
                       "PROGRAM` to raise glibc.rtld.optional_static_tls (`--contexts N` "
                       "past 256 contexts)";
    default:
        return NULL;
    }
}

void load_error(vlcs_ctx *c, const char *what, const char *dlerr)
{
    int code = dl_errcode(dlerr);
    const char *advice = limit_advice(code >> 8);
    if (advice)
        set_error(code, "Error loading %s into context '%s': %s", what, c->name, advice);
    else
        set_error(code, "Error loading %s into context '%s': %s", what, c->name,
                  dlerr ? dlerr : "unknown dlmopen failure");
}

/* Work a successful call does on the side (automatic services) may fail
 * without the caller's error changing: successful calls leave it alone. */
void error_save(struct saved_error *e)
{
    memcpy(e->text, last_error, sizeof e->text);
    e->code = last_code;
    e->limit = last_limit;
}

void error_restore(const struct saved_error *e)
{
    memcpy(last_error, e->text, sizeof last_error);
    last_code = e->code;
    last_limit = e->limit;
}

VLCS_API const char *vlcs_error(void) { return last_error; }

VLCS_API int vlcs_errcode(void) { return last_code; }

VLCS_API int vlcs_errlimit(void) { return last_limit; }

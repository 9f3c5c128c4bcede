/*
 * dl_why.c - why a dlopen that libvlcs made for a context's code failed,
 * for that code's next dlerror().
 *
 * The interposer's dlerror asks here first: libvlcs's own dlopen and
 * dlmopen leave their message in the base libc's per-thread state, which
 * the namespace libc's (or a copy's) dlerror does not read.
 */
#include "common.h"
#include "dl_why.h"

#include <limits.h>

static __thread char why[PATH_MAX + 256];
static __thread bool pending;

void dl_why_set(const char *text)
{
    snprintf(why, sizeof why, "%s", text != NULL ? text : "unknown dlopen failure");
    pending = true;
}

const char *dl_why_take(void)
{
    if (!pending)
        return NULL;
    pending = false;
    return why;
}

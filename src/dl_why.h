/*
 * dl_why.h - a failed dlopen's message for the context code's dlerror (dl_why.c).
 */
#ifndef VLCS_DL_WHY_H
#define VLCS_DL_WHY_H

#include "common.h"

/* What this thread's next dlerror() in a context returns (a copy of text). */
HIDDEN void dl_why_set(const char *text);
/* That message, once; NULL when none is pending (the caller asks libc). */
HIDDEN const char *dl_why_take(void);

#endif

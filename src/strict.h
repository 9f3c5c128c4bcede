/*
 * strict.h - strict mode (strict.c).
 */
#ifndef VLCS_STRICT_H
#define VLCS_STRICT_H

#include "common.h"

/* Returns VLCS_OK, or a vlcs_errcode_t with err set. */
HIDDEN int strict_enable(char *err, size_t errsize);
HIDDEN bool strict_active(void);
/* Cover code newly loaded into contexts with a filter (after each load). */
HIDDEN void strict_note_load(void);

#endif

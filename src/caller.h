/*
 * caller.h - which context's code is at an address (caller.c).
 */
#ifndef VLCS_CALLER_H
#define VLCS_CALLER_H

#include "common.h"
#include "context.h"

/* The context whose code is at addr (its namespace's, or a copy-mode
 * context's copy), or NULL: the base's, or no object's. */
HIDDEN vlcs_ctx *ctx_of_address(const void *addr);

#endif

/* Where libraries were found: elf_resolve's answers, remembered for the
 * process.  A later context loading what an earlier one found asks the
 * file system nothing (on a cluster's parallel file system each lookup
 * costs about a millisecond).  Forgotten all at once, as Python's
 * importlib.invalidate_caches() forgets its finders' (vlcs_invalidate_caches). */
#ifndef VLCS_RESOLVED_H
#define VLCS_RESOLVED_H

#include "common.h"
#include <stdbool.h>
#include <stddef.h>

/* The answer remembered for key, copied to real and found (PATH_MAX bytes
 * each; found may be NULL): true, or false when none is. */
bool resolved_lookup(const char *key, char *real, char *found);
/* Remembers real (and the path it was found as) as the answer for key
 * (nothing when out of memory). */
void resolved_remember(const char *key, const char *real, const char *found);
/* Forgets every answer. */
void resolved_forget(void);
/* Moves on whenever the answers are forgotten: what was made from them
 * (ns_tree.c's plans) is made again. */
unsigned resolved_generation(void);

#endif

/*
 * ns_root.h - a namespace's first object (ns_root.c).
 */
#ifndef VLCS_NS_ROOT_H
#define VLCS_NS_ROOT_H

#include "common.h"

/* The object a new namespace is opened from, as a memfd: needed[0], vlcs's
 * interposer, copied with needed[1..n) as its first DT_NEEDED entries, in
 * order (its own, libc.so.6, after them);
 * where the interposer has no room for them, a generated object whose
 * DT_NEEDED entries are all of needed.  Either way the namespace's global
 * scope is needed, in order.  -VLCS_E_* with err set on failure. */
HIDDEN int ns_root_make(const char *const *needed, size_t n, char *err, size_t errsize);

/* The read-only segments of lm, a copy ns_root_make made, become the pages
 * of `original`, the interposer's file it was copied from: the same bytes,
 * which /proc/PID/maps (what profilers read) then names by the file. */
HIDDEN void ns_root_share(const struct link_map *lm, int original);

#endif

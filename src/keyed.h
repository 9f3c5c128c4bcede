/*
 * keyed.h - a table from strings to pointers (keyed.c): open addressing,
 * grown as it fills; the caller locks and owns the values.  Where copy mode
 * found libraries (resolved.c) and the trees of namespaces' loads
 * (ns_tree.c) are kept in one.
 */
#ifndef VLCS_KEYED_H
#define VLCS_KEYED_H

#include "common.h"

struct keyed_entry {
    char *key; /* NULL: a free slot */
    void *value;
};

struct keyed {
    struct keyed_entry *slots; /* cap of them, a power of two */
    size_t cap, used;
};

/* key's value, or NULL. */
HIDDEN void *keyed_get(const struct keyed *t, const char *key);
/* The slot for key, made (its key copied, its value NULL) if it has none;
 * NULL when out of memory. */
HIDDEN struct keyed_entry *keyed_put(struct keyed *t, const char *key);
/* Every slot freed, each value given to drop first (if not NULL). */
HIDDEN void keyed_clear(struct keyed *t, void (*drop)(void *value));

#endif

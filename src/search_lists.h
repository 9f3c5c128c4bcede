/*
 * search_lists.h - glibc's search lists of dlopened objects, grown as its
 * global scope grows (search_lists.c).
 */
#ifndef VLCS_SEARCH_LISTS_H
#define VLCS_SEARCH_LISTS_H

#include "common.h"

/* The lists made here, newest first: a lookup may still read a replaced
 * one, so they are kept until the objects whose lists they were are gone. */
struct search_grown;

/* Appends to the search list of each of the n roots the objects of add's
 * list (add and what it needs) that it lacks, last, as glibc appends to
 * its global scope: objects loaded before bind to them lazily, and
 * dlsym(RTLD_DEFAULT) from them finds them.  keep (NULL: all) says which
 * may be appended: glibc does not know they are in those lists, so the
 * caller keeps them loaded while the roots are.  The lists made go on
 * *grown.  False where a list cannot be read (glibc's link maps are not
 * laid out as this file reads them): nothing is appended then. */
HIDDEN bool search_lists_append(struct link_map *const *roots, size_t n, struct link_map *add,
                                bool (*keep)(struct link_map *m, void *arg), void *arg,
                                struct search_grown **grown);
/* The lists of *grown let go of: their objects are gone. */
HIDDEN void search_lists_free(struct search_grown **grown);

#endif

/*
 * hwloc_abi.h - the part of hwloc 2's ABI (libhwloc.so.15) that places.c
 * uses, declared here so that vlcs builds without hwloc's headers and finds
 * the library when a place is first asked for.  The object's fields up to
 * its CPU set are hwloc 2's, unchanged since 2.0 (the soname is the ABI's
 * promise); tests/c/test_hwloc_abi.c checks them against hwloc.h wherever
 * that header is installed.
 */
#ifndef VLCS_HWLOC_ABI_H
#define VLCS_HWLOC_ABI_H

#include <stdint.h>

typedef struct vh_topology *vh_topology_t;
typedef const struct vh_bitmap *vh_const_bitmap_t;
typedef int vh_obj_type_t; /* hwloc_obj_type_t, an enum */

/* hwloc_get_type_depth's answers besides a depth (hwloc_get_type_depth_e) */
enum { VH_DEPTH_UNKNOWN = -1, VH_DEPTH_MULTIPLE = -2, VH_DEPTH_NUMANODE = -3 };

/* Room for hwloc_type_sscanf's union hwloc_obj_attr_u, which it fills only
 * as far as the size it is given allows. */
union vh_attr {
    uint64_t words[16];
};

/* struct hwloc_obj, as far as its cpuset. */
struct vh_obj {
    vh_obj_type_t type;
    char *subtype;
    unsigned os_index;
    char *name;
    uint64_t total_memory;
    void *attr;
    int depth;
    unsigned logical_index;
    struct vh_obj *next_cousin, *prev_cousin, *parent;
    unsigned sibling_rank;
    struct vh_obj *next_sibling, *prev_sibling;
    unsigned arity;
    struct vh_obj **children;
    struct vh_obj *first_child, *last_child;
    int symmetric_subtree;
    unsigned memory_arity;
    struct vh_obj *memory_first_child;
    unsigned io_arity;
    struct vh_obj *io_first_child;
    unsigned misc_arity;
    struct vh_obj *misc_first_child;
    vh_const_bitmap_t cpuset;
};
typedef struct vh_obj *vh_obj_t;

#endif

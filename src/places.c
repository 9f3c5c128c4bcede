/*
 * places.c - hwloc places in every CPU argument: "numa:0", "l3:0-1",
 * "core:0-7.pu:0" beside taskset lists.
 *
 * A place is one or more levels separated by '.', each a location type as
 * hwloc's tools name it (package, numa, l3, l2, core, pu, ...) and logical
 * indexes as a taskset-style list ("0-3,8") or "all".  The first level's
 * indexes count every object of that type in the machine; a later level's
 * count the objects of its type inside each object chosen so far, as
 * hwloc-calc reads them ("core:0-7.pu:0": the first hardware thread of
 * each of cores 0-7).  The CPUs are the union of the chosen objects'.
 *
 * libhwloc (hwloc 2, libhwloc.so.15) is loaded when a place is first given
 * (hwloc_find.c: the system's, else a pip-installed one; libvlcs runs
 * without it, and says so when one is asked for), and
 * vlcs builds without its headers: what is used of its ABI is declared in
 * hwloc_abi.h, so a pip install on a machine with only the run-time library
 * has places.  The topology is the
 * machine's, or VLCS_TOPOLOGY's: an hwloc XML export of another machine,
 * or "synthetic:DESC" (for planning a node one is not on, and for tests).
 */
#include "common.h"
#include "places.h"
#include "context.h"
#include "cpuset.h"
#include "error.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hwloc_abi.h"

static struct {
    int (*init)(vh_topology_t *);
    int (*set_xml)(vh_topology_t, const char *);
    int (*set_synthetic)(vh_topology_t, const char *);
    int (*load)(vh_topology_t);
    void (*destroy)(vh_topology_t);
    int (*type_sscanf)(const char *, vh_obj_type_t *, union vh_attr *, size_t);
    int (*type_depth)(vh_topology_t, vh_obj_type_t);
    unsigned (*nbobjs)(vh_topology_t, int);
    vh_obj_t (*obj)(vh_topology_t, int, unsigned);
    int (*included)(vh_const_bitmap_t, vh_const_bitmap_t);
    int (*first)(vh_const_bitmap_t);
    int (*next)(vh_const_bitmap_t, int);
    int (*iszero)(vh_const_bitmap_t);
} hw;

static pthread_mutex_t topo_lock = PTHREAD_MUTEX_INITIALIZER;
static vh_topology_t topo;
static char topo_error[1024]; /* why there is none, once tried */

/* The topology, loaded once (with topo_lock held); NULL with topo_error. */
static vh_topology_t topology(void)
{
    if (topo != NULL || topo_error[0] != '\0')
        return topo;
    void *lib = hwloc_find(topo_error, sizeof topo_error);
    if (lib == NULL)
        return NULL;
    /* hwloc 2 (soname 15): the ABI hwloc_abi.h declares */
    unsigned (*api)(void) = (unsigned (*)(void))dlsym(lib, "hwloc_get_api_version");
    if (api == NULL || api() < 0x20000 || api() >= 0x30000) {
        snprintf(topo_error, sizeof topo_error,
                 "the libhwloc loaded is not hwloc 2 (API version %#x); install hwloc 2.x "
                 "(apt install libhwloc15)",
                 api ? api() : 0);
        return NULL;
    }
    void **fn[] = {(void **)&hw.init,        (void **)&hw.set_xml,    (void **)&hw.set_synthetic,
                   (void **)&hw.load,        (void **)&hw.destroy,    (void **)&hw.type_sscanf,
                   (void **)&hw.type_depth,  (void **)&hw.nbobjs,     (void **)&hw.obj,
                   (void **)&hw.included,    (void **)&hw.first,      (void **)&hw.next,
                   (void **)&hw.iszero};
    const char *names[] = {"hwloc_topology_init", "hwloc_topology_set_xml",
                           "hwloc_topology_set_synthetic", "hwloc_topology_load",
                           "hwloc_topology_destroy", "hwloc_type_sscanf", "hwloc_get_type_depth",
                           "hwloc_get_nbobjs_by_depth", "hwloc_get_obj_by_depth",
                           "hwloc_bitmap_isincluded", "hwloc_bitmap_first", "hwloc_bitmap_next",
                           "hwloc_bitmap_iszero"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if ((*fn[i] = dlsym(lib, names[i])) == NULL) {
            snprintf(topo_error, sizeof topo_error, "libhwloc.so.15 lacks %s", names[i]);
            return NULL;
        }
    vh_topology_t t;
    if (hw.init(&t) != 0) {
        snprintf(topo_error, sizeof topo_error, "hwloc could not start");
        return NULL;
    }
    const char *given = getenv("VLCS_TOPOLOGY");
    int rc = 0;
    if (given != NULL && strncmp(given, "synthetic:", 10) == 0)
        rc = hw.set_synthetic(t, given + 10);
    else if (given != NULL && *given != '\0')
        rc = hw.set_xml(t, given);
    if (rc != 0 || hw.load(t) != 0) {
        hw.destroy(t);
        snprintf(topo_error, sizeof topo_error,
                 "the topology VLCS_TOPOLOGY names (%s) does not load: not an hwloc XML file "
                 "or synthetic description",
                 given ? given : "this machine");
        return NULL;
    }
    topo = t;
    return topo;
}

/* Logical indexes "0-3,8" or "all" below n into pick[]; -1 and err. */
static int parse_indexes(const char *s, size_t len, unsigned n, unsigned char *pick, char *err,
                         size_t errsize, const char *type)
{
    if (len == 3 && strncmp(s, "all", 3) == 0) {
        memset(pick, 1, n);
        return 0;
    }
    const char *p = s, *end = s + len;
    while (p < end) {
        char *q;
        unsigned long lo = strtoul(p, &q, 10), hi = lo;
        if (q == p || !isdigit((unsigned char)*p))
            goto bad;
        p = q;
        if (p < end && *p == '-') {
            hi = strtoul(p + 1, &q, 10);
            if (q == p + 1)
                goto bad;
            p = q;
        }
        if (hi < lo)
            goto bad;
        if (hi >= n) {
            if (n == 0)
                snprintf(err, errsize, "%s:%lu does not exist: there is no %s there", type, hi,
                         type);
            else if (n == 1)
                snprintf(err, errsize, "%s:%lu does not exist: there is only %s:0", type, hi, type);
            else
                snprintf(err, errsize, "%s:%lu does not exist: there are %s:0-%u", type, hi, type,
                         n - 1);
            return -1;
        }
        for (unsigned long i = lo; i <= hi; i++)
            pick[i] = 1;
        if (p < end && *p != ',')
            goto bad;
        if (p < end)
            p++;
    }
    return 0;
bad:
    snprintf(err, errsize, "\"%.*s\" are not indexes of %s: give a list like \"0-3,8\" or \"all\"",
             (int)len, s, type);
    return -1;
}

static void bits_into(vh_const_bitmap_t b, vmask *m)
{
    for (int i = hw.first(b); i >= 0; i = hw.next(b, i))
        if (i < VLCS_MAX_CPUS)
            m->w[i / 64] |= (uint64_t)1 << (i % 64);
}

#define MAX_CHOSEN 4096

/* with topo_lock held */
static int resolve(vh_topology_t t, const char *place, vmask *out, char *err, size_t errsize)
{
    vh_obj_t *chosen = malloc(MAX_CHOSEN * sizeof *chosen), *next = malloc(MAX_CHOSEN * sizeof *next);
    unsigned char *pick = malloc(MAX_CHOSEN);
    int rc = -1;
    if (!chosen || !next || !pick) {
        snprintf(err, errsize, "out of memory");
        goto out;
    }
    size_t nchosen = 1;
    chosen[0] = hw.obj(t, 0, 0); /* the machine */
    const char *p = place;
    while (isspace((unsigned char)*p))
        p++;
    for (;;) {
        size_t tlen = strcspn(p, ":");
        if (p[tlen] != ':' || tlen == 0 || tlen >= 32) {
            snprintf(err, errsize, "\"%s\" is not a place: give TYPE:INDEXES like \"numa:0\", "
                                   "\"l3:0-1\" or \"core:0-7.pu:0\"", place);
            goto out;
        }
        char type[32];
        memcpy(type, p, tlen);
        type[tlen] = '\0';
        vh_obj_type_t ty;
        union vh_attr attr;
        if (hw.type_sscanf(type, &ty, &attr, sizeof attr) != 0) {
            snprintf(err, errsize, "unknown location type \"%s\" in \"%s\": give package, numa, "
                                   "l3, l2, core or pu (hwloc's names)", type, place);
            goto out;
        }
        int depth = hw.type_depth(t, ty);
        if (depth == VH_DEPTH_UNKNOWN || depth == VH_DEPTH_MULTIPLE) {
            snprintf(err, errsize, "this machine has no %s (in \"%s\")", type, place);
            goto out;
        }
        const char *idx = p + tlen + 1;
        size_t ilen = strcspn(idx, ".");
        unsigned total = hw.nbobjs(t, depth);
        size_t nnext = 0;
        for (size_t c = 0; c < nchosen; c++) {
            /* the objects of this type inside the chosen one, in logical order */
            unsigned n = 0;
            for (unsigned i = 0; i < total; i++) {
                vh_obj_t o = hw.obj(t, depth, i);
                if (o->cpuset && !hw.iszero(o->cpuset) && hw.included(o->cpuset, chosen[c]->cpuset))
                    n++;
            }
            if (n > MAX_CHOSEN)
                n = MAX_CHOSEN;
            memset(pick, 0, n);
            if (parse_indexes(idx, ilen, n, pick, err, errsize, type) != 0)
                goto out;
            unsigned k = 0;
            for (unsigned i = 0; i < total && k < n; i++) {
                vh_obj_t o = hw.obj(t, depth, i);
                if (!o->cpuset || hw.iszero(o->cpuset) || !hw.included(o->cpuset, chosen[c]->cpuset))
                    continue;
                if (pick[k++] && nnext < MAX_CHOSEN)
                    next[nnext++] = o;
            }
        }
        vh_obj_t *swap = chosen;
        chosen = next;
        next = swap;
        nchosen = nnext;
        if (idx[ilen] != '.')
            break;
        p = idx + ilen + 1;
    }
    vmask m = {{0}};
    for (size_t c = 0; c < nchosen; c++)
        bits_into(chosen[c]->cpuset, &m);
    *out = m;
    rc = 0;
out:
    free(chosen);
    free(next);
    free(pick);
    return rc;
}

int cpus_parse(const char *cpus, vmask *out, char *err, size_t errsize)
{
    if (cpus == NULL || strchr(cpus, ':') == NULL) /* not a place: "numa:0", "core:0-7.pu:0" */
        return mask_parse(cpus, out, err, errsize);
    pthread_mutex_lock(&topo_lock);
    vh_topology_t t = topology();
    int rc = -1;
    if (t == NULL)
        snprintf(err, errsize, "%.*s", (int)errsize - 1, topo_error);
    else
        rc = resolve(t, cpus, out, err, errsize);
    pthread_mutex_unlock(&topo_lock);
    return rc;
}

VLCS_API int vlcs_topo_objects(const char *type, char *buf, unsigned long size)
{
    if (type == NULL || buf == NULL || size == 0) {
        set_error(VLCS_E_INVALID, "Error listing objects: a NULL type or buffer");
        return -1;
    }
    pthread_mutex_lock(&topo_lock);
    vh_topology_t t = topology();
    if (t == NULL) {
        set_error(VLCS_E_UNSUPPORTED, "Error listing %s objects: %s", type, topo_error);
        pthread_mutex_unlock(&topo_lock);
        return -1;
    }
    vh_obj_type_t ty;
    union vh_attr attr;
    if (hw.type_sscanf(type, &ty, &attr, sizeof attr) != 0) {
        pthread_mutex_unlock(&topo_lock);
        set_error(VLCS_E_INVALID,
                  "Error listing objects: unknown location type \"%s\": give package, numa, l3, "
                  "l2, core or pu",
                  type);
        return -1;
    }
    int depth = hw.type_depth(t, ty);
    size_t at = 0;
    buf[0] = '\0';
    unsigned total = depth >= 0 || depth == VH_DEPTH_NUMANODE ? hw.nbobjs(t, depth) : 0;
    for (unsigned i = 0; i < total; i++) {
        vh_obj_t o = hw.obj(t, depth, i);
        vmask m = {{0}};
        if (o->cpuset)
            bits_into(o->cpuset, &m);
        char list[4096];
        mask_format(&m, list, sizeof list);
        int n = snprintf(buf + at, size - at, "%s%s", i ? ";" : "", list);
        if (n < 0 || (size_t)n >= size - at) {
            pthread_mutex_unlock(&topo_lock);
            set_error(VLCS_E_INVALID, "Error listing %s objects: the buffer is too small", type);
            return -1;
        }
        at += (size_t)n;
    }
    pthread_mutex_unlock(&topo_lock);
    return (int)total;
}


VLCS_API int vlcs_place_cpus(const char *place, char *buf, unsigned long size)
{
    char err[512];
    vmask m;
    if (place == NULL || buf == NULL || size == 0) {
        set_error(VLCS_E_INVALID, "Error resolving a place: a NULL place or buffer");
        return -1;
    }
    if (cpus_parse(place, &m, err, sizeof err) != 0) {
        set_error(VLCS_E_INVALID, "Error resolving \"%s\": %s", place, err);
        return -1;
    }
    if ((size_t)mask_format(&m, buf, size) >= size) {
        set_error(VLCS_E_INVALID, "Error resolving \"%s\": the buffer is too small", place);
        return -1;
    }
    return mask_count(&m);
}

/*
 * copy_owners.c - which copy-mode context each loaded copy belongs to, by
 * the name glibc knows the copy by.  copies.c fills the table; the address
 * owner lookups (caller.c) and the fault handler (fault.c, without waiting
 * for its lock) read it.
 */
#include "common.h"
#include "copy_owners.h"
#include "context.h"
#include "registry.h"
#include "service.h"

#include <stdio.h>
#include <string.h>

/* Which context each loaded copy is (by the name glibc knows it by): a
 * table of its own, filled before a copy's constructors run (they may ask,
 * through libpython's forwarder, whose interpreter dict they get), and
 * read without any other lock held. */
struct owner_rec {
    char path[FD_PATH_SIZE]; /* its name while it loads */
    const void *lm;          /* once loaded (it is named after its original then) */
    vlcs_ctx *ctx;
};
static pthread_mutex_t owners_lock = PTHREAD_MUTEX_INITIALIZER;
static struct owner_rec *owners;
static size_t nowners, capowners;

int owners_add(const char *path, vlcs_ctx *c)
{
    pthread_mutex_lock(&owners_lock);
    int rc = array_grow((void **)&owners, &capowners, nowners, sizeof *owners);
    if (rc == 0) {
        snprintf(owners[nowners].path, sizeof owners[nowners].path, "%s", path);
        owners[nowners].lm = NULL;
        owners[nowners++].ctx = c;
    }
    pthread_mutex_unlock(&owners_lock);
    return rc;
}

void owners_loaded(const char *path, const void *lm)
{
    pthread_mutex_lock(&owners_lock);
    for (size_t i = 0; i < nowners; i++)
        if (strcmp(owners[i].path, path) == 0)
            owners[i].lm = lm;
    pthread_mutex_unlock(&owners_lock);
}

void owners_remove(const char *path)
{
    pthread_mutex_lock(&owners_lock);
    for (size_t i = 0; i < nowners; i++)
        if (strcmp(owners[i].path, path) == 0) {
            owners[i] = owners[--nowners];
            break;
        }
    pthread_mutex_unlock(&owners_lock);
}

vlcs_ctx *copies_owner(const void *link_map)
{
    const struct link_map *m = link_map;
    vlcs_ctx *found = NULL;
    if (m == NULL || m->l_name == NULL || strncmp(m->l_name, "/proc/", 6) != 0)
        return NULL;
    pthread_mutex_lock(&owners_lock);
    for (size_t i = 0; i < nowners && !found; i++)
        if (owners[i].lm == m || strcmp(owners[i].path, m->l_name) == 0)
            found = owners[i].ctx;
    pthread_mutex_unlock(&owners_lock);
    return found;
}

vlcs_ctx *copies_owner_nowait(const void *link_map)
{
    const struct link_map *m = link_map;
    vlcs_ctx *found = NULL;
    if (m == NULL || m->l_name == NULL || strncmp(m->l_name, "/proc/", 6) != 0 ||
        pthread_mutex_trylock(&owners_lock) != 0)
        return NULL;
    for (size_t i = 0; i < nowners && !found; i++)
        if (owners[i].lm == m)
            found = owners[i].ctx;
    pthread_mutex_unlock(&owners_lock);
    return found;
}

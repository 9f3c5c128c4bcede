/* Where libraries were found (resolved.h): a table (keyed.c) of keys (what
 * was searched for, and from where) to real paths, under one lock. */
#define _GNU_SOURCE
#include "common.h"
#include "resolved.h"
#include "keyed.h"
#include "context.h"
#include "copy_origins.h"

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct answer {
    char *real;
    char *found; /* the path as found, before realpath */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct keyed table; /* key -> struct answer */
static _Atomic unsigned generation; /* moves on at each forget */

unsigned resolved_generation(void) { return atomic_load(&generation); }

bool resolved_lookup(const char *key, char *real, char *found)
{
    pthread_mutex_lock(&lock);
    const struct answer *a = keyed_get(&table, key);
    if (a != NULL) {
        snprintf(real, PATH_MAX, "%s", a->real);
        if (found != NULL)
            snprintf(found, PATH_MAX, "%s", a->found);
    }
    pthread_mutex_unlock(&lock);
    return a != NULL;
}

static void answer_free(void *p)
{
    struct answer *a = p;
    free(a->real);
    free(a->found);
    free(a);
}

void resolved_remember(const char *key, const char *real, const char *found)
{
    struct answer *a = calloc(1, sizeof *a);
    if (a == NULL || (a->real = strdup(real)) == NULL || (a->found = strdup(found)) == NULL) {
        if (a != NULL)
            answer_free(a);
        return; /* out of memory: asked again next time */
    }
    pthread_mutex_lock(&lock);
    struct keyed_entry *e = keyed_put(&table, key);
    if (e != NULL && e->value == NULL) {
        e->value = a;
        a = NULL;
    }
    pthread_mutex_unlock(&lock);
    if (a != NULL)
        answer_free(a);
}

void resolved_forget(void)
{
    pthread_mutex_lock(&lock);
    keyed_clear(&table, answer_free);
    atomic_fetch_add(&generation, 1);
    pthread_mutex_unlock(&lock);
}

VLCS_API int vlcs_invalidate_caches(void)
{
    resolved_forget();
    origins_recheck();
    return 0;
}

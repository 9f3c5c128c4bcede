/* Where libraries were found (resolved.h): a hash table of keys (what was
 * searched for, and from where) to real paths, under one lock. */
#define _GNU_SOURCE
#include "common.h"
#include "resolved.h"
#include "context.h"
#include "copy_origins.h"

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct answer {
    char *key;
    char *real;
    char *found; /* the path as found, before realpath */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct answer *table; /* open addressing; cap a power of two */
static size_t cap, used;
static _Atomic unsigned generation; /* moves on at each forget */

unsigned resolved_generation(void) { return atomic_load(&generation); }

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static struct answer *slot(struct answer *t, size_t n, const char *key)
{
    for (size_t i = hash(key) & (n - 1);; i = (i + 1) & (n - 1))
        if (t[i].key == NULL || strcmp(t[i].key, key) == 0)
            return &t[i];
}

bool resolved_lookup(const char *key, char *real, char *found)
{
    bool known = false;
    pthread_mutex_lock(&lock);
    if (table != NULL) {
        const struct answer *a = slot(table, cap, key);
        if (a->key != NULL) {
            snprintf(real, PATH_MAX, "%s", a->real);
            if (found != NULL)
                snprintf(found, PATH_MAX, "%s", a->found);
            known = true;
        }
    }
    pthread_mutex_unlock(&lock);
    return known;
}

/* Twice the room, every answer moved; false when out of memory. */
static bool grow(void)
{
    size_t n = cap ? cap * 2 : 256;
    struct answer *t = calloc(n, sizeof *t);
    if (t == NULL)
        return false;
    for (size_t i = 0; i < cap; i++)
        if (table[i].key != NULL)
            *slot(t, n, table[i].key) = table[i];
    free(table);
    table = t;
    cap = n;
    return true;
}

void resolved_remember(const char *key, const char *real, const char *found)
{
    pthread_mutex_lock(&lock);
    if ((used + 1) * 4 <= cap * 3 || grow()) {
        struct answer *a = slot(table, cap, key);
        if (a->key == NULL) {
            char *k = strdup(key), *r = strdup(real), *f = strdup(found);
            if (k != NULL && r != NULL && f != NULL) {
                a->key = k;
                a->real = r;
                a->found = f;
                used++;
            } else {
                free(k);
                free(r);
                free(f);
            }
        }
    }
    pthread_mutex_unlock(&lock);
}

void resolved_forget(void)
{
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < cap; i++) {
        free(table[i].key);
        free(table[i].real);
        free(table[i].found);
    }
    free(table);
    table = NULL;
    cap = used = 0;
    atomic_fetch_add(&generation, 1);
    pthread_mutex_unlock(&lock);
}

VLCS_API int vlcs_invalidate_caches(void)
{
    resolved_forget();
    origins_recheck();
    return 0;
}

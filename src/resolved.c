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
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct answer *table; /* open addressing; cap a power of two */
static size_t cap, used;

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

bool resolved_lookup(const char *key, char *out)
{
    bool found = false;
    pthread_mutex_lock(&lock);
    if (table != NULL) {
        const struct answer *a = slot(table, cap, key);
        if (a->key != NULL) {
            strncpy(out, a->real, PATH_MAX - 1);
            out[PATH_MAX - 1] = '\0';
            found = true;
        }
    }
    pthread_mutex_unlock(&lock);
    return found;
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

void resolved_remember(const char *key, const char *real)
{
    pthread_mutex_lock(&lock);
    if ((used + 1) * 4 <= cap * 3 || grow()) {
        struct answer *a = slot(table, cap, key);
        if (a->key == NULL) {
            char *k = strdup(key), *r = strdup(real);
            if (k != NULL && r != NULL) {
                a->key = k;
                a->real = r;
                used++;
            } else {
                free(k);
                free(r);
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
    }
    free(table);
    table = NULL;
    cap = used = 0;
    pthread_mutex_unlock(&lock);
}

VLCS_API int vlcs_invalidate_caches(void)
{
    resolved_forget();
    origins_recheck();
    return 0;
}

/* A table from strings to pointers (keyed.h). */
#include "common.h"
#include "keyed.h"
#include "registry.h"

#include <stdlib.h>
#include <string.h>

static struct keyed_entry *slot(struct keyed_entry *s, size_t cap, const char *key)
{
    for (size_t i = str_hash(key) & (cap - 1);; i = (i + 1) & (cap - 1))
        if (s[i].key == NULL || strcmp(s[i].key, key) == 0)
            return &s[i];
}

void *keyed_get(const struct keyed *t, const char *key)
{
    if (t->slots == NULL)
        return NULL;
    const struct keyed_entry *e = slot(t->slots, t->cap, key);
    return e->key != NULL ? e->value : NULL;
}

/* Twice the room, every entry moved; false when out of memory. */
static bool grow(struct keyed *t)
{
    size_t n = t->cap ? t->cap * 2 : 64;
    struct keyed_entry *s = calloc(n, sizeof *s);
    if (s == NULL)
        return false;
    for (size_t i = 0; i < t->cap; i++)
        if (t->slots[i].key != NULL)
            *slot(s, n, t->slots[i].key) = t->slots[i];
    free(t->slots);
    t->slots = s;
    t->cap = n;
    return true;
}

struct keyed_entry *keyed_put(struct keyed *t, const char *key)
{
    if ((t->used + 1) * 4 > t->cap * 3 && !grow(t))
        return NULL;
    struct keyed_entry *e = slot(t->slots, t->cap, key);
    if (e->key == NULL) {
        if ((e->key = strdup(key)) == NULL)
            return NULL;
        e->value = NULL;
        t->used++;
    }
    return e;
}

void keyed_clear(struct keyed *t, void (*drop)(void *value))
{
    for (size_t i = 0; i < t->cap; i++)
        if (t->slots[i].key != NULL) {
            if (drop != NULL && t->slots[i].value != NULL)
                drop(t->slots[i].value);
            free(t->slots[i].key);
        }
    free(t->slots);
    t->slots = NULL;
    t->cap = t->used = 0;
}

/* A library that takes thread-specific data keys as libraries do (libgomp
 * one per copy, others one per object): each context's copy has its own
 * keys, values and count of destructor calls (test_keys). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define MAX_KEYS 512

static pthread_key_t keys[MAX_KEYS];
static int nkeys;
static atomic_int destroyed;

static void on_thread_end(void *value)
{
    (void)value;
    atomic_fetch_add(&destroyed, 1);
}

/* n more keys: their count, or -errno of the first that failed */
int keys_make(int n)
{
    for (int i = 0; i < n && nkeys < MAX_KEYS; i++) {
        int rc = pthread_key_create(&keys[nkeys], on_thread_end);
        if (rc != 0)
            return -rc;
        nkeys++;
    }
    return nkeys;
}

/* the last n keys deleted */
int keys_drop(int n)
{
    for (; n > 0 && nkeys > 0; n--)
        if (pthread_key_delete(keys[--nkeys]) != 0)
            return -1;
    return nkeys;
}

/* key i holds base + i + 1 on this thread: 0, or -errno */
int keys_set(int base)
{
    for (int i = 0; i < nkeys; i++) {
        int rc = pthread_setspecific(keys[i], (void *)(intptr_t)(base + i + 1));
        if (rc != 0)
            return -rc;
    }
    return 0;
}

/* how many keys hold what keys_set(base) put there, on this thread */
int keys_holding(int base)
{
    int n = 0;
    for (int i = 0; i < nkeys; i++)
        n += pthread_getspecific(keys[i]) == (void *)(intptr_t)(base + i + 1);
    return n;
}

/* how many keys hold anything on this thread */
int keys_set_count(void)
{
    int n = 0;
    for (int i = 0; i < nkeys; i++)
        n += pthread_getspecific(keys[i]) != NULL;
    return n;
}

int keys_destroyed(void) { return atomic_load(&destroyed); }

/*
 * keys.c - thread-specific data keys for contexts' libraries, past glibc's
 * 1,024 per process.
 *
 * Every copy of a library takes its own keys (libgomp one per copy for its
 * thread pool's destructor), and glibc's table (PTHREAD_KEYS_MAX) is fixed:
 * at about 500 contexts with libgomp, the next copy's pthread_key_create
 * failed and libgomp ended the process.  Contexts' keys come from here
 * (the interposer's pthread_key_* go to these): glibc's own while the
 * contexts hold fewer than REAL_KEYS of them, so that the base keeps at
 * least as many and the first keys cost what glibc's cost; past that,
 * keys of vlcs's, numbered from VIRTUAL and multiplexed on one key of
 * glibc's whose value, per thread, is the table of their values.
 *
 * As glibc's: a key's number is reused once deleted, and a value set under
 * its old life reads as NULL (a sequence number per key, odd while in
 * use); at a thread's exit each non-NULL value's destructor runs, the key
 * cleared first, in rounds while destructors set values again, up to
 * PTHREAD_DESTRUCTOR_ITERATIONS.
 */
#include "common.h"
#include "keys.h"
#include "context.h"
#include "registry.h"

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

enum {
    REAL_KEYS = PTHREAD_KEYS_MAX / 2,
    MAX_VIRTUAL = 1 << 16,
};
#define VIRTUAL 0x40000000u

struct vkey {
    _Atomic unsigned long seq; /* odd: in use */
    void (*_Atomic dtor)(void *);
};

struct vvalues {
    size_t cap;
    struct {
        unsigned long seq; /* the key's when the value was set */
        void *value;
    } slot[];
};

static struct vkey vkeys[MAX_VIRTUAL];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int real_used;     /* glibc's keys held for contexts; under lock */
static unsigned long virtual_used; /* under lock */
static unsigned next_free; /* where the search for a free virtual key starts */
static pthread_key_t values_key;
static _Atomic bool values_key_made;

static bool is_virtual(pthread_key_t key) { return (key & VIRTUAL) != 0; }

/* A thread's values end with it: the destructors of those set, as glibc
 * runs them. */
static void values_end(void *arg)
{
    struct vvalues *v = arg;
    /* back in place while destructors run: one that sets a value again
     * sets it here, for the next round */
    pthread_setspecific(values_key, v);
    for (int round = 0; round < PTHREAD_DESTRUCTOR_ITERATIONS; round++) {
        bool ran = false;
        for (size_t i = 0; i < v->cap; i++) {
            void *value = v->slot[i].value;
            if (value == NULL)
                continue;
            v->slot[i].value = NULL;
            unsigned long seq = atomic_load_explicit(&vkeys[i].seq, memory_order_acquire);
            void (*dtor)(void *) = atomic_load_explicit(&vkeys[i].dtor, memory_order_acquire);
            if (v->slot[i].seq == seq && (seq & 1) && dtor != NULL) {
                dtor(value);
                ran = true;
            }
        }
        v = pthread_getspecific(values_key); /* a destructor may have grown it */
        if (!ran || v == NULL)
            break;
    }
    pthread_setspecific(values_key, NULL);
    free(v);
}

int key_create(pthread_key_t *key, void (*dtor)(void *))
{
    pthread_mutex_lock(&lock);
    if (real_used < REAL_KEYS) {
        int rc = pthread_key_create(key, dtor);
        if (rc == 0) {
            real_used++;
            pthread_mutex_unlock(&lock);
            return 0;
        }
        if (rc != EAGAIN) {
            pthread_mutex_unlock(&lock);
            return rc;
        }
        /* the process holds glibc's last keys: on to vlcs's */
    }
    if (!atomic_load(&values_key_made)) {
        int rc = pthread_key_create(&values_key, values_end);
        if (rc != 0) {
            pthread_mutex_unlock(&lock);
            return rc;
        }
        atomic_store(&values_key_made, true);
    }
    for (unsigned n = 0; n < MAX_VIRTUAL; n++) {
        unsigned i = (next_free + n) % MAX_VIRTUAL;
        unsigned long seq = atomic_load(&vkeys[i].seq);
        if (seq & 1)
            continue;
        atomic_store(&vkeys[i].dtor, dtor);
        atomic_store_explicit(&vkeys[i].seq, seq + 1, memory_order_release);
        next_free = (i + 1) % MAX_VIRTUAL;
        virtual_used++;
        pthread_mutex_unlock(&lock);
        *key = VIRTUAL | i;
        return 0;
    }
    pthread_mutex_unlock(&lock);
    return EAGAIN;
}

int key_delete(pthread_key_t key)
{
    if (!is_virtual(key)) {
        int rc = pthread_key_delete(key);
        if (rc == 0) {
            pthread_mutex_lock(&lock);
            real_used--;
            pthread_mutex_unlock(&lock);
        }
        return rc;
    }
    unsigned i = key & ~VIRTUAL;
    if (i >= MAX_VIRTUAL)
        return EINVAL;
    unsigned long seq = atomic_load(&vkeys[i].seq);
    if (!(seq & 1) || !atomic_compare_exchange_strong(&vkeys[i].seq, &seq, seq + 1))
        return EINVAL;
    pthread_mutex_lock(&lock);
    virtual_used--;
    pthread_mutex_unlock(&lock);
    return 0;
}

void key_room(unsigned long *used, unsigned long *limit)
{
    pthread_mutex_lock(&lock);
    *used = (unsigned long)real_used + virtual_used;
    pthread_mutex_unlock(&lock);
    *limit = REAL_KEYS + MAX_VIRTUAL;
}

void *key_get(pthread_key_t key)
{
    if (!is_virtual(key))
        return pthread_getspecific(key);
    unsigned i = key & ~VIRTUAL;
    if (!atomic_load_explicit(&values_key_made, memory_order_acquire))
        return NULL;
    struct vvalues *v = pthread_getspecific(values_key);
    if (v == NULL || i >= v->cap ||
        v->slot[i].seq != atomic_load_explicit(&vkeys[i].seq, memory_order_acquire))
        return NULL;
    return v->slot[i].value;
}

int key_set(pthread_key_t key, const void *value)
{
    if (!is_virtual(key))
        return pthread_setspecific(key, value);
    unsigned i = key & ~VIRTUAL;
    if (i >= MAX_VIRTUAL || !atomic_load_explicit(&values_key_made, memory_order_acquire))
        return EINVAL;
    unsigned long seq = atomic_load_explicit(&vkeys[i].seq, memory_order_acquire);
    if (!(seq & 1))
        return EINVAL;
    struct vvalues *v = pthread_getspecific(values_key);
    if (v == NULL || i >= v->cap) {
        if (value == NULL)
            return 0;
        size_t old = v ? v->cap : 0, cap = old ? old : 16;
        while (cap <= i)
            cap *= 2;
        struct vvalues *grown = realloc(v, sizeof *v + cap * sizeof v->slot[0]);
        if (grown == NULL)
            return ENOMEM;
        memset(&grown->slot[old], 0, (cap - old) * sizeof grown->slot[0]);
        grown->cap = cap;
        if (pthread_setspecific(values_key, grown) != 0) {
            if (v == NULL)
                free(grown);
            return ENOMEM;
        }
        v = grown;
    }
    v->slot[i].seq = seq;
    v->slot[i].value = (void *)value;
    return 0;
}

/* ---- which context's libraries created each key --------------------------
 * A namespace that is unloaded deletes the keys its libraries left, whose
 * destructors would be gone (unload.c); a key is recorded with its
 * context when the interposer's pthread_key_create takes it.  A key
 * deleted so stays recorded, retired, while the namespace is loaded: a
 * library that stays loaded (marked not to be unloaded, as LLVM's OpenMP
 * is) deletes it again at the process's exit, and ends the process if
 * that fails. */

struct key_rec {
    vlcs_ctx *ctx;
    pthread_key_t key;
    void (*dtor)(void *);
    bool retired; /* deleted by unloading */
};

static pthread_mutex_t keys_lock = PTHREAD_MUTEX_INITIALIZER;
static struct key_rec *keys;
static size_t nkeys, capkeys;

int ns_key_create(vlcs_ctx *c, pthread_key_t *key, void (*dtor)(void *))
{
    int rc = key_create(key, dtor);
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&keys_lock);
    rc = array_grow((void **)&keys, &capkeys, nkeys, sizeof *keys);
    if (rc == 0)
        keys[nkeys++] = (struct key_rec){c, *key, dtor, false};
    pthread_mutex_unlock(&keys_lock);
    if (rc != 0) {
        key_delete(*key);
        return ENOMEM;
    }
    return 0;
}

/* A key its namespace did not create is not the namespace's to delete;
 * one that unloading deleted already is deleted (0), and not again: the
 * number may be another's now. */
int ns_key_delete(vlcs_ctx *c, pthread_key_t key)
{
    bool ours = false, retired = false;
    pthread_mutex_lock(&keys_lock);
    for (size_t i = 0; i < nkeys && !ours && !retired; i++)
        if (keys[i].ctx == c && keys[i].key == key) {
            ours = !keys[i].retired;
            retired = keys[i].retired;
            keys[i] = keys[--nkeys];
        }
    pthread_mutex_unlock(&keys_lock);
    return ours ? key_delete(key) : retired ? 0 : EINVAL;
}

/* The keys of c, copied: destructors may create or delete keys. */
static size_t keys_of(vlcs_ctx *c, struct key_rec *out, size_t cap)
{
    size_t n = 0;
    pthread_mutex_lock(&keys_lock);
    for (size_t i = 0; i < nkeys && n < cap; i++)
        if (keys[i].ctx == c && !keys[i].retired)
            out[n++] = keys[i];
    pthread_mutex_unlock(&keys_lock);
    return n;
}

#define MAX_NS_KEYS 256

/* What thread exit would do for this thread, in as many rounds. */
void keys_run_destructors_here(vlcs_ctx *c)
{
    struct key_rec k[MAX_NS_KEYS];
    for (int round = 0; round < PTHREAD_DESTRUCTOR_ITERATIONS; round++) {
        bool ran = false;
        size_t n = keys_of(c, k, MAX_NS_KEYS);
        for (size_t i = 0; i < n; i++) {
            void *v = key_get(k[i].key);
            if (v != NULL && k[i].dtor != NULL) {
                key_set(k[i].key, NULL);
                k[i].dtor(v);
                ran = true;
            }
        }
        if (!ran)
            break;
    }
}

void keys_delete_of(vlcs_ctx *c)
{
    pthread_mutex_lock(&keys_lock);
    for (size_t i = 0; i < nkeys; i++)
        if (keys[i].ctx == c && !keys[i].retired) {
            key_delete(keys[i].key);
            keys[i].retired = true;
        }
    pthread_mutex_unlock(&keys_lock);
}

void keys_forget_retired(vlcs_ctx *c)
{
    pthread_mutex_lock(&keys_lock);
    for (size_t i = 0; i < nkeys;)
        if (keys[i].ctx == c && keys[i].retired)
            keys[i] = keys[--nkeys];
        else
            i++;
    pthread_mutex_unlock(&keys_lock);
}

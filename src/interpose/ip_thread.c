/*
 * ip_thread.c - threads created by the namespace's libraries.
 *
 * Each new thread starts in a trampoline that confines it to the context's
 * CPUs and registers it with libvlcs before the library's start routine
 * runs, and deregisters it however it ends (return or pthread_exit).
 */
#define _GNU_SOURCE
#include "ip.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

struct start {
    void *(*fn)(void *);
    void *arg;
    const struct vlcs_ip_api *api;
};

static void thread_end(void *p)
{
    const struct vlcs_ip_api *a = p;
    a->thread_end(a->ctx);
}

static void *trampoline(void *p)
{
    struct start s = *(struct start *)p;
    free(p);
    void *ret;
    s.api->thread_begin(s.api->ctx);
    pthread_cleanup_push(thread_end, (void *)s.api);
    ret = s.fn(s.arg);
    pthread_cleanup_pop(1);
    return ret;
}

IP_EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
                             void *arg)
{
    NEXT(pthread_create_fn, pthread_create);
    const struct vlcs_ip_api *a = vlcs_ip;
    if (a == NULL)
        return next_pthread_create(th, attr, fn, arg);
    struct start *s = malloc(sizeof *s);
    if (s == NULL)
        return EAGAIN;
    s->fn = fn;
    s->arg = arg;
    s->api = a;
    int rc = next_pthread_create(th, attr, trampoline, s);
    if (rc != 0)
        free(s);
    else
        a->thread_created(a->ctx);
    return rc;
}

/* Before binding, the namespace's libc serves keys; nothing of the user's
 * runs before binding, so no key crosses over. */
typedef int (*key_create_fn)(pthread_key_t *, void (*)(void *));
typedef int (*key_delete_fn)(pthread_key_t);
typedef void *(*getspecific_fn)(pthread_key_t);
/* Declared without glibc's access attribute: passing the pointer reads
 * nothing through it. */
typedef int (*setspecific_fn)(pthread_key_t, void *);

IP_EXPORT int pthread_key_create(pthread_key_t *key, void (*dtor)(void *))
{
    const struct vlcs_ip_api *a = vlcs_ip;
    if (a != NULL)
        return a->key_create(key, dtor);
    NEXT(key_create_fn, pthread_key_create);
    return next_pthread_key_create(key, dtor);
}

IP_EXPORT int pthread_key_delete(pthread_key_t key)
{
    const struct vlcs_ip_api *a = vlcs_ip;
    if (a != NULL)
        return a->key_delete(key);
    NEXT(key_delete_fn, pthread_key_delete);
    return next_pthread_key_delete(key);
}

IP_EXPORT void *pthread_getspecific(pthread_key_t key)
{
    const struct vlcs_ip_api *a = vlcs_ip;
    if (a != NULL)
        return a->getspecific(key);
    NEXT(getspecific_fn, pthread_getspecific);
    return next_pthread_getspecific(key);
}

IP_EXPORT int pthread_setspecific(pthread_key_t key, const void *value)
{
    const struct vlcs_ip_api *a = vlcs_ip;
    if (a != NULL)
        return a->setspecific(key, (void *)value);
    NEXT(setspecific_fn, pthread_setspecific);
    return next_pthread_setspecific(key, (void *)value);
}

/*
 * ip_thread.c - threads created by the namespace's libraries.
 *
 * Each new thread is started by the base libc and begins in a trampoline
 * that confines it to the context's CPUs and registers it with libvlcs
 * before the library's start routine runs; libvlcs deregisters it at its
 * end, from a key destructor.  Ending in the base libc runs the thread's key
 * destructors and frees its cache in the base allocator (a thread of the
 * namespace's libc left 688 bytes of it behind), and pthread_exit unwinds
 * with the base's unwinder (the namespace's libc would load libgcc_s into
 * the namespace for good).
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

static void *trampoline(void *p)
{
    struct start s = *(struct start *)p;
    free(p);
    s.api->thread_begin(s.api->ctx, s.fn);
    return s.fn(s.arg);
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
    int rc = a->pthread_create(th, attr, trampoline, s);
    if (rc != 0)
        free(s);
    else
        a->thread_created(a->ctx);
    return rc;
}

IP_EXPORT __attribute__((noreturn)) void pthread_exit(void *ret)
{
    const struct vlcs_ip_api *a = vlcs_ip;
    if (a != NULL)
        a->pthread_exit(ret);
    ((void (*)(void *))ip_next("pthread_exit"))(ret);
    __builtin_unreachable();
}

IP_EXPORT int pthread_cancel(pthread_t th)
{
    const struct vlcs_ip_api *a = vlcs_ip;
    if (a != NULL)
        return a->pthread_cancel(th);
    return ((int (*)(pthread_t))ip_next("pthread_cancel"))(th);
}

IP_EXPORT int pthread_join(pthread_t th, void **ret)
{
    const struct vlcs_ip_api *a = vlcs_ip;
    if (a != NULL)
        return a->pthread_join(th, ret);
    return ((int (*)(pthread_t, void **))ip_next("pthread_join"))(th, ret);
}

IP_EXPORT int pthread_detach(pthread_t th)
{
    const struct vlcs_ip_api *a = vlcs_ip;
    if (a != NULL)
        return a->pthread_detach(th);
    return ((int (*)(pthread_t))ip_next("pthread_detach"))(th);
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
        return a->key_create(a->ctx, key, dtor);
    NEXT(key_create_fn, pthread_key_create);
    return next_pthread_key_create(key, dtor);
}

IP_EXPORT int pthread_key_delete(pthread_key_t key)
{
    const struct vlcs_ip_api *a = vlcs_ip;
    if (a != NULL)
        return a->key_delete(a->ctx, key);
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

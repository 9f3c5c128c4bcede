/*
 * fork.c - fork() with contexts: the fork handlers of libraries in
 * namespaces.
 *
 * A library registers its fork handlers with pthread_atfork (OpenBLAS
 * shuts its thread pool down before fork and marks it gone in the child).
 * In a namespace that call would reach the namespace's own libc, whose
 * handler list nobody runs: fork() is the base libc's (Python's os.fork,
 * multiprocessing), so the child of a process whose context had used
 * OpenBLAS's threads hung in its next large GEMM.  The interposer hands the
 * registration here instead; the base libc runs this file's handlers, which
 * run the namespaces' ones in glibc's order (prepare last-registered first,
 * parent and child first-registered first).  A namespace that goes away
 * takes its handlers with it (fork_forget), which the base libc's own list
 * could not do: it has no exported way to unregister.
 */
#include "common.h"
#include "fork.h"
#include "context.h"

#include <errno.h>
#include <stdlib.h>

struct handler {
    struct handler *next; /* in registration order */
    vlcs_ctx *ctx;
    void (*prepare)(void);
    void (*parent)(void);
    void (*child)(void);
};

/* Held from prepare to parent (or child) so that the list fork runs is the
 * list it prepared with. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct handler *first, **last = &first;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void run_prepare_from(struct handler *h)
{
    if (h == NULL)
        return;
    run_prepare_from(h->next); /* last registered, first prepared */
    if (h->prepare)
        h->prepare();
}

static void on_prepare(void)
{
    pthread_mutex_lock(&lock);
    run_prepare_from(first);
}

static void on_parent(void)
{
    for (struct handler *h = first; h; h = h->next)
        if (h->parent)
            h->parent();
    pthread_mutex_unlock(&lock);
}

static void on_child(void)
{
    for (struct handler *h = first; h; h = h->next)
        if (h->child)
            h->child();
    pthread_mutex_init(&lock, NULL);
}

static void install(void) { pthread_atfork(on_prepare, on_parent, on_child); }

void fork_install(void) { pthread_once(&once, install); }

int fork_register(vlcs_ctx *c, void (*prepare)(void), void (*parent)(void), void (*child)(void),
                  void *dso)
{
    (void)dso; /* the namespace, not the object, is what goes away */
    fork_install();
    struct handler *h = malloc(sizeof *h);
    if (h == NULL)
        return ENOMEM;
    *h = (struct handler){NULL, c, prepare, parent, child};
    pthread_mutex_lock(&lock);
    *last = h;
    last = &h->next;
    pthread_mutex_unlock(&lock);
    return 0;
}

void fork_forget(vlcs_ctx *c)
{
    pthread_mutex_lock(&lock);
    for (struct handler **p = &first; *p;) {
        struct handler *h = *p;
        if (h->ctx == c) {
            *p = h->next;
            free(h);
        } else {
            p = &h->next;
        }
    }
    for (last = &first; *last; last = &(*last)->next)
        ;
    pthread_mutex_unlock(&lock);
}

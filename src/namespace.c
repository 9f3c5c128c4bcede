/*
 * namespace.c - creating a context's linker namespace.
 *
 * Order matters here.  The interposer must be the first object of the
 * namespace, so that its definitions form the namespace's global scope for
 * every library loaded later.  The namespace's libc is then given its own
 * environment array and the base's stdio streams, is made to believe it is
 * multi-threaded, and only then are the user's environment changes applied:
 * all before any library constructor of the user's runs.
 */
#include "internal.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

static void *ns_noop(void *arg) { return arg; }

/* A private copy of the process environment for the namespace's libc.  The
 * namespace's libc starts out pointing at the base's array, and its setenv
 * would overwrite entries of that array in place. */
static char **environ_copy(void)
{
    size_t n = 0;
    while (environ && environ[n])
        n++;
    char **copy = calloc(n + 1, sizeof *copy);
    if (copy == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        copy[i] = strdup(environ[i]);
        if (copy[i] == NULL) {
            while (i--)
                free(copy[i]);
            free(copy);
            return NULL;
        }
    }
    return copy;
}

static void api_fill(vlcs_ctx *c, struct vlcs_ip_api *a)
{
    memset(a, 0, sizeof *a);
    a->abi_version = VLCS_IP_ABI_VERSION;
    a->ctx = c;
    a->malloc = malloc;
    a->free = free;
    a->calloc = calloc;
    a->realloc = realloc;
    a->posix_memalign = posix_memalign;
    a->aligned_alloc = aligned_alloc;
    a->memalign = memalign;
    a->valloc = valloc;
    a->pvalloc = pvalloc;
    a->malloc_usable_size = malloc_usable_size;
    a->filter_mask = view_filter_mask;
    a->clamp_mask = view_clamp_mask;
    a->ncpus = view_ncpus;
    a->open_forged = view_open_forged;
    a->key_create = pthread_key_create;
    a->key_delete = pthread_key_delete;
    a->getspecific = pthread_getspecific;
    a->setspecific = (int (*)(pthread_key_t, void *))pthread_setspecific;
    a->thread_begin = thread_begin;
    a->thread_end = thread_end;
}

int ns_create(vlcs_ctx *c)
{
    dlerror();
    void *h = dlmopen(LM_ID_NEWLM, interposer_path(), RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        load_error(c, "the vlcs interposer (creating its namespace)", dlerror());
        return -1;
    }
    vlcs_ip_bind_fn bind = (vlcs_ip_bind_fn)dlsym(h, "vlcs_ip_bind");
    char ***ns_environ = dlsym(h, "__environ");
    FILE **ns_stdin = dlsym(h, "stdin"), **ns_stdout = dlsym(h, "stdout"),
         **ns_stderr = dlsym(h, "stderr");
    /* The namespace's libc itself, past the interposer: its pthread_create
     * must not register a thread of the context while we hold its lock. */
    void *libc = NULL;
    if (dlinfo(h, RTLD_DI_LMID, &c->lmid) == 0)
        libc = dlmopen(c->lmid, "libc.so.6", RTLD_NOLOAD | RTLD_LAZY);
    int (*ns_pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *) =
        libc ? (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))dlsym(
                   libc, "pthread_create")
             : NULL;
    int (*ns_pthread_join)(pthread_t, void **) =
        libc ? (int (*)(pthread_t, void **))dlsym(libc, "pthread_join") : NULL;
    c->ns_setenv = (int (*)(const char *, const char *, int))dlsym(h, "setenv");
    c->ns_unsetenv = (int (*)(const char *))dlsym(h, "unsetenv");
    c->ns_getenv = (char *(*)(const char *))dlsym(h, "getenv");
    c->ns_fflush = (int (*)(void *))dlsym(h, "fflush");
    if (libc == NULL) {
        set_error("Error creating the namespace of context '%s': its libc cannot be found: %s",
                  c->name, dlerror());
        goto fail;
    }
    if (!bind || !ns_environ || !ns_stdin || !ns_stdout || !ns_stderr || !ns_pthread_create ||
        !ns_pthread_join || !c->ns_setenv || !c->ns_unsetenv || !c->ns_getenv || !c->ns_fflush) {
        set_error("Error creating the namespace of context '%s': %s lacks vlcs_ip_bind or its "
                  "libc lacks a function vlcs needs",
                  c->name, interposer_path());
        goto fail;
    }
    api_fill(c, &c->api);
    if (bind(&c->api) != 0) {
        set_error("Error creating the namespace of context '%s': %s was built for another "
                  "version of vlcs",
                  c->name, interposer_path());
        goto fail;
    }
    char **env = environ_copy();
    if (env == NULL) {
        set_error("Error creating the namespace of context '%s': out of memory", c->name);
        goto fail;
    }
    *ns_environ = env;
    c->ns_environ = env;
    /* Output of libraries in the context goes through the base's streams:
     * ordered with the program's own output, and flushed by its exit(). */
    *ns_stdin = stdin;
    *ns_stdout = stdout;
    *ns_stderr = stderr;

    /* See the same in runtime.c: a libc that has never created a thread skips
     * locks, but threads of the base call into this one. */
    pthread_t t;
    if (ns_pthread_create(&t, NULL, ns_noop, NULL) == 0)
        ns_pthread_join(t, NULL);

    for (struct envop *op = c->pending_env, *next; op; op = next) {
        next = op->next;
        if (op->value)
            c->ns_setenv(op->name, op->value, 1);
        else
            c->ns_unsetenv(op->name);
        free(op->name);
        free(op->value);
        free(op);
    }
    c->pending_env = NULL;
    c->ip_handle = h;
    c->has_ns = true;
    /* Before any library of the user's, so their DT_NEEDED entries find the
     * forwarders by soname instead of loading copies. */
    if (services_load_into(c) != 0)
        return -1;
    return 0;
fail:
    /* Nothing of the user's is loaded yet: the namespace can go. */
    dlclose(h);
    return -1;
}

void ns_flush(vlcs_ctx *c) { c->ns_fflush(NULL); }

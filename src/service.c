/*
 * service.c - the Service context: libraries that must exist once per
 * process (CUDA, TBB, anything that breaks under dlmopen) stay in the base
 * namespace, and every context sees them through an absolute-symbol
 * forwarder carrying their soname: a namespace created later has it in its
 * global scope (see services_root), one created earlier gets it loaded.
 */
#include "common.h"
#include "service.h"
#include "context.h"
#include "error.h"
#include "forwarder.h"
#include "handles.h"
#include "hooks.h"
#include "ns_root.h"
#include "registry.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct service {
    struct service *next;
    void *handle; /* the base's copy */
    int fd;       /* the forwarder's memfd */
    char soname[256];
};

/* Readers: vlcs_ctx_load, around creating a namespace and loading into one
 * (services_read_lock), so that no namespace is created or loaded into
 * while a service is half added.  Writer: vlcs_service_add.  Always taken
 * before any context's lock. */
static pthread_rwlock_t services_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct service *services; /* in the order they were added */

/* How deep this thread is in services_read_lock: a constructor that loads
 * into a context while its own load holds the lock must not add a service
 * (the write lock would wait for this very thread). */
static _Thread_local int read_depth;

void services_read_lock(void)
{
    pthread_rwlock_rdlock(&services_lock);
    read_depth++;
}

void services_unlock(void)
{
    read_depth--;
    pthread_rwlock_unlock(&services_lock);
}

bool services_held_here(void) { return read_depth > 0; }

/* The list only grows, each service published whole (*tail's release store
 * in vlcs_service_add): copy mode reads it without the lock, which its
 * loads may already hold as readers. */
static const struct service *first_service(void) { return __atomic_load_n(&services, __ATOMIC_ACQUIRE); }
static const struct service *next_service(const struct service *s)
{
    return __atomic_load_n(&s->next, __ATOMIC_ACQUIRE);
}

size_t services_paths(char (*out)[FD_PATH_SIZE], size_t cap, const char *except)
{
    size_t n = 0;
    for (const struct service *s = first_service(); s && n < cap; s = next_service(s))
        if (except == NULL || strcmp(s->soname, except) != 0)
            fd_path(out[n++], FD_PATH_SIZE, s->fd);
    return n;
}

bool services_has(const char *soname)
{
    for (const struct service *s = first_service(); s; s = next_service(s))
        if (strcmp(s->soname, soname) == 0)
            return true;
    return false;
}

/* A new reference to the forwarder of service `soname`, in the base
 * namespace: what copy mode's copies get when they open a service by name,
 * so that they see the hooks' entries as they do through their DT_NEEDED.
 * NULL when it is no service. */
void *services_open_forwarder(const char *soname)
{
    for (const struct service *s = first_service(); s; s = next_service(s))
        if (strcmp(s->soname, soname) == 0) {
            char path[FD_PATH_SIZE];
            fd_path(path, sizeof path, s->fd);
            return dlopen(path, RTLD_NOW | RTLD_LOCAL);
        }
    return NULL;
}

/* The path a memfd is loaded from.  /proc/self would name, in a debugger
 * that reads the link map (gdb -p, gdb on a core), the debugger's own fd N:
 * gdb blocked for good reading one of its pipes.  /proc/PID names ours:
 * readable while the fd is open, absent afterwards, never another file. */
static _Atomic pid_t fd_pid; /* 0: to be asked (again in a child of fork) */

void fd_path_after_fork(void) { atomic_store(&fd_pid, 0); }

/* n's decimal digits at p; past them */
static char *decimal(char *p, unsigned n)
{
    char digits[10];
    int k = 0;
    do
        digits[k++] = (char)('0' + n % 10);
    while ((n /= 10) != 0);
    while (k > 0)
        *p++ = digits[--k];
    return p;
}

/* Written by hand: a load names several of them, and snprintf took a
 * tenth of a copy-mode context's instructions. */
void fd_path(char *buf, size_t size, int fd)
{
    pid_t pid = atomic_load(&fd_pid);
    if (pid == 0)
        atomic_store(&fd_pid, pid = getpid());
    char path[FD_PATH_SIZE], *p = path; /* 30 characters at most */
    memcpy(p, "/proc/", 6);
    p = decimal(p + 6, (unsigned)pid);
    memcpy(p, "/fd/", 4);
    p = decimal(p + 4, (unsigned)fd);
    size_t len = (size_t)(p - path);
    if (size == 0)
        return;
    len = len < size ? len : size - 1; /* cut as snprintf would */
    memcpy(buf, path, len);
    buf[len] = '\0';
}

/* The forwarder of s loaded into c's namespace, or NULL with code and why set. */
static void *load_one(vlcs_ctx *c, const struct service *s, int *code, char *why, size_t size)
{
    char path[FD_PATH_SIZE];
    fd_path(path, sizeof path, s->fd);
    dlerror();
    void *h = dlmopen(c->ns.lmid, path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        const char *e = dlerror();
        *code = dl_errcode(e);
        snprintf(why, size, "its forwarder cannot be loaded into context '%s': %s", c->name,
                 e ? e : "unknown dlmopen failure");
    }
    return h;
}

/* The object a new namespace starts with (ns_root.c): first[0], the
 * interposer, naming the rest of first, every service's forwarder, then
 * last.  *fd is a memfd, or -1 when there is nothing but the interposer
 * (it is then the first object itself).  The caller holds
 * services_read_lock. */
int services_root(const char *const *first, size_t nfirst, const char *const *last,
                  size_t nlast, const char *except, int *fd_out, char *err, size_t errsize)
{
    size_t n = nfirst + nlast;
    for (const struct service *s = first_service(); s; s = next_service(s))
        n++;
    int fd = -1, code = VLCS_OK;
    if (n > 1) {
        char (*paths)[FD_PATH_SIZE] = calloc(n, sizeof *paths);
        const char **needed = calloc(n, sizeof *needed);
        if (paths && needed) {
            memcpy(needed, first, nfirst * sizeof *needed);
            size_t i = nfirst;
            for (const struct service *s = first_service(); s && i < n; s = next_service(s))
                if (except == NULL || strcmp(s->soname, except) != 0) {
                    fd_path(paths[i], sizeof paths[i], s->fd);
                    needed[i] = paths[i];
                    i++;
                }
            memcpy(needed + i, last, nlast * sizeof *needed);
            i += nlast;
            fd = i > 1 ? forwarder_root_shared(ns_root_make, needed, i, err, errsize) : -1;
            if (fd < -1)
                code = -fd;
        } else {
            snprintf(err, errsize, "out of memory");
            code = VLCS_E_SYSTEM;
        }
        free(paths);
        free(needed);
    }
    *fd_out = code == VLCS_OK ? fd : -1;
    return code;
}

/* h, a handle of the base's, becomes a service whose forwarder is made as
 * spec says (spec->ov is filled here); `shown` names it in messages.  Takes
 * over h: closed again unless the service keeps it.  Every step is undone,
 * in reverse order, by the labels at the end; the service becomes visible
 * (listed for new namespaces) only once nothing can fail any more. */
static int service_add(void *h, const char *shown, struct fwd_spec spec)
{
    pthread_rwlock_wrlock(&services_lock);
    struct service **tail = &services;
    for (; *tail; tail = &(*tail)->next)
        if ((*tail)->handle == h) { /* added before */
            pthread_rwlock_unlock(&services_lock);
            dlclose(h);
            return 0;
        }
    char why[512];
    int code = VLCS_E_SYSTEM;
    bool keep_handle = false;
    void **loaded = NULL; /* the forwarder's handle in each existing namespace */
    vlcs_ctx **loaded_in = NULL;
    size_t nloaded = 0, nctx = 0;
    struct service *s = calloc(1, sizeof *s);
    if (s == NULL) {
        snprintf(why, sizeof why, "out of memory");
        goto fail_unlock;
    }
    s->handle = h;
    struct fwd_override ov[48];
    spec.ov = ov;
    spec.nov = hooks_overrides(h, spec.prefixes, ov, sizeof ov / sizeof ov[0]);
    s->fd = forwarder_create(h, &spec, s->soname, sizeof s->soname, why, sizeof why);
    if (s->fd < 0) {
        code = -s->fd;
        goto fail_free;
    }
    /* No namespace can be created while we hold the lock, and no context
     * leaves the registry while we walk it: count them now. */
    registry_lock();
    for (vlcs_ctx *c = registry_first(); c; c = registry_next(c))
        nctx++;
    loaded = calloc(nctx ? nctx : 1, sizeof *loaded);
    loaded_in = calloc(nctx ? nctx : 1, sizeof *loaded_in);
    if (loaded == NULL || loaded_in == NULL) {
        registry_unlock();
        snprintf(why, sizeof why, "out of memory");
        goto fail_close;
    }
    /* Before any context can bind to the forwarder: its hooks need this. */
    hooks_note_service(h, spec.prefixes);
    /* Contexts that already have a namespace see it from now on; the
     * forwarder is closed with the context's other libraries. */
    for (vlcs_ctx *c = registry_first(); c && nloaded < nctx; c = registry_next(c)) {
        pthread_mutex_lock(&c->lock);
        void *fh = NULL;
        bool wanted = c->magic == CTX_ALIVE && c->has_ns;
        if (wanted)
            fh = load_one(c, s, &code, why, sizeof why);
        if (fh != NULL && ns_note_handle(c, fh) != 0) {
            dlclose(fh);
            fh = NULL;
            code = VLCS_E_SYSTEM;
            snprintf(why, sizeof why, "out of memory");
        }
        pthread_mutex_unlock(&c->lock);
        if (wanted && fh == NULL) {
            registry_unlock();
            goto fail_unload;
        }
        if (fh != NULL) {
            loaded_in[nloaded] = c;
            loaded[nloaded++] = fh;
        }
    }
    registry_unlock();
    free(loaded);
    free(loaded_in);
    __atomic_store_n(tail, s, __ATOMIC_RELEASE); /* read without the lock: services_has */
    pthread_rwlock_unlock(&services_lock);
    return 0;

fail_unload:
    /* Code running in those contexts (a dlopen of its own) may have bound to
     * a forwarder meanwhile: dlclose only drops our reference, and the
     * library the forwarders point into stays loaded. */
    while (nloaded > 0) {
        nloaded--;
        ns_close_handle(loaded_in[nloaded], loaded[nloaded]);
    }
    keep_handle = true;
fail_close:
    free(loaded);
    free(loaded_in);
    close(s->fd);
fail_free:
    free(s);
fail_unlock:
    pthread_rwlock_unlock(&services_lock);
    if (!keep_handle)
        dlclose(h); /* nothing of vlcs's refers to it: as a failed dlopen leaves it */
    set_error(code, "Error adding service library %s: %s", shown, why);
    return -1;
}

/* library loaded into the base with `scope` (RTLD_GLOBAL, RTLD_LOCAL) and
 * made a service.  VLCS_E_NOT_FOUND, and vlcs_error() set, when it is not
 * on this machine. */
static int service_open(const char *library, int scope)
{
    dlerror();
    void *h = dlopen(library, RTLD_NOW | scope);
    if (h == NULL) {
        const char *e = dlerror();
        set_error(dl_errcode(e), "Error adding service library %s: %s", library, e);
        return -1;
    }
    return service_add(h, library, (struct fwd_spec){0});
}

/* RTLD_LOCAL: the base's global scope stays as the program left it
 * (service_auto.c). */
int service_add_local(const char *library) { return service_open(library, RTLD_LOCAL); }

int service_add_global(const char *library)
{
    if (library == NULL || *library == '\0') {
        set_error(VLCS_E_INVALID, "Error adding a service library: the library name is empty");
        return -1;
    }
    return service_open(library, RTLD_GLOBAL);
}

/* The program is never unloaded: its handle only names it. */
int service_add_program(const char *soname, const char *prefixes)
{
    if (soname == NULL || *soname == '\0' || strchr(soname, '/') != NULL ||
        strlen(soname) >= sizeof ((struct service *)0)->soname) {
        set_error(VLCS_E_INVALID,
                  "Error adding the program as a service: the soname must be a file name of "
                  "under 256 bytes, such as libpython3.11.so.1.0");
        return -1;
    }
    if (prefixes != NULL && strspn(prefixes, ",") == strlen(prefixes)) {
        set_error(VLCS_E_INVALID,
                  "Error adding the program as service %s: the prefixes name nothing (give "
                  "NULL to forward every symbol)",
                  soname);
        return -1;
    }
    void *h = dlopen(NULL, RTLD_NOW);
    if (h == NULL) {
        set_error(VLCS_E_SYSTEM, "Error adding the program as service %s: %s", soname, dlerror());
        return -1;
    }
    char shown[300];
    snprintf(shown, sizeof shown, "%s (the program's own symbols)", soname);
    return service_add(h, shown, (struct fwd_spec){.soname = soname, .prefixes = prefixes});
}

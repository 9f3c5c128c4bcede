/*
 * service.c - the Service context: libraries that must exist once per
 * process (CUDA, TBB, anything that breaks under dlmopen) stay in the base
 * namespace, and every context sees them through an absolute-symbol
 * forwarder carrying their soname: a namespace created later has it in its
 * global scope (see services_root), one created earlier gets it loaded.
 */
#include "internal.h"

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

static pthread_mutex_t services_lock = PTHREAD_MUTEX_INITIALIZER;
static struct service *services; /* in the order they were added */

static int load_one(vlcs_ctx *c, const struct service *s)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", s->fd);
    dlerror();
    if (dlmopen(c->lmid, path, RTLD_NOW | RTLD_LOCAL) == NULL) {
        char what[300];
        snprintf(what, sizeof what, "the service forwarder of %s", s->soname);
        load_error(c, what, dlerror());
        return -1;
    }
    return 0;
}

/* The object a new namespace starts with: the interposer, then every
 * service's forwarder.  *fd is a memfd, or -1 when there are no services
 * (the interposer itself is then the first object). */
int services_root(int *fd_out, char *err, size_t errsize)
{
    pthread_mutex_lock(&services_lock);
    size_t n = 1;
    for (struct service *s = services; s; s = s->next)
        n++;
    int fd = -1, code = VLCS_OK;
    if (n > 1) {
        char (*paths)[32] = calloc(n, sizeof *paths);
        const char **needed = calloc(n, sizeof *needed);
        if (paths && needed) {
            needed[0] = interposer_path();
            size_t i = 1;
            for (struct service *s = services; s; s = s->next, i++) {
                snprintf(paths[i], sizeof paths[i], "/proc/self/fd/%d", s->fd);
                needed[i] = paths[i];
            }
            fd = forwarder_root(needed, n, err, errsize);
            if (fd < 0)
                code = -fd;
        } else {
            snprintf(err, errsize, "out of memory");
            code = VLCS_E_SYSTEM;
        }
        free(paths);
        free(needed);
    }
    pthread_mutex_unlock(&services_lock);
    *fd_out = code == VLCS_OK ? fd : -1;
    return code;
}

VLCS_API int vlcs_service_add(const char *library)
{
    if (vlcs_init() != 0)
        return -1;
    if (library == NULL || *library == '\0') {
        set_error(VLCS_E_INVALID, "Error adding a service library: the library name is empty");
        return -1;
    }
    dlerror();
    void *h = dlopen(library, RTLD_NOW | RTLD_GLOBAL);
    if (h == NULL) {
        const char *e = dlerror();
        set_error(dl_errcode(e), "Error adding service library %s: %s", library, e);
        return -1;
    }
    pthread_mutex_lock(&services_lock);
    struct service **tail = &services;
    for (; *tail; tail = &(*tail)->next)
        if ((*tail)->handle == h) { /* added before */
            pthread_mutex_unlock(&services_lock);
            dlclose(h);
            return 0;
        }
    struct service *s = calloc(1, sizeof *s);
    char why[512];
    int code = VLCS_E_SYSTEM;
    if (s == NULL) {
        snprintf(why, sizeof why, "out of memory");
        goto fail;
    }
    s->handle = h;
    struct fwd_override ov[4];
    size_t nov = hooks_overrides(h, ov, sizeof ov / sizeof ov[0]);
    s->fd = forwarder_create(h, ov, nov, s->soname, sizeof s->soname, why, sizeof why);
    if (s->fd < 0) {
        code = -s->fd;
        goto fail;
    }
    hooks_note_service(h);
    *tail = s;
    pthread_mutex_unlock(&services_lock);

    /* Contexts that already have a namespace see it from now on. */
    int rc = 0;
    for (vlcs_ctx *c = registry_first(); c; c = registry_next(c)) {
        pthread_mutex_lock(&c->lock);
        if (c->magic == CTX_ALIVE && c->has_ns && load_one(c, s) != 0)
            rc = -1;
        pthread_mutex_unlock(&c->lock);
    }
    return rc;
fail:
    pthread_mutex_unlock(&services_lock);
    free(s);
    set_error(code, "Error adding service library %s: %s", library, why);
    return -1;
}

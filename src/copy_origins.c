/*
 * copy_origins.c - the original files of copy mode's copies: one read-only
 * descriptor per file, shared by every context's copies of it.
 *
 * A copy is read, copied and mapped again from its original through that
 * descriptor, and a loaded copy is named after it (/proc/PID/fd/N, its
 * link map's l_name): a debugger or profiler that opens a copy's file
 * reads the original, whose bytes the copy's read-only pages are, so the
 * copy's memfd need not keep them.  A name of that form is one no program
 * opens by itself, and its basename is no library's: the base's
 * threadpoolctl, walking every loaded object, takes no context's copy for
 * one of its own libraries.
 */
#include "common.h"
#include "copy_origins.h"
#include "context.h"
#include "registry.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct origin {
    char *path;
    int fd;
    size_t refs;
    dev_t dev; /* the file the descriptor holds: a library replaced on */
    ino_t ino; /* disk (an upgrade) is another origin */
    unsigned checked; /* the generation in which the path last named it */
    bool kept; /* held for the process's life (origin_keep) */
};

/* A path held is taken to name the same file until the caches are
 * invalidated (origins_recheck): a later context's load asks the file
 * system nothing, as Python's finders between invalidate_caches calls. */
static unsigned generation;

static pthread_mutex_t origins_lock = PTHREAD_MUTEX_INITIALIZER;
static struct origin *origins;
static size_t norigins, caporigins;

void origins_recheck(void)
{
    pthread_mutex_lock(&origins_lock);
    generation++;
    pthread_mutex_unlock(&origins_lock);
}

int origin_hold(const char *real, char *why, size_t size)
{
    pthread_mutex_lock(&origins_lock);
    for (size_t i = 0; i < norigins; i++) {
        struct origin *o = &origins[i];
        if (o->checked == generation && strcmp(o->path, real) == 0) {
            o->refs++;
            int fd = o->fd; /* read under the lock: another hold may move the table */
            pthread_mutex_unlock(&origins_lock);
            return fd;
        }
    }
    pthread_mutex_unlock(&origins_lock);
    struct stat st;
    if (stat(real, &st) != 0) {
        snprintf(why, size, "%s cannot be opened: %s", real, strerror(errno));
        return -VLCS_E_NOT_FOUND;
    }
    pthread_mutex_lock(&origins_lock);
    for (size_t i = 0; i < norigins; i++) {
        struct origin *o = &origins[i];
        if (o->dev == st.st_dev && o->ino == st.st_ino && strcmp(o->path, real) == 0) {
            o->refs++;
            o->checked = generation;
            int fd = o->fd;
            pthread_mutex_unlock(&origins_lock);
            return fd;
        }
    }
    int fd = open(real, O_RDONLY | O_CLOEXEC);
    int code = VLCS_OK;
    if (fd < 0) {
        snprintf(why, size, "%s cannot be opened: %s", real, strerror(errno));
        code = VLCS_E_NOT_FOUND;
    } else if (fstat(fd, &st) != 0 ||
               array_grow((void **)&origins, &caporigins, norigins, sizeof *origins) != 0 ||
               (origins[norigins].path = strdup(real)) == NULL) {
        snprintf(why, size, "%s cannot be held: %s", real, strerror(errno ? errno : ENOMEM));
        code = VLCS_E_SYSTEM;
        close(fd);
    } else {
        origins[norigins].fd = fd;
        origins[norigins].refs = 1;
        origins[norigins].dev = st.st_dev;
        origins[norigins].ino = st.st_ino;
        origins[norigins].checked = generation;
        origins[norigins].kept = false;
        norigins++;
    }
    pthread_mutex_unlock(&origins_lock);
    return code == VLCS_OK ? fd : -code;
}

int origin_keep(const char *real)
{
    pthread_mutex_lock(&origins_lock);
    for (size_t i = 0; i < norigins; i++)
        if (origins[i].kept && strcmp(origins[i].path, real) == 0) {
            int fd = origins[i].fd;
            pthread_mutex_unlock(&origins_lock);
            return fd;
        }
    pthread_mutex_unlock(&origins_lock);
    char why[PATH_MAX + 64];
    int fd = origin_hold(real, why, sizeof why); /* its reference is never let go */
    if (fd < 0)
        return -1;
    pthread_mutex_lock(&origins_lock);
    for (size_t i = 0; i < norigins; i++)
        if (origins[i].fd == fd)
            origins[i].kept = true;
    pthread_mutex_unlock(&origins_lock);
    return fd;
}

void origin_release(int fd)
{
    if (fd < 0)
        return;
    pthread_mutex_lock(&origins_lock);
    for (size_t i = 0; i < norigins; i++) {
        struct origin *o = &origins[i];
        if (o->fd != fd)
            continue;
        if (--o->refs == 0) {
            close(o->fd);
            free(o->path);
            *o = origins[--norigins];
        }
        break;
    }
    pthread_mutex_unlock(&origins_lock);
}

/*
 * exec_streams.c - a program's C streams while it runs in a context
 * (vlcs_ctx_exec), on its thread's own descriptors 0, 1 and 2 (the thread
 * has a descriptor table of its own), put back after it, or abandoned
 * after a fault.
 */
#include "common.h"
#include "exec_streams.h"
#include "context.h"
#include "copies.h"
#include "exec_copies.h"
#include "error.h"
#include "registry.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio_ext.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The process's libc's, for a copy-mode run. */
static void base_streams(vlcs_ctx *c, struct run_streams *s, FILE **const program[3])
{
    s->copy_mode = true;
    s->tell = (void (*)(void **))dlsym(exec_interposer(c), "vlcs_ip_exec_streams");
    for (int i = 0; i < 3; i++)
        s->slot[i] = program[i] != NULL ? program[i] : &s->spare[i];
    s->fdopen = fdopen;
    s->fclose = fclose;
    s->setvbuf = setvbuf;
    s->fpurge = __fpurge;
    s->files = c->cp.run_files = (void (*)(int))dlsym(exec_interposer(c), "vlcs_ip_exec_files");
    for (int i = 0; i < 3 && c->cp.std_made; i++)
        s->also[i] = &c->cp.std[i];
}

int context_streams_open(vlcs_ctx *c, int *failed)
{
    for (int i = 0; i < 3; i++) {
        if (!c->ns.stdio_set[i])
            continue;
        int fd = dup(c->ns.stdio_fd[i]);
        FILE *f = fd >= 0 ? fdopen(fd, i == 0 ? "r" : "w") : NULL;
        if (f == NULL) {
            int e = errno;
            if (fd >= 0)
                close(fd);
            context_streams_close(c);
            *failed = c->ns.stdio_fd[i];
            errno = e;
            return -1;
        }
        if (i > 0)
            setvbuf(f, NULL, _IOLBF, 0);
        c->ns.stdio_file[i] = f;
    }
    return 0;
}

void context_streams_close(vlcs_ctx *c)
{
    for (int i = 0; i < 3; i++)
        if (c->ns.stdio_file[i] != NULL) {
            fclose(c->ns.stdio_file[i]);
            c->ns.stdio_file[i] = NULL;
        }
}

void stream_retire(FILE *f, bool broken)
{
    if (broken)
        __fpurge(f); /* takes no lock */
    else
        fflush(f);
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, fileno_unlocked(f));
        close(null);
    } else {
        close(fileno_unlocked(f)); /* the reader's end at least */
    }
}

void context_streams_retire(vlcs_ctx *c, bool broken)
{
    for (int i = 0; i < 3; i++)
        if (c->ns.stdio_file[i] != NULL) {
            stream_retire(c->ns.stdio_file[i], broken);
            if (broken) /* its lock may be held: never closed */
                c->ns.stdio_file[i] = NULL;
        }
}

int streams_for_copies(vlcs_ctx *c)
{
    if (c->cp.std_made)
        return 0;
    int failed = -1;
    if (context_streams_open(c, &failed) != 0) {
        set_error(VLCS_E_SYSTEM, "Error loading into context '%s': descriptor %d given to "
                  "vlcs_ctx_set_stdio cannot be used: %s", c->name, failed, strerror(errno));
        return -1;
    }
    FILE *process[3] = {stdin, stdout, stderr};
    for (int i = 0; i < 3; i++)
        c->cp.std[i] = c->ns.stdio_file[i] != NULL ? c->ns.stdio_file[i] : process[i];
    c->cp.std_made = true;
    return 0;
}

void streams_for_copies_flush(vlcs_ctx *c)
{
    for (int i = 1; i < 3; i++)
        if (c->ns.stdio_file[i] != NULL)
            fflush(c->ns.stdio_file[i]);
}

void streams_for_copies_end(vlcs_ctx *c)
{
    context_streams_close(c);
    for (int i = 0; i < 3; i++)
        c->cp.std[i] = NULL;
    c->cp.std_made = false;
}

int streams_give(vlcs_ctx *c, struct run_streams *s, const char *path, FILE **const program[3])
{
    memset(s, 0, sizeof *s);
    if (c->copy_mode) {
        base_streams(c, s, program);
    } else {
        s->tell = (void (*)(void **))dlsym(exec_interposer(c), "vlcs_ip_exec_streams");
        void *libc = dlmopen(c->ns.lmid, "libc.so.6", RTLD_NOLOAD | RTLD_LAZY);
        static const char *const names[3] = {"stdin", "stdout", "stderr"};
        for (int i = 0; i < 3 && libc; i++)
            s->slot[i] = dlsym(libc, names[i]);
        if (libc) {
            s->fdopen = (FILE * (*)(int, const char *)) dlsym(libc, "fdopen");
            s->fclose = (int (*)(FILE *))dlsym(libc, "fclose");
            s->setvbuf = (int (*)(FILE *, char *, int, size_t))dlsym(libc, "setvbuf");
            s->fpurge = (void (*)(FILE *))dlsym(libc, "__fpurge");
            dlclose(libc);
        }
    }
    if (!s->tell || !s->slot[0] || !s->slot[1] || !s->slot[2] || !s->fdopen || !s->fclose ||
        !s->setvbuf || !s->fpurge || (s->copy_mode && !s->files)) {
        set_error(VLCS_E_NOT_FOUND, "Error running %s: the context's libc or interposer lacks its "
                  "streams", path);
        return -1;
    }
    for (int i = 0; i < 3; i++) {
        s->saved[i] = *s->slot[i];
        /* The run's thread has descriptors of its own: its stream i is on
         * its descriptor i, as in a process of its own (in copy mode put
         * there by exec.c). */
        int src = s->copy_mode ? i : s->saved[i] ? fileno(s->saved[i]) : -1;
        int fd = src < 0 ? -1 : src == i ? i : dup2(src, i);
        FILE *f = fd >= 0 ? s->fdopen(fd, i == 0 ? "r" : "w") : NULL;
        if (f == NULL)
            continue; /* a stream the namespace has not: the program's stays */
        if (i == 2)
            s->setvbuf(f, NULL, _IONBF, 0);
        s->open[i] = f;
        *s->slot[i] = f;
        if (s->also[i] != NULL) {
            s->also_saved[i] = *s->also[i];
            *s->also[i] = f;
        }
    }
    s->tell(s->open);
    return 0;
}

/* After a fault: the namespace's streams are put back, the run's left as
 * the fault left them (their locks may be held), unflushed as a crashed
 * process's are, their descriptors (0, 1, 2 of the run's thread) closed.
 * Their buffers are emptied (__fpurge takes no lock): the namespace's
 * libc would otherwise write them at its next fflush(NULL), onto whatever
 * descriptor 1 is on that thread. */
void streams_abandon(struct run_streams *s)
{
    s->tell(NULL);
    if (s->files != NULL)
        s->files(2);
    for (int i = 0; i < 3; i++) {
        if (s->open[i] != NULL) {
            s->fpurge(s->open[i]);
            if (s->copy_mode) {
                /* On the process's own list of streams, where a lock the
                 * fault left held would hang its next fflush(NULL): the
                 * lock (glibc's recursive {lock, count, owner}) let go,
                 * the stream closed unwritten. */
                FILE *f = s->open[i];
                if (f->_lock != NULL)
                    memset(f->_lock, 0, 2 * sizeof(int) + sizeof(void *));
                s->fclose(f);
            } else {
                close(i);
            }
        }
        *s->slot[i] = s->saved[i];
        if (s->also[i] != NULL && s->also_saved[i] != NULL)
            *s->also[i] = s->also_saved[i];
    }
}

void streams_take_back(struct run_streams *s)
{
    s->tell(NULL);
    if (s->files != NULL)
        s->files(1);
    for (int i = 0; i < 3; i++) {
        if (s->open[i] != NULL)
            s->fclose(s->open[i]);
        *s->slot[i] = s->saved[i];
        if (s->also[i] != NULL && s->also_saved[i] != NULL)
            *s->also[i] = s->also_saved[i];
    }
}

void streams_discard(struct run_streams *s)
{
    if (s->files != NULL)
        s->files(2);
    for (int i = 0; i < 3; i++)
        if (s->open[i] != NULL)
            s->fpurge(s->open[i]);
    streams_take_back(s);
}

/* A fault's first line on the instance's stderr, as a shell reports a
 * signal's end: "vlcs: sort: SIGSEGV (...) at ...", the program named by
 * its path where the report names the copy it ran as (a memfd). */
void streams_say_fault(vlcs_ctx *c, const char *path)
{
    const char *report = vlcs_ctx_fault(c->handle);
    if (report == NULL)
        return;
    char copy[PATH_MAX + 32];
    snprintf(copy, sizeof copy, "/memfd:%s (deleted)", base_name(path));
    int fd = 2; /* the run's stderr, on its thread's descriptor 2 */
    dprintf(fd, "vlcs: %s: ", base_name(path));
    size_t line = strcspn(report, "\n"), n = strlen(copy);
    for (const char *at = report; at < report + line;) {
        const char *hit = strstr(at, copy);
        size_t upto = hit && hit < report + line ? (size_t)(hit - at) : (size_t)(report + line - at);
        dprintf(fd, "%.*s", (int)upto, at);
        at += upto;
        if (hit && hit == at) {
            dprintf(fd, "%s", path);
            at += n;
        }
    }
    dprintf(fd, "\n");
}

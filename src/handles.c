/*
 * handles.c - what a context loaded (the handles its destruction closes)
 * and the threads of its libraries that ended (which unloading waits to be
 * gone): kept as loads, closes and thread exits happen, read by unload.c.
 */
#include "common.h"
#include "handles.h"
#include "context.h"
#include "rawsys.h"
#include "registry.h"

#include <errno.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int ns_note_handle(vlcs_ctx *c, void *h)
{
    if (array_grow((void **)&c->handles, &c->caphandles, c->nhandles, sizeof *c->handles) != 0)
        return -1;
    c->handles[c->nhandles++] = h;
    c->el.pools_gen = 0;
    return 0;
}

void ns_close_since(vlcs_ctx *c, size_t n)
{
    while (c->nhandles > n)
        dlclose(c->handles[--c->nhandles]);
    c->el.pools_gen = 0;
}

void ns_close_handle(vlcs_ctx *c, void *h)
{
    pthread_mutex_lock(&c->lock);
    for (size_t i = c->nhandles; i-- > 0;)
        if (c->handles[i] == h) {
            c->handles[i] = c->handles[--c->nhandles];
            c->el.pools_gen = 0;
            break;
        }
    pthread_mutex_unlock(&c->lock);
    dlclose(h);
}

bool thread_gone(pid_t tid)
{
    return raw_syscall(SYS_tgkill, getpid(), tid, 0, 0, 0, 0) == -ESRCH;
}

void ns_note_ended(vlcs_ctx *c, pid_t tid)
{
    if (c->nended == c->capended) { /* keep only those still exiting */
        size_t k = 0;
        for (size_t i = 0; i < c->nended; i++)
            if (!thread_gone(c->ended[i]))
                c->ended[k++] = c->ended[i];
        c->nended = k;
    }
    /* Out of memory: unloading then waits on the library threads alone. */
    if (array_grow((void **)&c->ended, &c->capended, c->nended, sizeof *c->ended) == 0)
        c->ended[c->nended++] = tid;
}

void thread_pause(void)
{
    struct timespec ts = {0, 200 * 1000}; /* 0.2 ms */
    nanosleep(&ts, NULL);
}

void thread_wait_gone(pid_t tid)
{
    while (!thread_gone(tid))
        thread_pause();
}

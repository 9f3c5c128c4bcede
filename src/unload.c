/*
 * unload.c - giving a destroyed context's namespace back to glibc.
 *
 * glibc allows at most 16 namespaces and reuses one once every object in it
 * is unloaded, so a program that makes a context per request runs out
 * unless destroyed contexts give theirs back.  Unmapping code is safe only
 * once nothing can run it any more:
 *
 *   1. this thread's thread-specific data of the context's libraries is
 *      destroyed, as if the thread exited (libgomp's pool of this thread
 *      ends that way);
 *   2. the thread pools vlcs knows how to stop are stopped (OpenBLAS);
 *   3. every thread the context's libraries started has ended, and the
 *      kernel has reaped it;
 *   4. the keys its libraries created are deleted: no thread exit calls
 *      their destructors any more;
 *   5. every handle vlcs loaded is closed, and the namespace's first object;
 *      with vlcs_ctx_drop_library_opens, the libraries' own dlopen
 *      references too (a finalised Python of the context's own: CPython
 *      never closes an extension module, and nothing of it runs any more).
 *
 * A step that cannot be done leaves the namespace loaded, as every
 * destroyed context did before, and the reason names the libraries.
 */
#include "common.h"
#include "unload.h"
#include "context.h"
#include "families.h"
#include "handles.h"
#include "keys.h"
#include "namespace.h"
#include "objects.h"
#include "registry.h"
#include "shim_table.h"
#include "strict.h"
#include "thread.h"

#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* ---- the context's library threads --------------------------------------- */

/* Step 2: pools whose library has a call that ends their threads.  Calling
 * it is what the library's own destructor would do at unload, early enough
 * for step 3 to wait on the threads. */
/* The families' stop_pool functions (OpenBLAS's blas_thread_shutdown_, which
 * joins its workers), each run once. */
static void stop_known_pools(vlcs_ctx *c)
{
    struct family_fn stop[32];
    size_t n = 0;
    for (size_t i = 0; i < c->nhandles; i++)
        n = families_find(c->handles[i], FAMILY_STOP, stop, n, sizeof stop / sizeof *stop);
    for (size_t i = 0; i < n; i++)
        ((void (*)(void))stop[i].fn)();
}

/* "libgomp.so.1 (3 threads)": whose threads still run, from their start routines. */
static void name_running(vlcs_ctx *c, char *out, size_t size)
{
    void *starts[64];
    pthread_mutex_lock(&c->lock);
    size_t n = threads_created_starts(c, starts, 64);
    pthread_mutex_unlock(&c->lock);
    const char *names[64];
    int counts[64];
    size_t nn = 0;
    for (size_t i = 0; i < n; i++) {
        struct link_map *lm = object_at(starts[i]);
        /* a copy (copy mode): its original */
        const char *origin = lm != NULL && c->api.object_file != NULL ? c->api.object_file(c, lm) : NULL;
        const char *name = starts[i] == NULL                ? "adopted (vlcs_thread_adopt)"
                           : origin != NULL                 ? base_name(origin)
                           : lm != NULL && lm->l_name[0] ? base_name(lm->l_name)
                                                         : "an unknown library";
        size_t j = 0;
        while (j < nn && strcmp(names[j], name) != 0)
            j++;
        if (j == nn) {
            names[nn] = name;
            counts[nn++] = 0;
        }
        counts[j]++;
    }
    size_t used = 0;
    out[0] = '\0';
    for (size_t j = 0; j < nn && used < size; j++)
        used += (size_t)snprintf(out + used, size - used, "%s%s (%d thread%s)", j ? ", " : "",
                                 names[j], counts[j], counts[j] == 1 ? "" : "s");
}

/* Step 3: threads stopping now get 100 ms of no progress before vlcs gives
 * up; a thread that has ended gets 2 s to leave the kernel's lists. */
static int wait_threads(vlcs_ctx *c, char *why, size_t size)
{
    int live = __atomic_load_n(&c->created_live, __ATOMIC_ACQUIRE), idle = 0;
    while (live > 0 && idle < 500) {
        thread_pause();
        int now = __atomic_load_n(&c->created_live, __ATOMIC_ACQUIRE);
        idle = now < live ? 0 : idle + 1;
        live = now;
    }
    if (live > 0) {
        char who[512];
        name_running(c, who, sizeof who);
        snprintf(why, size,
                 "threads started by its libraries still run: %s; vlcs stops OpenBLAS's and "
                 "the destroying thread's OpenMP pool, so destroy it from the thread that ran "
                 "its parallel code, or stop the pool first",
                 who[0] ? who : "(not known)");
        return -1;
    }
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->nended; i++)
        for (int tries = 0; !thread_gone(c->ended[i]); tries++) {
            if (tries == 10000) {
                pthread_mutex_unlock(&c->lock);
                snprintf(why, size, "thread %d of its libraries did not finish exiting",
                         (int)c->ended[i]);
                return -1;
            }
            thread_pause();
        }
    c->nended = 0;
    pthread_mutex_unlock(&c->lock);
    return 0;
}

/* ---- unloading ------------------------------------------------------------ */

/* Objects of the namespace it was not created with, once vlcs closed its
 * handles: someone else holds them (a library's own dlopen, or an object
 * glibc will not unload).  Found through the first object, before closing
 * it: glibc's dlmopen into a namespace number no longer in use returns an
 * error with its loader lock still held. */
static struct link_map *ns_head(vlcs_ctx *c)
{
    struct link_map *lm = NULL;
    if (dlinfo(c->ns.ip_handle, RTLD_DI_LINKMAP, &lm) != 0 || lm == NULL)
        return NULL;
    while (lm->l_prev)
        lm = lm->l_prev;
    return lm;
}

static bool ns_started_with(const vlcs_ctx *c, const struct link_map *lm)
{
    for (size_t i = 0; i < c->ns.nstart; i++)
        if (c->ns.start[i] == lm)
            return true;
    return false;
}

static size_t name_remaining(vlcs_ctx *c, char *out, size_t size)
{
    size_t n = 0, used = 0;
    out[0] = '\0';
    for (struct link_map *lm = ns_head(c); lm; lm = lm->l_next) {
        if (ns_started_with(c, lm))
            continue;
        n++;
        if (used < size)
            used += (size_t)snprintf(out + used, size - used, "%s%s", used ? ", " : "",
                                     lm->l_name[0] ? base_name(lm->l_name) : "(unnamed)");
    }
    return n;
}

/* The direct references of the object opened as name, dropped until it
 * unloads or holds none (a dependency of another, or marked not to be
 * unloaded: glibc's dlclose then returns 0 and changes nothing, hence the
 * bound).  Each time through a fresh RTLD_NOLOAD handle, as the last
 * dlclose may have unloaded the object the one before named. */
void drop_opens(void *(*reopen)(vlcs_ctx *, const char *), vlcs_ctx *c, const char *name)
{
    for (int i = 0; i < 4096; i++) {
        void *h = reopen(c, name);
        if (h == NULL)
            break;
        dlclose(h); /* the reference just taken */
        if (dlclose(h) != 0)
            break; /* "shared object not open": none of its own left */
    }
    (void)dlerror();
}

static void *reopen_in_ns(vlcs_ctx *c, const char *name)
{
    return dlmopen(c->ns.lmid, name, RTLD_LAZY | RTLD_NOLOAD);
}

/* The libraries' own references to the namespace's objects other than its
 * first ones (names copied first: dropping one may unload others). */
static void drop_ns_opens(vlcs_ctx *c)
{
    char **names = NULL;
    size_t n = 0, cap = 0;
    for (struct link_map *lm = ns_head(c); lm; lm = lm->l_next) {
        char *name = ns_started_with(c, lm) || !lm->l_name[0] ? NULL : strdup(lm->l_name);
        if (name == NULL)
            continue;
        if (array_grow((void **)&names, &cap, n, sizeof *names) != 0) {
            free(name);
            break; /* out of memory: those dropped so far, the rest stays and is named */
        }
        names[n++] = name;
    }
    for (size_t i = n; i-- > 0;) { /* the last loaded first: it may hold those before */
        drop_opens(reopen_in_ns, c, names[i]);
        free(names[i]);
    }
    free(names);
}

/* Steps 1 to 4: nothing of the context's libraries runs or is kept for a
 * thread any more; what is left is closing them. */
static int ctx_quiesce(vlcs_ctx *c, char *why, size_t size)
{
    keys_run_destructors_here(c);
    stop_known_pools(c);
    if (wait_threads(c, why, size) != 0)
        return -1;
    keys_delete_of(c);
    return 0;
}

int ctx_close_libraries(vlcs_ctx *c, char *why, size_t size)
{
    if (strict_active()) {
        snprintf(why, size, "strict mode is on, and the filters that cover its code cannot be "
                            "removed");
        return -1;
    }
    if (ctx_quiesce(c, why, size) != 0)
        return -1;
    /* Each load took a reference; closing in reverse runs destructors in
     * the order a program's own dlclose calls would. */
    while (c->nhandles > 0)
        dlclose(c->handles[--c->nhandles]);
    return 0;
}

int ns_unload(vlcs_ctx *c, char *why, size_t size)
{
    if (ctx_close_libraries(c, why, size) != 0)
        return -1;
    if (c->drop_opens)
        drop_ns_opens(c);
    char left[512];
    size_t nleft = name_remaining(c, left, sizeof left);
    if (nleft > 0) {
        snprintf(why, size, "%s %s loaded (opened by its libraries themselves and never closed, or "
                            "marked not to be unloaded)",
                 left, nleft > 1 ? "stay" : "stays");
        return -1;
    }
    /* What the namespace's libc allocated for printf extensions (the
     * interposer recorded it): nothing is left to read it. */
    void (*release_printf)(void) = (void (*)(void))dlsym(c->ns.ip_handle, "vlcs_ip_release_printf");
    if (release_printf != NULL)
        release_printf();
    ns_teardown(c);
    shim_forget(c);
    return 0;
}

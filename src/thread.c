/*
 * thread.c - which context a thread is in, and keeping it on its CPUs.
 *
 * A thread is in a context while it has entered it (vlcs_enter) or, for
 * threads that a context's libraries created, for its whole life.  Each
 * context keeps a list of its member threads so that a change of its CPU set
 * can move them.  Enter and leave skip the affinity syscall when the thread
 * already runs on the right CPUs: that is what makes them cheap.
 */
#include "common.h"
#include "thread.h"
#include "context.h"
#include "cpuset.h"
#include "elastic.h"
#include "error.h"
#include "fault.h"
#include "gscope.h"
#include "handles.h"
#include "hooks.h"
#include "namespace.h"
#include "registry.h"
#include "shim_table.h"
#include "thread_state.h"
#include "trace.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- membership, with c->lock held ---------------------------------------- */

static struct member *member_find(vlcs_ctx *c, const struct tstate *ts)
{
    for (size_t i = 0; i < c->nmembers; i++)
        if (c->members[i].ts == ts)
            return &c->members[i];
    return NULL;
}

static struct member *member_add(vlcs_ctx *c, struct tstate *ts)
{
    struct member *m = member_find(c, ts);
    if (m)
        return m;
    if (array_grow((void **)&c->members, &c->capmembers, c->nmembers, sizeof *c->members) != 0)
        return NULL;
    m = &c->members[c->nmembers++];
    memset(m, 0, sizeof *m);
    m->ts = ts;
    m->tid = ts->tid;
    return m;
}

static void member_drop_if_unused(vlcs_ctx *c, struct member *m)
{
    if (m->entered == 0 && !m->created)
        *m = c->members[--c->nmembers];
}

/* ---- applying affinity ---------------------------------------------------- */

static void refresh_if_moved(struct tstate *ts)
{
    if (atomic_exchange(&ts->moved, false))
        mask_get_thread(0, &ts->cur);
}

static int apply(struct tstate *ts, const vmask *target)
{
    if (mask_eq(&ts->cur, target))
        return 0;
    if (mask_set_thread(0, target) != 0)
        return -1;
    ts->cur = *target;
    return 0;
}

/* Moves on whenever any thread's effective context changes: a reader that
 * saw a thread's context at count n knows it still holds while the count is
 * n (the Python module table asks so on every read of sys.modules, and a
 * call here would cost more than the read). */
VLCS_API uint64_t vlcs_owner_epoch;

/* The slot shims dispatch on follows the thread's effective context. */
static void publish_slot(const struct tstate *ts)
{
    vlcs_shim_slot = shim_slot_of(effective(ts));
    __atomic_fetch_add(&vlcs_owner_epoch, 1, __ATOMIC_RELEASE);
}

static void pop_frame(struct tstate *ts)
{
    vlcs_ctx *c = ts->stack[ts->depth - 1];
    hooks_leave(ts->hook_saved[ts->depth - 1]);
    pthread_mutex_lock(&c->lock);
    struct member *m = member_find(c, ts);
    if (m) {
        m->entered--;
        member_drop_if_unused(c, m);
    }
    c->entered--;
    bool idle = c->el.active && c->entered == 0;
    __atomic_store_n(&ts->depth, ts->depth - 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&c->lock);
    publish_slot(ts);
    if (idle)
        elastic_busy_changed(c, false);
}

/* A thread that exits inside contexts leaves them, so that they can be
 * destroyed and no one moves a thread id that may be reused. */
static void unwind(struct tstate *ts)
{
    while (ts->depth > 0)
        pop_frame(ts);
}

static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

static void implicit_end(struct tstate *ts);

/* Every thread that was in a context ends in the base libc (a context's
 * library threads are started by it too), which runs this destructor
 * however the thread ends: return or pthread_exit.  The value is not
 * trusted: the destructor reads this thread's own state. */
static void on_base_thread_exit(void *p)
{
    (void)p;
    struct tstate *ts = tstate();
    unwind(ts);
    if (ts->implicit != NULL)
        implicit_end(ts);
}
static void exit_key_create(void) { pthread_key_create(&exit_key, on_base_thread_exit); }

/* What the thread's end does, for a thread about to end without its
 * destructors (exec_instance.c stops a thread that ended its instance so). */
void thread_end_here(void)
{
    on_base_thread_exit(NULL);
    pthread_once(&exit_key_once, exit_key_create);
    pthread_setspecific(exit_key, NULL);
}

static void watch_exit(struct tstate *ts)
{
    pthread_once(&exit_key_once, exit_key_create);
    pthread_setspecific(exit_key, ts);
}

/* A thread started by another libc copy has none of a namespace libc's
 * per-thread set-up: its ctype table pointers (isspace, tolower) are NULL
 * there, and the first isspace in the context's code crashes.  Done once per
 * thread and namespace, before the thread runs the context's code. */
/* Bumped when a namespace is taken back, whose number glibc then reuses for
 * a new one with a new libc. */
static unsigned ns_generation[NS_SLOTS];

static unsigned ns_current(int slot)
{
    return __atomic_load_n(&ns_generation[slot], __ATOMIC_ACQUIRE) + 1;
}

/* A thread that pthread_create made while another thread's dlmopen loaded
 * the namespace's libc may miss glibc's copy of that libc's thread-local
 * data into it (its block left zero, the locale pointer NULL: the first
 * ctype call, __ctype_init's own, crashes).  Such a block is given the
 * data here; one glibc filled never reads all zero (the locale pointer is
 * never NULL). */
static void ns_tls_fill(vlcs_ctx *c)
{
    size_t size = c->ns.tls_image_size;
    if (c->ns.errno_location == NULL || size == 0)
        return;
    unsigned char *block = (unsigned char *)c->ns.errno_location() - c->ns.tls_errno;
    const unsigned char *image = c->ns.tls_image;
    unsigned in_block = 0, in_image = 0; /* any bit set in either */
    for (size_t i = 0; i < size; i++) {
        in_block |= block[i];
        in_image |= image[i];
    }
    if (in_block == 0 && in_image != 0)
        memcpy(block, image, size);
}

static void ns_thread_ready(vlcs_ctx *c, struct tstate *ts)
{
    void (*init)(void) = __atomic_load_n(&c->ns.thread_init, __ATOMIC_ACQUIRE);
    if (init == NULL)
        return;
    int slot = ns_slot(c->ns.lmid);
    unsigned gen = ns_current(slot);
    if (ts->ns_ready[slot] == gen)
        return;
    ts->ns_ready[slot] = gen;
    ns_tls_fill(c);
    init();
}

void thread_ns_created(vlcs_ctx *c)
{
    int slot = ns_slot(c->ns.lmid);
    tstate()->ns_ready[slot] = ns_current(slot);
}

void thread_ns_gone(vlcs_ctx *c)
{
    __atomic_fetch_add(&ns_generation[ns_slot(c->ns.lmid)], 1, __ATOMIC_ACQ_REL);
}

/* ---- public ------------------------------------------------------------- */

VLCS_API int vlcs_enter(vlcs_ctx *h)
{
    vlcs_ctx *c = ctx_get(h, "entering a context");
    if (c == NULL || ctx_broken(c, "entering a context"))
        return -1;
    struct tstate *ts = tstate();
    if (ts->depth == MAX_DEPTH) {
        set_error(LIMIT_CODE(VLCS_LIMIT_NESTING), "Error entering context '%s': contexts are nested %d deep already; leave one "
                  "first",
                  c->name, MAX_DEPTH);
        return -1;
    }
    if (ts->depth == 0) {
        if (ts->implicit == NULL) /* a library thread is watched from its start */
            watch_exit(ts);
        atomic_store(&ts->moved, false);
        if (mask_get_thread(0, &ts->saved) != 0) {
            set_error(VLCS_E_SYSTEM, "Error entering context '%s': sched_getaffinity failed: %s", c->name,
                      strerror(errno));
            return -1;
        }
        ts->cur = ts->saved;
    } else {
        refresh_if_moved(ts);
    }
    pthread_mutex_lock(&c->lock);
    if (!ctx_still(c, h)) { /* destroyed while we checked */
        pthread_mutex_unlock(&c->lock);
        return ctx_gone(h, "entering a context");
    }
    struct member *m = member_add(c, ts);
    if (m == NULL) {
        pthread_mutex_unlock(&c->lock);
        set_error(VLCS_E_SYSTEM, "Error entering context '%s': out of memory", c->name);
        return -1;
    }
    if (apply(ts, &ctx_view(c)->mask) != 0) {
        int e = errno;
        member_drop_if_unused(c, m);
        pthread_mutex_unlock(&c->lock);
        set_error(VLCS_E_SYSTEM, "Error entering context '%s': cannot move the thread to CPUs %s: %s", c->name,
                  ctx_view(c)->list, strerror(e));
        return -1;
    }
    m->entered++;
    c->entered++;
    bool busy = c->el.active && c->entered == 1;
    ts->stack[ts->depth] = c;
    hooks_enter(c, ts->hook_saved[ts->depth]);
    __atomic_store_n(&ts->depth, ts->depth + 1, __ATOMIC_RELEASE);
    /* Under the lock: a first load that fails gives the namespace it made
     * back under it, and its libc must not run after that. */
    ns_thread_ready(c, ts);
    pthread_mutex_unlock(&c->lock);
    if (tracing_on())
        trace_enter(c);
    publish_slot(ts);
    /* The context's CPUs are taken back (or more lent) before this returns. */
    if (busy)
        elastic_busy_changed(c, true);
    return 0;
}

VLCS_API int vlcs_leave(void)
{
    struct tstate *ts = tstate();
    if (ts->depth == 0) {
        set_error(VLCS_E_INVALID, "Error leaving a context: this thread has not entered any (vlcs_leave without "
                  "vlcs_enter)");
        return -1;
    }
    refresh_if_moved(ts);
    gscope_clear_self(); /* a lookup of the context's libc may have left it */
    if (tracing_on())
        trace_leave(ts->stack[ts->depth - 1]);
    pop_frame(ts);

    const vmask *target;
    if (ts->depth > 0)
        target = &ctx_view(ts->stack[ts->depth - 1])->mask;
    else if (ts->implicit != NULL)
        target = &ctx_view(ts->implicit)->mask;
    else
        target = &ts->saved;
    /* The thread has left even if the CPUs it had are gone (offlined, or a
     * cgroup shrank): it then stays where it is. */
    apply(ts, target);
    return 0;
}

VLCS_API int vlcs_ctx_call(vlcs_ctx *h, vlcs_call_fn fn, void *arg, void **result)
{
    vlcs_ctx *c = ctx_get(h, "calling into a context");
    if (c == NULL)
        return -1;
    if (fn == NULL) {
        set_error(VLCS_E_INVALID, "Error calling into context '%s': the function is NULL",
                  c->name);
        return -1;
    }
    struct tstate *ts = tstate();
    int depth = ts->depth;
    if (vlcs_enter(h) != 0)
        return -1;
    void *r = NULL;
    int rc = fault_guarded(c, fn, arg, &r);
    if (rc <= 0) {
        vlcs_leave();
        if (rc == 0 && result != NULL)
            *result = r;
        return rc;
    }
    /* A fault: the enters made since were cut short of their leaves. */
    while (ts->depth > depth && vlcs_leave() == 0)
        ;
    const char *line = atomic_load_explicit(&c->fault, memory_order_acquire);
    set_error(VLCS_E_FAULT, "Context '%s' faulted: %.*s; it is broken (its memory stays mapped "
              "and it cannot be entered again): destroy it and make a new one",
              c->name, (int)strcspn(line, "\n"), line);
    return -1;
}

VLCS_API vlcs_ctx *vlcs_current(void)
{
    vlcs_ctx *c = effective(tstate());
    return c != NULL ? c->handle : NULL;
}

VLCS_API void *vlcs_enter_binding(vlcs_ctx *c, void *obj, const struct vlcs_binding *b)
{
    if (vlcs_enter(c) == 0) {
        b->incref(obj);
        return obj;
    }
    int code = vlcs_errcode();
    b->raise(b->classes[code > 0 && code < (int)(sizeof b->classes / sizeof b->classes[0]) ? code : VLCS_E_SYSTEM], vlcs_error());
    return NULL;
}

VLCS_API void vlcs_leave_binding(void *type, void *value, void *traceback)
{
    (void)type, (void)value, (void)traceback;
    vlcs_leave();
}

/* ---- fork ------------------------------------------------------------------ */

/* In a forked child only the forking thread lives on: forget the others
 * (their ids now name threads of the parent, which set_cpus must not move),
 * re-register this one, and renew locks another thread may have held. */
void thread_after_fork(void)
{
    vlcs_thread_self.tid = 0;
    struct tstate *ts = tstate();
    /* The registry's lock: held across fork by runtime.c's prepare handler. */
    for (vlcs_ctx *c = registry_first(); c; c = registry_next(c)) {
        pthread_mutex_init(&c->lock, NULL);
        c->nmembers = 0;
        c->entered = 0;
        c->created_live = 0;
    }
    for (int i = 0; i < ts->depth; i++) {
        struct member *m = member_add(ts->stack[i], ts);
        if (m)
            m->entered++;
        ts->stack[i]->entered++;
    }
    if (ts->implicit) {
        struct member *m = member_add(ts->implicit, ts);
        if (m)
            m->created = true;
        ts->implicit->created_live = 1;
    }
}

/* ---- threads created by a context's libraries ----------------------------- */

void thread_created(vlcs_ctx *c) { __atomic_add_fetch(&c->created_live, 1, __ATOMIC_ACQ_REL); }

void thread_begin(vlcs_ctx *c, void *(*start)(void *))
{
    struct tstate *ts = tstate();
    pthread_mutex_lock(&c->lock);
    const vmask *mask = &ctx_view(c)->mask;
    mask_set_thread(0, mask);
    ts->cur = *mask;
    __atomic_store_n(&ts->implicit, c, __ATOMIC_RELEASE);
    publish_slot(ts);
    struct member *m = member_add(c, ts);
    if (m != NULL) {
        m->created = true;
        m->start = start;
    }
    pthread_mutex_unlock(&c->lock);
    watch_exit(ts);
    ns_thread_ready(c, ts);
}

static void implicit_end(struct tstate *ts)
{
    vlcs_ctx *c = ts->implicit;
    pthread_mutex_lock(&c->lock);
    struct member *m = member_find(c, ts);
    if (m) {
        m->created = false;
        member_drop_if_unused(c, m);
    }
    ns_note_ended(c, ts->tid);
    __atomic_sub_fetch(&c->created_live, 1, __ATOMIC_ACQ_REL);
    ts->implicit = NULL;
    publish_slot(ts);
    pthread_mutex_unlock(&c->lock);
}

VLCS_API int vlcs_thread_adopt(vlcs_ctx *h)
{
    vlcs_ctx *c = ctx_get(h, "adopting a thread");
    if (c == NULL)
        return -1;
    struct tstate *ts = tstate();
    if (ts->implicit != NULL || ts->depth > 0) {
        set_error(VLCS_E_INVALID, "Error adopting a thread into context '%s': the thread %s already",
                  c->name, ts->implicit != NULL ? "belongs to a context" : "is inside a context");
        return -1;
    }
    pthread_mutex_lock(&c->lock);
    bool still = ctx_still(c, h);
    if (still)
        thread_created(c); /* under the lock: destroy sees it, or refuses us */
    pthread_mutex_unlock(&c->lock);
    if (!still)
        return ctx_gone(h, "adopting a thread");
    thread_begin(c, NULL); /* no start routine: a thread of the program's own */
    return 0;
}

size_t threads_created_starts(vlcs_ctx *c, void **out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < c->nmembers && n < cap; i++)
        if (c->members[i].created)
            out[n++] = (void *)c->members[i].start;
    return n;
}

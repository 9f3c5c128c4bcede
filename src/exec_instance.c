/*
 * exec_instance.c - a program's instance (vlcs_ctx_exec) while it runs: the
 * ways a process ends, ending the instance alone.
 *
 *  - exit(), _exit() and quick_exit() reach libvlcs through the interposer
 *    (api->exit): on any thread of an instance they end that instance
 *    (on its main thread a longjmp back to exec.c's run), anywhere else
 *    the process; so do abort() and the ends libc reaches inside itself
 *    (error(), err()), which the interposer catches (ip_end.c);
 *  - its children are its own: a wait for any child waits for one it
 *    started;
 *  - an exec would replace the process: on an instance's thread the new
 *    program runs in a grandchild instead (exec_instead).
 *
 * Below the namespaces (namespace.c hands these to every interposer), so
 * that it calls nothing of theirs.
 */
#include "common.h"
#include "exec_instance.h"
#include "context.h"
#include "exec_signals.h"
#include "exec_streams.h"
#include "fault.h"
#include "handles.h"
#include "registry.h"
#include "thread.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static __thread struct instance *running; /* the instance this thread runs */

void exec_flush(vlcs_ctx *c)
{
    if (!c->copy_mode)
        c->ns.libc_fflush(NULL);
    else if (c->cp.run_files != NULL)
        c->cp.run_files(0); /* the streams the run opened, and its own */
    if (c->copy_mode) /* and the context's, where std::cout writes */
        streams_for_copies_flush(c);
}

/* A child the program forks (system, popen, fork and exec) is a process
 * of its own: its exit and exec are its own.  (It has the instance's
 * streams as its 0, 1 and 2 already: they are the run's thread's.) */
static void child_leaves_instance(void) { running = NULL; }

/* The instance this thread runs, in this process (not a vfork child's). */
static struct instance *instance_here(void)
{
    struct instance *i = running;
    return i != NULL && i->pid == getpid() ? i : NULL;
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static void atfork_install(void) { pthread_atfork(NULL, NULL, child_leaves_instance); }

/* ---- an end from another of its threads -----------------------------------
 * exit() called by a thread the program started ends the instance as it
 * ends a process: that thread runs the atexit handlers and flushes the
 * streams (not for _exit or abort), the main thread is ended where it is
 * (as by a signal's default end, exec_signals.c), and the calling thread
 * stops there, without unwinding, as every thread but one does at a
 * process's exit.  The instance ends with the status given.  The first
 * thread to take the end has it: one coming later only stops. */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t live_cond = PTHREAD_COND_INITIALIZER;
static struct instance *live_first;
/* While this thread runs the handlers of the instance it ends: where an
 * exit() in one of them comes back to. */
static __thread jmp_buf *ending_here;

static _Atomic pid_t live_pid; /* the process they run in (not a forked child) */

static void live_add(struct instance *i)
{
    atomic_store(&live_pid, i->pid);
    pthread_mutex_lock(&live_lock);
    i->next_live = live_first;
    live_first = i;
    pthread_mutex_unlock(&live_lock);
}

/* The instance whose program started this thread, in this process (a
 * child it forked ends as a process); with live_lock held. */
static struct instance *live_of_thread(void)
{
    vlcs_ctx *c = thread_current();
    struct instance *i = live_first;
    while (c != NULL && i != NULL && i->c != c)
        i = i->next_live;
    return c != NULL && i != NULL && i->pid == getpid() ? i : NULL;
}

/* Takes the end of i for this thread: true when no thread took it before. */
static bool take_end(struct instance *i)
{
    if (i->ender != 0)
        return false;
    i->ender = (pid_t)syscall(SYS_gettid);
    return true;
}

static __attribute__((noreturn)) void stop_this_thread(void)
{
    thread_end_here();
    for (;;)
        syscall(SYS_exit, 0);
}

static __attribute__((noreturn)) void end_from_thread(struct instance *i, int status, bool now)
{
    i->end_status = status;
    i->now = true; /* its main thread runs no handler */
    i->discard = now;
    pthread_mutex_unlock(&live_lock);
    if (!now && i->next_handler != NULL) {
        jmp_buf back;
        ending_here = &back;
        setjmp(back); /* an exit() in a handler comes back here */
        void (*fn)(void *);
        void *arg;
        while (ending_here != NULL && i->next_handler(&fn, &arg))
            fn(arg);
        if (ending_here != NULL)
            exec_flush(i->c);
        ending_here = NULL;
    }
    exec_raise(i->c, SIGKILL); /* its main thread ends at once, or at its next wait */
    pthread_mutex_lock(&live_lock);
    i->handlers_done = true;
    pthread_cond_broadcast(&live_cond);
    while (!i->main_left)
        pthread_cond_wait(&live_cond, &live_lock);
    pthread_mutex_unlock(&live_lock); /* i is its main thread's: gone soon */
    stop_this_thread();
}

/* On a thread of an instance other than its main one: ends the instance
 * (as above) and does not return; returns on any other thread. */
static void end_instance_of_thread(int status, bool now)
{
    if (atomic_load(&live_pid) != getpid())
        return; /* none here, or a forked child, whose lock may be held for good */
    if (ending_here != NULL) { /* an exit in a handler it runs */
        jmp_buf *back = ending_here;
        pthread_mutex_lock(&live_lock);
        struct instance *i = live_of_thread();
        if (i != NULL) {
            i->end_status = status;
            i->discard = now;
        }
        pthread_mutex_unlock(&live_lock);
        if (now)
            ending_here = NULL;
        longjmp(*back, 1);
    }
    pthread_mutex_lock(&live_lock);
    struct instance *i = live_of_thread();
    if (i == NULL) {
        pthread_mutex_unlock(&live_lock);
        return;
    }
    if (take_end(i))
        end_from_thread(i, status, now);
    pthread_mutex_unlock(&live_lock);
    stop_this_thread(); /* another thread is ending it */
}

/* The main thread's end of the program: false when another thread took
 * the end first (its handlers are that thread's). */
bool instance_main_takes_end(struct instance *i)
{
    pthread_mutex_lock(&live_lock);
    bool mine = take_end(i);
    pthread_mutex_unlock(&live_lock);
    return mine;
}

/* Once the main thread left the program: waits for a thread that took the
 * end to have run the handlers, lets it stop and waits until it is gone
 * (it may be inside vlcs with i's address).  Whether another thread ended
 * the instance. */
static bool live_remove(struct instance *i)
{
    pid_t me = (pid_t)syscall(SYS_gettid);
    pthread_mutex_lock(&live_lock);
    for (struct instance **p = &live_first; *p != NULL; p = &(*p)->next_live)
        if (*p == i) {
            *p = i->next_live;
            break;
        }
    pid_t ender = i->ender;
    bool other = ender != 0 && ender != me;
    while (other && !i->handlers_done)
        pthread_cond_wait(&live_cond, &live_lock);
    i->main_left = true;
    pthread_cond_broadcast(&live_cond);
    pthread_mutex_unlock(&live_lock);
    if (other)
        thread_wait_gone(ender);
    return other;
}

void instance_begin(struct instance *i)
{
    pthread_once(&atfork_once, atfork_install);
    running = i;
    live_add(i);
}

bool instance_end(struct instance *i)
{
    running = NULL;
    return live_remove(i);
}

bool instance_running_here(void) { return running != NULL; }

/* api->exit and friends (namespace.c): the end of the instance this thread
 * runs, or of the process. */
void exec_exit(int status)
{
    struct instance *i = instance_here();
    if (i != NULL) {
        i->status = status;
        longjmp(i->done, 1);
    }
    end_instance_of_thread(status, false);
    exit(status);
}

void exec_quick_exit(int status)
{
    if (instance_here() != NULL)
        exec_exit(status);
    end_instance_of_thread(status, true);
    quick_exit(status);
}

void exec_exit_now(int status)
{
    struct instance *i = instance_here();
    if (i != NULL) {
        i->now = i->discard = true;
        exec_exit(status);
    }
    end_instance_of_thread(status, true);
    _exit(status);
}

int exec_pthread_join(pthread_t th, void **ret)
{
    if (instance_here() == NULL)
        return pthread_join(th, ret);
    /* glibc's join waits on past a signal: in slices, then, between
     * which an end it could not take where it was is taken */
    for (;;) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 10 * 1000 * 1000;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        int rc = pthread_timedjoin_np(th, ret, &until);
        if (rc != ETIMEDOUT)
            return rc;
        int end = exec_signals_end_pending();
        if (end != 0)
            exec_exit_now(128 + end);
    }
}

/* api->abort: abort() ends the instance as SIGABRT
 * ends a process (128 + 6, as a shell reports it), its handlers unrun;
 * anywhere else the process. */
void exec_abort(void)
{
    if (instance_here() != NULL)
        exec_exit_now(128 + SIGABRT);
    end_instance_of_thread(128 + SIGABRT, true);
    fault_abort();
    abort();
}

/* ---- an instance's children --------------------------------------------
 * Children are the process's: a shell instance's wait for any child (dash's
 * wait3) reaped another instance's, which then reported 255.  The
 * instance's thread keeps the list of those it started, and its waits for
 * any child wait for one of them. */

void exec_child_started(pid_t pid)
{
    struct instance *i = instance_here();
    if (i == NULL || pid <= 0)
        return;
    if (array_grow((void **)&i->children, &i->capchildren, i->nchildren, sizeof *i->children) == 0)
        i->children[i->nchildren++] = pid;
    exec_signals_child(pid);
}

pid_t exec_fork(void)
{
    pid_t pid = fork();
    if (pid > 0)
        exec_child_started(pid);
    return pid;
}

/* Blocks until one of i's children ends: 0; -1 with errno (EINTR: a
 * signal handler ran, as a wait is interrupted); 1 when the kernel has no
 * pidfds (before 5.3). */
static int children_poll(const struct instance *i)
{
    enum { MAX_POLLED = 256 };
    struct pollfd fds[MAX_POLLED];
    size_t n = 0;
    for (size_t k = 0; k < i->nchildren && n < MAX_POLLED; k++) {
        int fd = (int)syscall(SYS_pidfd_open, i->children[k], 0);
        if (fd >= 0)
            fds[n++] = (struct pollfd){.fd = fd, .events = POLLIN};
        else if (errno == ENOSYS)
            return 1;
    }
    int rc = n > 0 ? poll(fds, n, -1) : 0;
    int e = errno;
    for (size_t k = 0; k < n; k++)
        close(fds[k].fd);
    errno = e;
    return rc < 0 ? -1 : 0;
}

pid_t exec_wait4(pid_t pid, int *status, int options, struct rusage *ru)
{
    struct instance *i = instance_here();
    if (i == NULL)
        return wait4(pid, status, options, ru);
    if (pid > 0) {
        int st = 0;
        pid_t r = wait4(pid, &st, options, ru);
        if (r > 0 && (WIFEXITED(st) || WIFSIGNALED(st))) {
            exec_signals_child_gone(r);
            for (size_t k = 0; k < i->nchildren; k++)
                if (i->children[k] == r)
                    i->children[k--] = i->children[--i->nchildren];
        }
        if (r > 0 && status != NULL)
            *status = st;
        return r;
    }
    for (;;) {
        if (i->nchildren == 0) {
            errno = ECHILD;
            return -1;
        }
        for (size_t k = 0; k < i->nchildren; k++) {
            int st = 0;
            pid_t r = wait4(i->children[k], &st, options | WNOHANG, ru);
            if (r == 0)
                continue;
            if (r < 0 && errno != ECHILD)
                return -1;
            if (r < 0 || WIFEXITED(st) || WIFSIGNALED(st)) { /* gone: off the list */
                exec_signals_child_gone(i->children[k]);
                i->children[k--] = i->children[--i->nchildren];
            }
            if (r > 0) {
                if (status != NULL)
                    *status = st;
                return r;
            }
        }
        if (options & WNOHANG)
            return 0;
        int polled = children_poll(i);
        if (polled < 0) {
            /* a signal's end it could not take inside the wait */
            int end = errno == EINTR ? exec_signals_end_pending() : 0;
            if (end != 0)
                exec_exit_now(128 + end);
            return -1;
        }
        if (polled > 0) { /* no pidfds: the oldest child, then */
            pid_t r = wait4(i->children[0], status, options, ru);
            if (r > 0 && status != NULL && (WIFEXITED(*status) || WIFSIGNALED(*status))) {
                exec_signals_child_gone(i->children[0]);
                i->children[0] = i->children[--i->nchildren];
            }
            return r;
        }
    }
}

pid_t exec_wait4_api(pid_t pid, int *status, int options, struct rusage *ru)
{
    pid_t r = exec_wait4(pid, status, options, ru);
    return r < 0 ? -errno : r;
}

/* api->exec_instead: an exec on the thread running an instance would
 * replace the process, every instance with it.  The new program runs in a
 * child instead (run: the namespace libc's exec, called in the child, so
 * that PATH and the environment are the instance's; the child takes the
 * instance's streams at fork), and the instance ends with its status, as
 * a shell's `exec` looks from outside.  An exec that fails in the child
 * reports its errno through a close-on-exec pipe, returned here negated
 * (errno is each libc copy's own: the interposer sets the program's), and
 * the program sees the exec fail as it would.  1: not an instance's
 * thread, the caller execs. */
/* fork, as a raw clone: no fork handlers run (other threads may hold the
 * locks they take), so the child may only make system calls.  signal: what
 * the child's end sends its parent; 0 keeps it from every wait but one with
 * __WALL. */
static pid_t raw_fork(int signal) { return (pid_t)syscall(SYS_clone, (unsigned long)signal, NULL, NULL, NULL, NULL); }

int exec_instead(int (*run)(void *), void *arg)
{
    struct instance *i = instance_here();
    if (i == NULL)
        return 1;
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0)
        return -errno;
    /* The program runs in a grandchild: another instance reaping whatever
     * child ends (a shell's waitpid(-1)) would take a child's status, and
     * an exec makes any child one that such a wait sees.  The middle
     * process never execs; it waits for the program and ends with its
     * status, and only a wait with __WALL sees it end. */
    /* The middle runs with every signal blocked: the process's handlers
     * (a shell instance's SIGCHLD handler reaps any child) are no business
     * of it; the program gets the instance's mask back before its exec. */
    sigset_t all, mask;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &mask);
    pid_t middle = raw_fork(0);
    if (middle != 0)
        pthread_sigmask(SIG_SETMASK, &mask, NULL);
    if (middle < 0) {
        int e = errno;
        close(pipefd[0]);
        close(pipefd[1]);
        return -e;
    }
    if (middle == 0) {
        close(pipefd[0]);
        pid_t pid = raw_fork(SIGCHLD);
        if (pid == 0) {
            syscall(SYS_rt_sigprocmask, SIG_SETMASK, &mask, NULL, _NSIG / 8);
            int e = -run(arg);
            ssize_t w = write(pipefd[1], &e, sizeof e);
            (void)w;
            _exit(127);
        }
        close(pipefd[1]);
        int st = 0;
        if (pid < 0)
            _exit(127);
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
        _exit(WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1);
    }
    close(pipefd[1]);
    int e = 0;
    ssize_t n;
    do
        n = read(pipefd[0], &e, sizeof e);
    while (n < 0 && errno == EINTR);
    close(pipefd[0]);
    int st = 0;
    while (waitpid(middle, &st, __WALL) < 0 && errno == EINTR)
        ;
    if (n == (ssize_t)sizeof e)
        return -e;
    exec_exit_now(WIFEXITED(st) ? WEXITSTATUS(st) : 1);
}

/*
 * exec.c - running an unmodified program inside a context: vlcs_ctx_exec.
 *
 * A program is an ELF object like a library, but glibc refuses to dlopen
 * one ("cannot dynamically load position-independent executable", the
 * DF_1_PIE flag since 2.30).  A copy with that flag cleared, served from a
 * memfd, loads into the context's namespace like any library: the program's
 * globals and those of what it links are the context's.  Its main is found
 * by name (programs linked with -rdynamic), in its symbol table, or in
 * glibc's x86-64 _start, which hands main to __libc_start_main in %rdi.
 *
 * What a loaded program lacks is what the kernel and __libc_start_main
 * would have done, and what copy relocations break:
 *
 *  - a default gcc build (-fPIE) reads stdout, optarg, optind, environ...
 *    from copies of libc's variables in its own data (exec_copies.c);
 *  - exit(), _exit() and quick_exit() reach libvlcs through the interposer
 *    (api->exit): on any thread of an instance they end that instance
 *    (on its main thread a longjmp back here), anywhere else the process;
 *    so do abort() and the ends libc reaches inside itself (error(),
 *    err()), which the interposer catches (ip_end.c);
 *  - an exec would replace the process: on an instance's thread the new
 *    program runs in a grandchild instead (exec_instead);
 *  - program_invocation_name is the instance's argv[0].
 *
 * Refused before anything is loaded, each in one sentence: a static
 * program, a setuid or setgid one, another architecture's, a program that
 * is not position-independent (one address space holds it once), one that
 * needs an executable stack.
 */
#include "internal.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec_copies.h"
#include "exec_program.h"
#include "exec_signals.h"

/* What the program's load brought into the namespace besides it (libgomp,
 * OpenBLAS...) is held as if loaded by vlcs_ctx_load: it stays when the
 * program is unloaded after its run, and destroying the context stops its
 * threads and unloads it as it does every library's. */
static void keep_dependencies(vlcs_ctx *c, const struct link_map *prog)
{
    for (const struct link_map *lm = prog->l_next; lm != NULL; lm = lm->l_next) {
        if (lm->l_name == NULL || lm->l_name[0] == '\0')
            continue;
        void *h = dlmopen(c->lmid, lm->l_name, RTLD_NOLOAD | RTLD_NOW);
        if (h == NULL)
            continue;
        pthread_mutex_lock(&c->lock);
        int rc = ns_note_handle(c, h);
        pthread_mutex_unlock(&c->lock);
        if (rc != 0)
            dlclose(h); /* out of memory: it goes with the program */
    }
}

/* ---- running an instance ------------------------------------------------- */

typedef int (*next_handler_fn)(void (**)(void *), void **);

struct instance {
    jmp_buf done;
    volatile int status; /* written by exec_exit, read after its longjmp */
    volatile bool now; /* _exit: the rest of its atexit handlers never run */
    volatile bool discard; /* _exit, abort, a signal: its streams' buffers are lost */
    pid_t pid; /* the process it runs in: a vfork child of it is not it */
    pid_t *children; /* started by its thread and not reaped yet */
    size_t nchildren, capchildren;
    /* Its end, which any of its threads may take (under live_lock). */
    vlcs_ctx *c;
    next_handler_fn next_handler;
    struct instance *next_live;
    pid_t ender;        /* the thread that took it (its main thread's or another) */
    int end_status;     /* another thread's exit status */
    bool handlers_done; /* that thread has run the handlers and flushed */
    bool main_left;     /* the main thread is out of the program */
};

static __thread struct instance *running;

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
            ns_flush(i->c);
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
static bool main_takes_end(struct instance *i)
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

typedef void (*handlers_fn)(uintptr_t, uintptr_t);
/* The interposer keeps the atexit handlers (and C++ destructors of
 * statics first used in main) the program's own code registers while it
 * runs, which libvlcs runs at the
 * instance's end, on its thread (run_exit_handlers): left to libc, dlclose
 * would run them under the loader's lock, where an exit() in one (coreutils'
 * close_stdout calls _exit when its output fails) could not end the
 * instance, only the process.  (Not inlined: vlcs_ctx_exec's frame holds a
 * setjmp, and its locals would be clobber-prone.) */
static __attribute__((noinline)) next_handler_fn catch_handlers(vlcs_ctx *c, const struct link_map *lm,
                                      const struct program *p)
{
    handlers_fn keep = (handlers_fn)dlsym(c->ip_handle, "vlcs_ip_exec_handlers");
    next_handler_fn next = (next_handler_fn)dlsym(c->ip_handle, "vlcs_ip_exec_next_handler");
    if (keep == NULL || next == NULL)
        return NULL;
    uint64_t lo = UINT64_MAX, hi = 0;
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(p->map + p->eh->e_phoff);
    for (int i = 0; i < p->eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD) {
            lo = ph[i].p_vaddr < lo ? ph[i].p_vaddr : lo;
            hi = ph[i].p_vaddr + ph[i].p_memsz > hi ? ph[i].p_vaddr + ph[i].p_memsz : hi;
        }
    if (lo >= hi)
        return NULL;
    keep(lm->l_addr + lo, lm->l_addr + hi);
    return next;
}

/* Its handlers, last registered first, as exit() runs them: an exit() in
 * one ends the instance with its status and the others still run, an
 * _exit() ends it at once. */
static void run_exit_handlers(struct instance *inst, next_handler_fn next_handler)
{
    next_handler_fn volatile next = next_handler;
    setjmp(inst->done); /* an exit in a handler comes back here */
    void (*fn)(void *);
    void *arg;
    while (!inst->now && next(&fn, &arg))
        fn(arg);
}

/* The interposer drops what it kept of a program's (its handlers when it
 * ended with _exit). */
static void forget_handlers(vlcs_ctx *c)
{
    handlers_fn keep = (handlers_fn)dlsym(c->ip_handle, "vlcs_ip_exec_handlers");
    if (keep != NULL)
        keep(0, 0);
}

/* main, then the handlers it registered, on the instance's thread behind
 * vlcs_ctx_call: a fault ends the instance as a signal ends a process. */
struct run_main {
    main_fn main_of;
    int argc;
    char **argv, **envp;
    struct instance *inst;
    next_handler_fn next_handler;
};

static void *run_main(void *arg)
{
    struct run_main *r = arg;
    if (setjmp(r->inst->done) == 0)
        r->inst->status = r->main_of(r->argc, r->argv, r->envp);
    if (r->next_handler != NULL && main_takes_end(r->inst))
        run_exit_handlers(r->inst, r->next_handler);
    return NULL;
}

/* A run of a program: what vlcs_ctx_exec prepared, and what its thread
 * gives back (the status, or an error to set on the caller's thread). */
struct run {
    vlcs_ctx *ctx, *c;
    void *h;
    int fd; /* the program's copy, open while it is loaded */
    const struct program *p;
    const struct link_map *lm;
    bool close_fd; /* the copy was unloaded: its descriptor may go */
    char path[PATH_MAX];
    int argc;
    char **argv;
    main_fn main_of;
    next_handler_fn next_handler;
    int status;
    int error_code;
    char error[1024];
};

/* A new process has the descriptors its parent had without FD_CLOEXEC:
 * the run's thread, whose table is a copy of the process's, closes the
 * others (Python's pipes, the other instances' streams: a copy of the
 * write end of its own stdin would keep it from ever seeing its end). */
static void close_not_inherited(void)
{
    DIR *d = opendir("/proc/thread-self/fd");
    if (d == NULL)
        return;
    int own = dirfd(d);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        char *end;
        long fd = strtol(e->d_name, &end, 10);
        if (*end != '\0' || end == e->d_name || fd <= 2 || fd == own)
            continue;
        int flags = fcntl((int)fd, F_GETFD);
        if (flags >= 0 && (flags & FD_CLOEXEC))
            close((int)fd);
    }
    closedir(d);
}

static void *run_failed(struct run *r)
{
    r->error_code = vlcs_errcode();
    snprintf(r->error, sizeof r->error, "%s", vlcs_error());
    r->status = -1;
    return NULL;
}

static void *run_instance(void *arg)
{
    struct run *r = arg;
    vlcs_ctx *c = r->c;
    struct run_streams streams;
    /* Descriptors, and the current directory, root and umask, of its own
     * (its threads share them): a chdir moves it alone, as in a process. */
    bool alone = unshare(CLONE_FILES | CLONE_FS) == 0;
    if (alone)
        close_not_inherited();
    else
        set_error(VLCS_E_SYSTEM, "Error running %s: the thread cannot have descriptors and a "
                  "current directory of its own (unshare: %s)", r->path, strerror(errno));
    /* Entered first: the namespace's libc sets up a thread that enters
     * (its streams are made by it) */
    bool entered = alone && vlcs_enter(r->ctx) == 0, given = false;
    /* the program's copies of libc's variables take their values once the
     * streams are the run's */
    if (!entered || !(given = streams_give(c, &streams, r->path) == 0) ||
        exec_bind_copies(c, r->lm, r->p, r->argv[0]) != 0 || exec_signals_begin(c) != 0) {
        run_failed(r);
        if (given)
            streams_take_back(&streams);
        if (entered)
            vlcs_leave();
        forget_handlers(c);
        exec_forget_copies(c);
        ns_close_handle(c, r->h);
        r->close_fd = true;
        return NULL;
    }
    struct instance inst = {.status = 0, .pid = getpid(), .c = c, .next_handler = r->next_handler};
    pthread_once(&atfork_once, atfork_install);
    running = &inst;
    live_add(&inst);
    struct run_main rm = {r->main_of, r->argc, r->argv, *c->ns_environ_slot, &inst,
                          r->next_handler};
    int rc = vlcs_ctx_call(r->ctx, run_main, &rm, NULL);
    running = NULL;
    bool by_thread = live_remove(&inst);
    free(inst.children);
    exec_signals_end(c);
    if (by_thread)
        inst.status = inst.end_status;
    if (rc != 0 && by_thread) {
        /* ended by another of its threads: its main thread was cut short
         * where it was, as a fault cuts it (the program stays loaded), but
         * quietly, its handlers run and its streams flushed by that thread */
        forget_handlers(c);
        exec_forget_copies(c);
        ns_handed_back();
        streams_abandon(&streams);
        vlcs_leave();
        r->status = inst.status & 0xff;
        return NULL;
    }
    if (rc != 0) {
        /* A fault: the context is broken, its program stays loaded (its
         * destructors unrun) with the copy's descriptor open, as glibc
         * names it by it. */
        int sig = vlcs_errcode() == VLCS_E_FAULT ? c->fault_signal : 0;
        if (sig == 0)
            run_failed(r);
        /* a signal sent to it ends it as quietly as a process */
        if (sig == 0 || sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL ||
            sig == SIGABRT || sig == SIGTRAP || sig == SIGSYS)
            streams_say_fault(c, r->path);
        forget_handlers(c);
        exec_forget_copies(c);
        ns_handed_back();
        streams_abandon(&streams);
        vlcs_leave();
        if (sig != 0)
            r->status = (128 + sig) & 0xff;
        return NULL;
    }
    /* Its destructors, as at its exit; then its output, unless it ended
     * as _exit or a signal ends a process, losing what it had buffered. */
    forget_handlers(c);
    exec_forget_copies(c);
    ns_handed_back();
    ns_close_handle(c, r->h);
    r->close_fd = true;
    if (inst.discard) {
        streams_discard(&streams);
    } else {
        ns_flush(c);
        streams_take_back(&streams);
    }
    vlcs_leave();
    r->status = inst.status & 0xff;
    return NULL;
}

VLCS_API int vlcs_ctx_exec(vlcs_ctx *ctx, char *const argv[])
{
    vlcs_ctx *c = ctx_get(ctx, "running a program");
    if (c == NULL)
        return -1;
    if (argv == NULL || argv[0] == NULL || argv[0][0] == '\0') {
        set_error(VLCS_E_INVALID, "Error running a program in context '%s': argv is empty",
                  c->name);
        return -1;
    }
    if (EXEC_MACHINE < 0) {
        set_error(VLCS_E_UNSUPPORTED,
                  "Error running %s: vlcs runs programs on x86-64 only", argv[0]);
        return -1;
    }
    if (running != NULL) {
        set_error(VLCS_E_INVALID,
                  "Error running %s: this thread is running a program already", argv[0]);
        return -1;
    }
    /* A program needs its own libc (its exit, its streams): a namespace. */
    pthread_mutex_lock(&c->lock);
    bool copies = c->copy_mode || c->mode_wanted == VLCS_MODE_COPIES;
    if (!copies && !c->has_ns)
        c->mode_wanted = VLCS_MODE_NAMESPACE;
    pthread_mutex_unlock(&c->lock);
    if (copies) {
        set_error(VLCS_E_INVALID, "Error running %s in context '%s': programs run in contexts "
                  "with a namespace of their own, and this one is in copy mode",
                  argv[0], c->name);
        return -1;
    }
    struct program p;
    if (program_open(&p, argv[0]) != 0) {
        program_close(&p);
        return -1;
    }
    int fd = loadable_copy(&p);
    if (fd < 0) {
        program_close(&p);
        return -1;
    }
    char fdpath[64];
    snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", fd);
    /* The memfd stays open while the copy is loaded: glibc knows a loaded
     * object by its name, and a reused number would silently give a later
     * load this one. */
    void *h = vlcs_ctx_load(ctx, fdpath);
    ns_handed_over(); /* it may lie where another run's copy was */
    if (h == NULL) {
        close(fd);
        char why[1024];
        snprintf(why, sizeof why, "%s", vlcs_error());
        int code = vlcs_errcode();
        program_close(&p);
        set_error(code, "Error running %s in context '%s': %s", p.path, c->name, why);
        return -1;
    }
    struct link_map *lm = NULL;
    main_fn main_of = NULL;
    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm != NULL)
        main_of = find_main(h, lm, &p);
    if (main_of == NULL) {
        ns_close_handle(c, h);
        close(fd);
        set_error(VLCS_E_NOT_FOUND,
                  "Error running %s: its main cannot be found (no symbol table, and its entry "
                  "point is not glibc's _start)",
                  p.path);
        program_close(&p);
        return -1;
    }
    keep_dependencies(c, lm);
    struct run r = {.ctx = ctx, .c = c, .h = h, .fd = fd, .p = &p, .lm = lm,
                    .argv = (char **)argv, .main_of = main_of,
                    .next_handler = catch_handlers(c, lm, &p), .status = -1};
    snprintf(r.path, sizeof r.path, "%s", p.path);
    while (r.argv[r.argc])
        r.argc++;
    /* Its own thread: a thread may have descriptors of its own, so that
     * the instance's streams are its 0, 1 and 2 and what it leaves open
     * is closed when it ends, as at a process's end. */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    struct rlimit stack;
    size_t size = 8u << 20; /* as a main thread's, within reason */
    if (getrlimit(RLIMIT_STACK, &stack) == 0 && stack.rlim_cur != RLIM_INFINITY &&
        stack.rlim_cur > size && stack.rlim_cur < (rlim_t)1 << 30)
        size = (size_t)stack.rlim_cur;
    pthread_attr_setstacksize(&attr, size);
    pthread_t t;
    int err = pthread_create(&t, &attr, run_instance, &r);
    pthread_attr_destroy(&attr);
    if (err != 0) {
        forget_handlers(c);
        exec_forget_copies(c);
        ns_close_handle(c, h);
        close(fd);
        program_close(&p);
        set_error(VLCS_E_SYSTEM, "Error running %s: no thread for it: %s", r.path, strerror(err));
        return -1;
    }
    pthread_join(t, NULL);
    program_close(&p);
    /* the copy's descriptor in the process's table (the run's thread had
     * its own), closed once the copy is unloaded */
    if (r.close_fd)
        close(fd);
    if (r.status < 0)
        set_error(r.error_code, "%s", r.error);
    return r.status;
}

VLCS_API int vlcs_ctx_set_stdio(vlcs_ctx *ctx, int in_fd, int out_fd, int err_fd)
{
    vlcs_ctx *c = ctx_get(ctx, "setting standard streams");
    if (c == NULL)
        return -1;
    int fds[3] = {in_fd, out_fd, err_fd};
    for (int i = 0; i < 3; i++)
        if (fds[i] >= 0 && fcntl(fds[i], F_GETFD) < 0) {
            set_error(VLCS_E_INVALID,
                      "Error setting the standard streams of context '%s': %d is not an open "
                      "file descriptor",
                      c->name, fds[i]);
            return -1;
        }
    pthread_mutex_lock(&c->lock);
    if (!ctx_still(c, ctx)) {
        pthread_mutex_unlock(&c->lock);
        return ctx_gone(ctx, "setting standard streams");
    }
    if (c->has_ns) {
        pthread_mutex_unlock(&c->lock);
        set_error(VLCS_E_INVALID,
                  "Error setting the standard streams of context '%s': it has loaded libraries "
                  "already; set them before its first load",
                  c->name);
        return -1;
    }
    for (int i = 0; i < 3; i++)
        if (fds[i] >= 0) {
            c->stdio_fd[i] = fds[i];
            c->stdio_set[i] = true;
        }
    pthread_mutex_unlock(&c->lock);
    return 0;
}

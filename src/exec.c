/*
 * exec.c - running an unmodified program inside a context: vlcs_ctx_exec.
 *
 * A program is an ELF object like a library, but glibc refuses to dlopen
 * one ("cannot dynamically load position-independent executable", the
 * DF_1_PIE flag since 2.30).  A copy with that flag cleared, served from a
 * memfd, loads into the context's namespace like any library: the program's
 * globals and those of what it links are the context's.  In copy mode the
 * program's own file is copied as its libraries are (elf_copy clears the
 * flag), and it shares the process's libc: the context's interposer copy
 * keeps per run what that libc keeps per process (interpose/ip_run.c).  Its main is found
 * by name (programs linked with -rdynamic), in its symbol table, or in
 * glibc's x86-64 _start, which hands main to __libc_start_main in %rdi.
 *
 * What a loaded program lacks is what the kernel and __libc_start_main
 * would have done, and what copy relocations break:
 *
 *  - a default gcc build (-fPIE) reads stdout, optarg, optind, environ...
 *    from copies of libc's variables in its own data (exec_copies.c);
 *  - exit(), _exit(), abort() and the ends libc reaches inside itself
 *    end the instance, not the process; its children and its exec are its
 *    own (exec_instance.c; on its main thread an end comes back here);
 *  - program_invocation_name is the instance's argv[0].
 *
 * Refused before anything is loaded, each in one sentence: a static
 * program, a setuid or setgid one, another architecture's, a program that
 * is not position-independent (one address space holds it once), one that
 * needs an executable stack.
 */
#include "common.h"
#include "context.h"
#include "error.h"
#include "copies_env.h"
#include "exec_copies.h"
#include "exec_instance.h"
#include "exec_program.h"
#include "exec_signals.h"
#include "exec_streams.h"
#include "handles.h"
#include "namespace.h"
#include "registry.h"

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


/* What the program's load brought into the namespace besides it (libgomp,
 * OpenBLAS...) is held as if loaded by vlcs_ctx_load: it stays when the
 * program is unloaded after its run, and destroying the context stops its
 * threads and unloads it as it does every library's. */
static void keep_dependencies(vlcs_ctx *c, const struct link_map *prog)
{
    for (const struct link_map *lm = prog->l_next; lm != NULL; lm = lm->l_next) {
        if (lm->l_name == NULL || lm->l_name[0] == '\0')
            continue;
        void *h = dlmopen(c->ns.lmid, lm->l_name, RTLD_NOLOAD | RTLD_NOW);
        if (h == NULL)
            continue;
        pthread_mutex_lock(&c->lock);
        int rc = ns_note_handle(c, h);
        pthread_mutex_unlock(&c->lock);
        if (rc != 0)
            dlclose(h); /* out of memory: it goes with the program */
    }
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
    handlers_fn keep = (handlers_fn)dlsym(exec_interposer(c), "vlcs_ip_exec_handlers");
    next_handler_fn next = (next_handler_fn)dlsym(exec_interposer(c), "vlcs_ip_exec_next_handler");
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
    handlers_fn keep = (handlers_fn)dlsym(exec_interposer(c), "vlcs_ip_exec_handlers");
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
    if (setjmp(r->inst->done) == 0) {
        errno = 0; /* as in a new process (in copy mode this libc's is the program's) */
        r->inst->status = r->main_of(r->argc, r->argv, r->envp);
        /* a signal's end that came inside libc and found no later call */
        int end = exec_signals_end_pending();
        if (end != 0) {
            r->inst->status = 128 + end;
            r->inst->now = r->inst->discard = true;
        }
    }
    if (r->next_handler != NULL && instance_main_takes_end(r->inst))
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
    bool alone;    /* the run's thread has a descriptor table of its own */
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

static void run_program(struct run *r)
{
    vlcs_ctx *c = r->c;
    struct run_streams streams;
    /* Descriptors, and the current directory, root and umask, of its own
     * (its threads share them): a chdir moves it alone, as in a process. */
    bool alone = r->alone = unshare(CLONE_FILES | CLONE_FS) == 0;
    /* In copy mode the context's streams are vlcs_ctx_set_stdio's
     * descriptors themselves (the caller's, close-on-exec): its 0, 1, 2. */
    for (int i = 0; alone && c->copy_mode && i < 3; i++)
        if (c->ns.stdio_set[i] && c->ns.stdio_fd[i] != i)
            dup2(c->ns.stdio_fd[i], i);
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
    FILE **program_streams[3] = {exec_program_var(r->lm, r->p, "stdin"),
                                 exec_program_var(r->lm, r->p, "stdout"),
                                 exec_program_var(r->lm, r->p, "stderr")};
    if (!entered || !(given = streams_give(c, &streams, r->path, program_streams) == 0) ||
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
        return;
    }
    if (c->copy_mode) {
        /* the interposer copy looks at the run's pending end before each
         * printf: one load, not a call */
        void (*pending)(_Atomic int *) =
            (void (*)(_Atomic int *))dlsym(exec_interposer(c), "vlcs_ip_exec_pending");
        if (pending != NULL)
            pending(exec_signals_pending_word(c));
    }
    struct instance inst = {.status = 0, .pid = getpid(), .c = c, .next_handler = r->next_handler};
    instance_begin(&inst);
    char **envp = c->copy_mode ? copy_env_block(c) : *c->ns.environ_slot;
    struct run_main rm = {r->main_of, r->argc, r->argv, envp, &inst, r->next_handler};
    int rc = vlcs_ctx_call(r->ctx, run_main, &rm, NULL);
    bool by_thread = instance_end(&inst);
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
        return;
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
        return;
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
        exec_flush(c);
        streams_take_back(&streams);
    }
    vlcs_leave();
    r->status = inst.status & 0xff;
}

/* The run, then what its descriptor table still holds closed, as at a
 * process's end: a thread the program left running (xz's encoders, which
 * a process's exit would end) shares the table, and would hold the write
 * ends of the instance's output pipes open for ever. */
static void *run_instance(void *arg)
{
    struct run *r = arg;
    run_program(r);
    if (r->alone)
        close_range(0, ~0U, 0);
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
    if (instance_running_here()) {
        set_error(VLCS_E_INVALID,
                  "Error running %s: this thread is running a program already", argv[0]);
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
    /* The copy's name, and so its link map's: /proc/PID/fd/N, which a
     * debugger or profiler opens from its own process and reads the copy
     * (/proc/self/fd/N would be one of their own descriptors: gdb blocked
     * reading its own pipe).  The memfd stays open while the copy is
     * loaded: glibc knows a loaded object by its name, and a reused number
     * would silently give a later load this one. */
    char fdpath[64];
    snprintf(fdpath, sizeof fdpath, "/proc/%d/fd/%d", (int)getpid(), fd);
    pthread_mutex_lock(&c->lock);
    c->loading_program = true;
    c->program_file = p.path;
    pthread_mutex_unlock(&c->lock);
    void *h = vlcs_ctx_load(ctx, fdpath);
    pthread_mutex_lock(&c->lock);
    c->loading_program = false;
    c->program_file = NULL;
    pthread_mutex_unlock(&c->lock);
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
    if (!c->copy_mode)
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
    if (c->backend != NULL) {
        pthread_mutex_unlock(&c->lock);
        set_error(VLCS_E_INVALID,
                  "Error setting the standard streams of context '%s': it has loaded libraries "
                  "already; set them before its first load",
                  c->name);
        return -1;
    }
    for (int i = 0; i < 3; i++)
        if (fds[i] >= 0) {
            c->ns.stdio_fd[i] = fds[i];
            c->ns.stdio_set[i] = true;
        }
    pthread_mutex_unlock(&c->lock);
    return 0;
}

/*
 * ip_abi.h - the table libvlcs hands to the interposer of each namespace.
 *
 * libvlcs_interpose.so is loaded first into every context's namespace, so
 * its definitions of sched_getaffinity, sysconf, open, malloc, ... take
 * precedence over that namespace's libc for everything loaded afterwards.
 * It holds no policy: each interposed function calls back into libvlcs (in
 * the base namespace) through this table, with the context it was bound to.
 * Keeping the logic in the base means one copy of it, one malloc heap and
 * one place that knows the context's state.
 */
#ifndef VLCS_IP_ABI_H
#define VLCS_IP_ABI_H

#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <sys/time.h>
#include <sys/types.h>

#define VLCS_IP_ABI_VERSION 15

/* Room in the interposer's writable data for the names of a namespace's
 * first objects: libvlcs's copy of the interposer that starts a namespace
 * names them there and in spare dynamic entries (ns_root.c). */
#define VLCS_IP_NEEDED_SYMBOL "vlcs_ip_needed"
#define VLCS_IP_NEEDED_ROOM 4096

struct vlcs_ctx;

struct rusage;

struct vlcs_ip_api {
    unsigned abi_version;
    struct vlcs_ctx *ctx;

    /* The base namespace's allocator: every namespace allocates from it, so a
     * pointer may be freed by any context or by the base. */
    void *(*malloc)(size_t);
    void (*free)(void *);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*memalign)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    size_t (*malloc_usable_size)(void *);

    /* CPU view.  filter_mask() intersects a mask the kernel returned for a
     * thread of this process with the context's CPUs (the whole context set
     * if the intersection is empty).  clamp_mask() intersects a requested
     * mask with the context's CPUs; it returns -1 if nothing is left.  The
     * _self ones are for the calling thread's own mask: a mask it read and
     * sets again unchanged is set as the kernel gave it. */
    void (*filter_mask)(struct vlcs_ctx *, size_t, cpu_set_t *);
    int (*clamp_mask)(struct vlcs_ctx *, size_t, const cpu_set_t *, size_t, cpu_set_t *);
    void (*filter_self)(struct vlcs_ctx *, size_t, cpu_set_t *);
    int (*clamp_self)(struct vlcs_ctx *, size_t, const cpu_set_t *, size_t, cpu_set_t *);
    long (*ncpus)(struct vlcs_ctx *);
    /* getloadavg(): -2 to ask the kernel, else what to return (elastic
     * contexts answer 0 so that OpenMP's dynamic teams follow vlcs). */
    int (*loadavg)(struct vlcs_ctx *, double *, int);

    /* Forged files (the table in view.c): for a read-only open of one, a
     * file descriptor with the context's view; -2 for any other open (the
     * caller opens it as usual).  forged_prefixes (NULL-terminated) lets the
     * interposer pass every other path on without a call. */
    int (*open_forged)(struct vlcs_ctx *, int dirfd, const char *path, int flags);
    const char *const *forged_prefixes;

    /* Thread-specific data keys: a thread's slots are shared by every libc
     * copy, so keys must come from one table (the base libc's) or a
     * destructor of one copy runs on data of another at thread exit.  The
     * keys are recorded with their context: a namespace that is unloaded
     * deletes those its libraries left, whose destructors would be gone. */
    int (*key_create)(struct vlcs_ctx *, pthread_key_t *, void (*)(void *));
    int (*key_delete)(struct vlcs_ctx *, pthread_key_t);
    void *(*getspecific)(pthread_key_t);
    int (*setspecific)(pthread_key_t, void *);

    /* Threads created by the context's libraries: started by the base's
     * pthread_create, so that they end through the base libc (its key
     * destructors, libvlcs's among them, and its per-thread allocator
     * cache's release run, however the thread ends); counted by the
     * creating thread as soon as the thread exists (so the count never lags
     * behind a library's pthread_create), registered by the new thread
     * itself with its start routine (which names the library). */
    int (*pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    void (*thread_created)(struct vlcs_ctx *);
    void (*thread_begin)(struct vlcs_ctx *, void *(*start)(void *));
    /* The base's: unwinding a thread the base started, and loading the
     * unwinder once in the base (the namespace's libc would load libgcc_s
     * into the namespace for good, and it could never be given back). */
    void (*pthread_exit)(void *);
    int (*pthread_cancel)(pthread_t);
    /* A thread the base started is joined and detached by the base too:
     * the namespace's libc would free its stack into the shared cache by
     * its own rules. */
    int (*pthread_join)(pthread_t, void **);
    int (*pthread_detach)(pthread_t);

    /* The base's ends of the process: a context's library that calls exit
     * flushes the base's stdio and runs the base's atexit handlers, once,
     * as a library the base dlopen'ed would. */
    void (*exit)(int);
    void (*quick_exit)(int);
    void (*exit_now)(int); /* _exit, _Exit */
    void (*abort)(void);
    /* An exec on the thread running a program's instance (vlcs_ctx_exec):
     * libvlcs runs run(arg) (the namespace libc's exec, returning -errno
     * when it fails) in a child and
     * ends the instance with its status; -errno when the exec failed (the
     * caller sets its own libc's errno); 1 when this thread runs no
     * instance (the caller execs). */
    int (*exec_instead)(int (*run)(void *), void *arg);

    /* Fork handlers (pthread_atfork) of the context's libraries, run by the
     * base libc's fork(), which is the one every process forks with; fork()
     * called by a library in the context is the base's too. */
    int (*register_atfork)(struct vlcs_ctx *, void (*)(void), void (*)(void), void (*)(void),
                           void *);
    pid_t (*fork)(void);

    /* Copy mode (../copies.c): the context's libraries are renamed copies
     * in the base namespace, sharing the process's one libc, so the
     * interposer answers for the context what that libc would answer for
     * the process: its environment, and dlopen by name or path (a copy of
     * what is asked for, found as ld.so would from the caller's original
     * file).  NULL for a context with a namespace of its own. */
    char *(*env_get)(struct vlcs_ctx *, const char *name);
    /* value NULL: unset; returns 0 or -1 with errno */
    int (*env_set)(struct vlcs_ctx *, const char *name, const char *value, int overwrite);
    int (*env_put)(struct vlcs_ctx *, char *string);
    int (*env_clear)(struct vlcs_ctx *);
    void *(*dlopen)(struct vlcs_ctx *, const char *file, int mode, const void *caller);
    /* why this thread's last such dlopen failed, once; NULL: ask libc */
    const char *(*dl_error)(void);
    /* dl_iterate_phdr as a namespace of the context's would answer: its
     * copies (named by their original files), the process's glibc */
    int (*iterate_phdr)(struct vlcs_ctx *, int (*)(struct dl_phdr_info *, size_t, void *), void *);
    /* the original file of the context's copy whose link map is lm, for
     * dladdr (a copy is named /proc/PID/fd/N: oneMKL opens its kernels from
     * the folder dladdr names); NULL: not one of its copies */
    const char *(*object_file)(struct vlcs_ctx *, const void *lm);
    /* the context's environment as a program's environ holds it
     * (NULL-terminated), valid until its next change */
    char **(*env_block)(struct vlcs_ctx *);

    /* Children of a program's instance (vlcs_ctx_exec): a wait for any
     * child from its thread waits for one the instance started (fork,
     * posix_spawn), as in a process of its own; elsewhere the process's.
     * -errno when it fails (errno is each libc's own). */
    pid_t (*wait4)(pid_t, int *, int, struct rusage *);
    void (*child_started)(pid_t);

    /* A program's instance has signals of its own (../exec_signals.c): its
     * actions, kill and raise of itself, its ITIMER_REAL (alarm), and the
     * thread its timers signal.  1: the context runs no instance, libc
     * answers; else 0 or -errno; sig_kill and sig_raise return 128 + the
     * signal when its default ends the calling instance's thread's run:
     * the interposer then ends it through exit_now with that status. */
    int (*sig_action)(struct vlcs_ctx *, int, const struct sigaction *, struct sigaction *);
    int (*sig_kill)(struct vlcs_ctx *, pid_t, int);
    int (*sig_raise)(struct vlcs_ctx *, int);
    int (*sig_setitimer)(struct vlcs_ctx *, int, const struct itimerval *, struct itimerval *);
    pid_t (*sig_timer_thread)(struct vlcs_ctx *); /* 0: no instance */
    void (*sig_timer_made)(struct vlcs_ctx *, int kernel_id);
    /* A signal that ends the calling instance's thread's run but came
     * while it was in the process's libc (copy mode: its write() got
     * SIGPIPE), taken: 0 when none.  The interposer ends the run with
     * 128 + it at its next call (error(), printf, exit...). */
    int (*sig_end_pending)(void);

    /* A function (or object) of the libc the interposer's "next" is: its
     * namespace's, or in copy mode the process's; NULL when libc has no
     * such name.  Found without a lookup after the first namespace. */
    void *(*libc_sym)(struct vlcs_ctx *, const char *name);

    /* dlopen with RTLD_GLOBAL by code of a context with a namespace of its
     * own (glibc has no global scope for it: ../ns_global.c), file named
     * without '$'; NULL in copy mode, where dlopen above answers. */
    void *(*dlopen_global)(struct vlcs_ctx *, const char *file, int mode, const void *caller);
    /* The name the context's code opens (shm_open) and unlinks a
     * shared-memory object by: name, or in buf (size bytes) one of the
     * context's own where a library names one object per process
     * (../own_names.c). */
    const char *(*own_name)(struct vlcs_ctx *, const char *name, char *buf, size_t size);
};

/* A variable a program loaded into the namespace holds a copy of (an
 * R_X86_64_COPY relocation) and the library's own, which the interposer's
 * vlcs_ip_exec_copies(pairs, n) keeps in step (exec.c, ip_exec.c). */
struct vlcs_ip_copy {
    void *program;
    void *lib;
    size_t size;
};

/* A program run in a copy-mode context (../exec.c), which shares the
 * process's libc: its own copies of libc's variables (NULL where it has
 * none), which the context's interposer copy reads and writes in place of
 * libc's (getopt's, environ), and its name for messages (error(), err(),
 * getopt's), given by vlcs_ip_exec_run(run); NULL when the run ends. */
struct vlcs_ip_run {
    int *optind, *opterr, *optopt;
    char **optarg;
    char ***environ;
    const char *name; /* argv[0], as program_invocation_name */
};

/* Exported by libvlcs_interpose.so; returns 0 on success. */
typedef int (*vlcs_ip_bind_fn)(const struct vlcs_ip_api *api);

#endif

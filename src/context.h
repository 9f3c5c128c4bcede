/*
 * context.h - a context: struct vlcs_ctx, its CPU views, and where its
 * libraries live (struct ctx_backend: ns_backend.c, copies.c).
 */
#ifndef VLCS_CONTEXT_H
#define VLCS_CONTEXT_H

#include "common.h"
#include "cpuset.h"
#include "families.h"

/* An immutable snapshot of a context's CPU set.  Readers (interposed calls
 * on any thread) load the pointer without a lock; a change publishes the
 * snapshot of the new set (made once per distinct set) and keeps every one
 * alive until the context is destroyed. */
struct cpuview {
    vmask mask;
    int count;
    char list[64 * 8]; /* "0-3,8": fits any mask that fits VLCS_MAX_CPUS sanely */
    struct cpuview *older;
    struct forged_text *cpuinfo; /* forged /proc/cpuinfo for this set, built on demand */
};

struct forged_text {
    size_t len, cap; /* cap: bytes mapped, header included */
    char text[];
};

/* Whether an environment entry ("NAME=value") is name's: a namespace's
 * environment copy and a copy-mode context's array both ask. */
static inline bool env_entry_is(const char *entry, const char *name)
{
    size_t n = __builtin_strlen(name);
    return __builtin_strncmp(entry, name, n) == 0 && entry[n] == '=';
}

struct envop {
    struct envop *next;
    char *name;
    char *value; /* NULL: unset */
};

struct tstate;
struct search_grown;

struct member {
    struct tstate *ts;
    pid_t tid;
    int entered; /* enter frames of this thread for the context */
    bool created; /* created by one of the context's libraries */
    void *(*start)(void *); /* its start routine, if created */
};

#define CTX_ALIVE 0x766c6373u /* "vlcs" */
#define CTX_DEAD 0x64656164u  /* "dead" */

/* Where a context's libraries live: a linker namespace of its own
 * (ns_backend.c, over namespace.c and unload.c) or renamed copies in the
 * base's (copies.c), chosen at its first load (runtime.c's ctx_place, which
 * sets c->backend) and asked for everything that differs between the two,
 * so that no file above them branches on where that is. */
struct ctx_backend {
    const char *name; /* "namespace", "copies" */
    int mode;         /* VLCS_MODE_NAMESPACE, VLCS_MODE_COPIES */
    const char *kept; /* what destroying leaves loaded when unload fails: "its namespace stays" */
    /* path loaded into c, with c->lock held: a new handle, or NULL with the
     * error set.  fresh: c's first load, which made the backend's state
     * (a failed first load may give it back: c->backend is NULL then). */
    void *(*load)(struct vlcs_ctx *c, const char *path, bool fresh);
    /* path (a file name, or a path) as loaded in c already: a new handle,
     * or NULL; with c->lock held */
    void *(*loaded)(struct vlcs_ctx *c, const char *path);
    /* the handle whose lookups see the context's global scope first */
    void *(*scope)(struct vlcs_ctx *c);
    /* The objects that hold the context's code, vlcs's interposer with
     * them (not ld.so, which is every namespace's): up to cap at out;
     * how many. */
    size_t (*objects)(struct vlcs_ctx *c, struct link_map **out, size_t cap);
    /* whether the loaded object map is one of c's (a signal handler asks) */
    bool (*owns)(const struct vlcs_ctx *c, const void *map);
    /* the environment its code sees, with c->lock held: value NULL unsets;
     * 0, or -1 with errno */
    int (*setenv)(struct vlcs_ctx *c, const char *name, const char *value);
    const char *(*getenv)(struct vlcs_ctx *c, const char *name);
    /* destroying c, with c->lock held, before it is marked dead (NULL: nothing) */
    void (*closing)(struct vlcs_ctx *c);
    /* its libraries given back, without c->lock: 0, or -1 with why */
    int (*unload)(struct vlcs_ctx *c, char *why, size_t size);
};
extern HIDDEN const struct ctx_backend ns_backend;     /* ns_backend.c */
extern HIDDEN const struct ctx_backend copies_backend; /* copies.c */

/* A context's parts, one per subsystem. */

/* Its linker namespace (namespace.c), while has_ns. */
struct ctx_ns {
    Lmid_t lmid;
    void *ip_handle;
    int root_fd; /* the memfd of its first object, or -1; set by ns_create */
    char **environ_copy; /* the copy handed over; kept so leak checkers see it */
    char **environ_own; /* what vlcs allocated for it (environ_copy), NULL-terminated */
    char ***environ_slot; /* the namespace libc's __environ */
    void *libc_map; /* its libc (struct link_map *), whose symbols object_sym finds */
    struct search_grown *global_lists; /* its root's lists grown by RTLD_GLOBAL (ns_global.c) */
    /* its libc's thread-local data, for a thread glibc's dlmopen missed
     * (thread.c): where the calling thread's errno is, errno's offset in
     * the block, and the initialised part ld.so copies to each thread */
    int *(*errno_location)(void);
    size_t tls_errno;
    const void *tls_image;
    size_t tls_image_size;
    int (*libc_setenv)(const char *, const char *, int);
    int (*libc_unsetenv)(const char *);
    char *(*libc_getenv)(const char *);
    int (*libc_fflush)(void *);
    void (*thread_init)(void); /* the namespace libc's __ctype_init (thread.c) */
    /* vlcs_ctx_set_stdio: descriptors for the namespace's stdin, stdout and
     * stderr (given when the namespace is made), and the streams made then */
    int stdio_fd[3];
    bool stdio_set[3];
    void *stdio_file[3]; /* FILE * */
    void **stdio_slot[3]; /* the namespace libc's stdin, stdout, stderr (FILE **) */
    void *start[16]; /* the objects the namespace was created with (struct link_map *) */
    size_t nstart;
    char *given[4]; /* the names ld.so gave its first objects (namespace.c) */
    size_t ngiven;
};

/* Elastic lending (elastic.c); written with elastic_lock() and c->lock held. */
struct ctx_elastic {
    bool active;     /* an elastic context (vlcs_ctx_set_elastic) */
    vmask bound;     /* the most it may grow to */
    unsigned weight; /* its share of lent CPUs; 0: its home's size */
    struct family_fn pool_resize[MAX_POOLS]; /* resize functions of its libraries' pools (pools.c) */
    size_t npool_resize;
    unsigned pools_gen; /* families_generation() pool_resize was found with; 0: stale */

    /* Whether lends pay, judged from the progress its threads report
     * (vlcs_ctx_progress).  units, window_units, window_ns, window_wait_ns
     * and retry_ns are read without a lock by the reporting threads
     * (__atomic); the rest is elastic.c's, under elastic_lock(). */
    uint64_t units;          /* progress reported, in all */
    uint64_t window_units;   /* units when the measuring window opened */
    uint64_t window_ns;      /* CLOCK_MONOTONIC when it opened; 0: none open */
    uint64_t window_wait_ns; /* how long after that a report may judge it */
    uint64_t retry_ns;       /* when a refused lend is tried again; 0: none refused */
    int window_cpus;         /* the CPUs it ran on through the window */
    bool window_settled;     /* a window has closed since they changed */
    int known_cpus;          /* the CPUs of the last window measured, before any lend since */
    double known_rate;       /* its units per second */
    int untried_cpus;        /* a lend measured before any rate on fewer CPUs was: its CPUs */
    double untried_rate;     /* and its rate, judged once its home's is known */
    double last_rate;        /* the last window's rate, and its CPUs (vlcs_ctx_get_progress) */
    int last_cpus;
    int most;                /* the most CPUs lends may bring it to; 0: its bound's */
    uint64_t backoff_ns;     /* the wait before the next retry */
};

/* Its GPUs (gpu.c). */
struct ctx_gpus {
    int first; /* device made current on enter, -1: none */
    bool set;  /* a list was given */
    vmask list; /* its GPUs, as the process numbers them */
};

/* Copy mode (copies.c), while copy_mode. */
struct ctx_copies {
    struct copyset *set;
    /* a program's run: its interposer copy's vlcs_ip_exec_files, found
     * with its streams (exec_streams.c), called at its exit (exec_flush) */
    void (*run_files)(int how);
    /* A context that runs programs: the stdin, stdout and stderr its
     * libraries bind to (every root of its loads defines them:
     * copies_tree.c), made before its first program's load, whose
     * constructors may keep them (C++'s std::cout): the run's streams
     * while a program runs, else its vlcs_ctx_set_stdio streams (in
     * ns.stdio_file) or the process's (exec_streams.c). */
    void *std[3]; /* FILE * */
    bool std_made;
    struct copy_env *env; /* its environment (copies_env.c) */
    void *_Atomic py_state_dict; /* its interpreter dict (service_python.c) */
};

struct vlcs_ctx {
    _Atomic uint32_t magic; /* read without the lock by every call's argument check */
    pthread_mutex_t lock; /* everything from pending_env on; kept when the memory is reused */
    int id;
    char name[64]; /* written with lock held (a stale handle's error reads it so) */
    /* Handles: what the API hands out is (generation, slot), not this
     * address; the memory is reused for later contexts, and the generation
     * moves on each time, so a destroyed context's handle never reaches a
     * later one (registry.c). */
    uint32_t slot;
    _Atomic uint64_t gen;
    uint64_t name_gen; /* the generation `name` is of (with lock held) */
    vlcs_ctx *handle; /* this generation's */
    struct cpuview *_Atomic view;
    struct cpuview *views; /* every view made for it, newest first (->older): one per CPU set */

    vmask home; /* its own CPUs: where a static or idle elastic context runs */
    struct ctx_elastic el;

    struct envop *pending_env; /* applied when the namespace is created */
    struct member *members;
    size_t nmembers, capmembers;
    int entered;       /* enter frames across all threads */
    int created_live;  /* live threads created by its libraries */
    struct ctx_gpus gpu;

    /* where its libraries live: vlcs_ctx_set_mode's wish (VLCS_MODE_*, 0:
     * VLCS_MODE's), then a namespace (has_ns) or copies (copy_mode) */
    int mode_wanted;
    /* vlcs_ctx_exec's load of a program: its streams (vlcs_ctx_set_stdio)
     * are the run's own in copy mode too, where the program's own file is
     * copied (program_file; the copy loads as a library) */
    bool loading_program;
    const char *program_file;
    bool copy_mode;
    struct ctx_copies cp;

    const struct ctx_backend *backend; /* NULL until the first load */

    bool has_ns;
    struct ctx_ns ns;
    struct vlcs_ip_api api; /* what its interposer (or interposer copy) calls back */

    /* what it loaded and its ended threads (handles.c); giving them back (unload.c) */
    void **handles; /* every successful load, closed on destroy */
    size_t nhandles, caphandles;
    pid_t *ended; /* its library threads that ended and may still be exiting */
    size_t nended, capended;
    char *keep; /* vlcs_ctx_keep_loaded's reason: the namespace stays on destroy */
    char *_Atomic fault; /* the report of the fault that broke it (fault.c); never freed */
    int fault_signal;    /* its signal */
    bool drop_opens; /* vlcs_ctx_drop_library_opens: destroy drops the libraries' own dlopens */
    char *global_lib; /* vlcs_ctx_set_global_library: in the namespace's global
                         scope from its start, in place of the services */

    /* The registry holds live contexts and destroyed ones whose namespace
     * stays (its code may still call into the context); the others' memory
     * waits on a free list for the next vlcs_ctx_create. */
    struct vlcs_ctx *next_all;
};

#endif

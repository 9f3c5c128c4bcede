/*
 * internal.h - state shared by the modules of libvlcs (base namespace side).
 */
#ifndef VLCS_INTERNAL_H
#define VLCS_INTERNAL_H

#define _GNU_SOURCE
#define VLCS_INTERNAL_API /* vlcs_shim_register, vlcs_stack_find */
#include "ip_abi.h"
#include "vlcs.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifndef HIDDEN
#define HIDDEN __attribute__((visibility("hidden")))
#endif

/* ---- CPU masks (cpuset.c) ---------------------------------------------- */

#define VLCS_MAX_CPUS 1024
#define MASK_WORDS (VLCS_MAX_CPUS / 64)

typedef struct {
    uint64_t w[MASK_WORDS];
} vmask;

/* A taskset list "0-3,8" (cpuset.c): GPU lists, and CPU lists once
 * places are resolved. */
HIDDEN int mask_parse(const char *list, vmask *out, char *err, size_t errsize);
/* A CPU argument: a taskset list, or an hwloc place "numa:0" (places.c). */
HIDDEN int cpus_parse(const char *cpus, vmask *out, char *err, size_t errsize);
/* libhwloc, dlopened once (hwloc_find.c); NULL with why in err. */
HIDDEN void *hwloc_find(char *err, size_t errsize);
HIDDEN int mask_format(const vmask *m, char *buf, size_t size);
HIDDEN int mask_count(const vmask *m);
HIDDEN bool mask_eq(const vmask *a, const vmask *b);
HIDDEN int mask_first_outside(const vmask *a, const vmask *b);
HIDDEN void mask_from_cpuset(vmask *m, size_t size, const cpu_set_t *set);
HIDDEN void mask_to_cpuset(const vmask *m, size_t size, cpu_set_t *set);
/* Real affinity of a thread (0 = caller), bypassing every interposer. */
HIDDEN int mask_get_thread(pid_t tid, vmask *m);
HIDDEN int mask_set_thread(pid_t tid, const vmask *m);

/* ---- raw syscalls (rawsys.c) ------------------------------------------------ */

/* A syscall past every interposer and strict-mode filter; leaves errno alone
 * and returns the result or -errno. */
HIDDEN long raw_syscall(long nr, long a1, long a2, long a3, long a4, long a5, long a6);

/* ---- strict mode (strict.c) ----------------------------------------------- */

/* Returns VLCS_OK, or a vlcs_errcode_t with err set. */
HIDDEN int strict_enable(char *err, size_t errsize);
HIDDEN bool strict_active(void);
/* Cover code newly loaded into contexts with a filter (after each load). */
HIDDEN void strict_note_load(void);

/* Counts changes of any thread's effective context (thread.c). */
extern uint64_t vlcs_owner_epoch;

/* ---- code and data addresses (caller.c) ---------------------------------- */

/* The link map of the loaded object whose mapping holds addr, or NULL. */
HIDDEN void *object_at(const void *addr);
/* The linker namespace of a loaded object (a link map), or -1. */
HIDDEN Lmid_t object_lmid(void *map);
/* The context whose code is at addr (its namespace's, or a copy-mode
 * context's copy), or NULL: the base's, or no object's. */
HIDDEN vlcs_ctx *ctx_of_address(const void *addr);

/* ---- Service-context hooks (hooks.c; service_tbb.c, gpu.c) ---------------- */

/* What one family of libraries (oneTBB, the CUDA/HIP runtimes) needs from
 * vlcs when one of them is a service.  Every member may be NULL. */
struct fwd_override;
struct service_hooks {
    const char *family;
    /* `handle` is being made a service.  If it is of this family, write the
     * forwarder entries that vlcs replaces (at most cap) into ov and return
     * how many; else 0.  Keeps nothing: the add may still fail. */
    size_t (*overrides)(void *handle, struct fwd_override *ov, size_t cap);
    /* `handle` is becoming a service, before any context can bind to it:
     * recognise the family and remember what the other hooks need. */
    void (*note_service)(void *handle);
    /* The calling thread entered c.  Returns what on_leave gets back, e.g.
     * the device to restore; -1 for nothing. */
    int (*on_enter)(vlcs_ctx *c);
    /* The thread leaves the frame on_enter answered `saved` for. */
    void (*on_leave)(int saved);
    /* c's namespace is being given back: forget what was kept for it. */
    void (*ns_gone)(vlcs_ctx *c);
};

#define VLCS_HOOK_SLOTS 8 /* families with hooks (hooks.c) */
extern HIDDEN const struct service_hooks tbb_hooks; /* service_tbb.c */
extern HIDDEN const struct service_hooks gpu_hooks; /* gpu.c */
extern HIDDEN const struct service_hooks python_hooks; /* service_python.c */

/* The families' hooks (hooks.c's table), run in the table's order
 * (on_leave in reverse).  A service that forwards only names with given
 * prefixes (the program's C API) is seen only by the families whose
 * replaced entries it carries: the program's handle also finds what base
 * code loaded RTLD_GLOBAL (a CUDA runtime, oneTBB), which is not the
 * service.  prefixes NULL: every family. */
HIDDEN size_t hooks_overrides(void *handle, const char *prefixes, struct fwd_override *ov,
                              size_t cap);
HIDDEN void hooks_note_service(void *handle, const char *prefixes);
HIDDEN void hooks_enter(vlcs_ctx *c, int saved[VLCS_HOOK_SLOTS]);
HIDDEN void hooks_leave(const int saved[VLCS_HOOK_SLOTS]);
HIDDEN void hooks_ns_gone(vlcs_ctx *c);

/* ---- library families (families.c) ----------------------------------------- */

/* A row of the table: the public descriptor. */
struct family {
    vlcs_family d;
};
extern HIDDEN const struct family builtin_families[];
extern HIDDEN const size_t nbuiltin_families;
/* Changes whenever a family is registered: what was found in a context's
 * handles with an older generation is looked up again. */
HIDDEN unsigned families_generation(void);
/* Around fork (runtime.c's handlers, after registry_lock). */
HIDDEN void families_lock(void);
HIDDEN void families_unlock(void);
HIDDEN void families_after_fork(void);

/* One function of a family found in a loaded object. */
struct family_fn {
    void *fn;
    int count_type; /* vlcs_count_type_t, for a setter */
    const char *family; /* its row's name (rows are never freed) */
};
#define MAX_POOLS 16 /* resize functions per context (one per OpenBLAS copy) */
enum family_role {
    FAMILY_RESIZE, /* set_threads of families resized with elastic contexts */
    FAMILY_STOP,   /* stop_pool */
};
/* Appends to out[n..cap) the role's functions that handle (and what it
 * depends on) exports, each once; returns the new count. */
HIDDEN size_t families_find(void *handle, enum family_role role, struct family_fn *out,
                            size_t n, size_t cap);
/* Calls a set_threads function with count, in its count type. */
HIDDEN void family_fn_set(const struct family_fn *f, int count);

/* ---- errors (error.c) ---------------------------------------------------- */

/* Sets the calling thread's error: a vlcs_errcode_t and its sentence,
 * worded "Error <doing what>: <detail>".  A VLCS_E_LIMIT names its limit in
 * the bits above the code, LIMIT_CODE(VLCS_LIMIT_...), so that helpers which
 * return a code carry the limit with it; vlcs_errlimit() reads it back. */
#define LIMIT_CODE(limit) (VLCS_E_LIMIT | ((limit) << 8))
HIDDEN void set_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The code for a dlopen/dlmopen/dlsym failure, from dlerror()'s words
 * (glibc's limits as LIMIT_CODE). */
HIDDEN int dl_errcode(const char *dlerr);
/* The calling thread's error, kept across work that may fail on the side. */
struct saved_error {
    char text[1024];
    int code, limit;
};
HIDDEN void error_save(struct saved_error *e);
HIDDEN void error_restore(const struct saved_error *e);
struct vlcs_ctx;
/* Sets the error for a failed dlmopen into c, with what to do about one of
 * glibc's limits when one was hit. */
HIDDEN void load_error(struct vlcs_ctx *c, const char *what, const char *dlerr);

/* ---- contexts ------------------------------------------------------------ */

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

    /* elastic lending (elastic.c); written with elastic_lock() and c->lock held */
    vmask home;      /* its own CPUs: where a static or idle context runs */
    vmask bound;     /* the most an elastic context may grow to */
    unsigned weight; /* its share of lent CPUs; 0: its home's size */
    bool elastic;
    struct family_fn pool_resize[MAX_POOLS]; /* resize functions of its libraries' pools (pools.c) */
    size_t npool_resize;
    unsigned pools_gen; /* families_generation() pool_resize was found with; 0: stale */

    struct envop *pending_env; /* applied when the namespace is created */
    struct member *members;
    size_t nmembers, capmembers;
    int entered;       /* enter frames across all threads */
    int created_live;  /* live threads created by its libraries */
    int gpu_first;     /* device made current on enter (gpu.c), -1: none */
    bool gpus_set;
    vmask gpus;        /* its GPUs, as the process numbers them (gpu.c) */

    /* where its libraries live: vlcs_ctx_set_mode's wish (VLCS_MODE_*, 0:
     * VLCS_MODE's), then a namespace (has_ns) or copies (copy_mode) */
    int mode_wanted;
    bool copy_mode;
    struct copyset *copyset; /* copies.c */
    struct copy_env *copy_env; /* copy mode's environment (copies_env.c) */
    void *_Atomic py_state_dict; /* copy mode: its interpreter dict (service_python.c) */

    const struct ctx_backend *backend; /* NULL until the first load */

    /* namespace (namespace.c) */
    bool has_ns;
    Lmid_t lmid;
    void *ip_handle;
    int ns_root_fd; /* the memfd of its first object, or -1; set by ns_create */
    char **ns_environ; /* the copy handed over; kept so leak checkers see it */
    char **ns_environ_own; /* the strings it started with, which are vlcs's to free */
    char ***ns_environ_slot; /* the namespace libc's __environ */
    int (*ns_setenv)(const char *, const char *, int);
    int (*ns_unsetenv)(const char *);
    char *(*ns_getenv)(const char *);
    int (*ns_fflush)(void *);
    void (*ns_thread_init)(void); /* the namespace libc's __ctype_init (thread.c) */
    struct vlcs_ip_api api;
    /* vlcs_ctx_set_stdio: descriptors for the namespace's stdin, stdout and
     * stderr (given when the namespace is made), and the streams made then */
    int stdio_fd[3];
    bool stdio_set[3];
    void *stdio_file[3]; /* FILE * */
    void **stdio_slot[3]; /* the namespace libc's stdin, stdout, stderr (FILE **) */

    /* what it loaded and its ended threads (handles.c); giving them back (unload.c) */
    void **handles; /* every successful load, closed on destroy */
    size_t nhandles, caphandles;
    pid_t *ended; /* its library threads that ended and may still be exiting */
    size_t nended, capended;
    void *ns_start[16]; /* the objects the namespace was created with (struct link_map *) */
    size_t nns_start;
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

/* ---- a program's streams under vlcs_ctx_exec (exec_streams.c) ----------- */

/* A run's own C streams, on descriptors 0, 1 and 2 of its thread, which has
 * a table of its own holding duplicates of the namespace's: the program may
 * close them (coreutils do at exit), which must not close the process's or
 * the context's.  They are the namespace libc's own (made and
 * closed by it, on its list of streams: a stream closed by another libc
 * copy than its maker's stays on its maker's list, freed).  The interposer
 * forgets those the program closes. */
struct run_streams {
    FILE **slot[3]; /* the namespace libc's stdin, stdout, stderr */
    FILE *saved[3];
    void *open[3]; /* the run's, NULL once closed */
    void (*tell)(void **); /* the interposer's vlcs_ip_exec_streams */
    FILE *(*fdopen)(int, const char *);
    int (*fclose)(FILE *);
    int (*setvbuf)(FILE *, char *, int, size_t);
    void (*fpurge)(FILE *);
};

/* The run's streams made and handed to the namespace's libc and interposer;
 * -1 with the error set (naming path) when the context lacks what it takes. */
HIDDEN int streams_give(vlcs_ctx *c, struct run_streams *s, const char *path);
/* The namespace's streams back, the run's closed by its libc. */
HIDDEN void streams_take_back(struct run_streams *s);
/* After a fault: the namespace's streams back, the run's left as the fault
 * left them (their locks may be held), their buffers emptied unwritten,
 * their descriptors closed. */
HIDDEN void streams_abandon(struct run_streams *s);
/* As streams_take_back, what the run's streams buffered lost (an end as
 * _exit's or a signal's). */
HIDDEN void streams_discard(struct run_streams *s);
/* A fault's first line on the run's stderr (its thread's descriptor 2), as
 * a shell reports a signal's end, the program named by path. */
HIDDEN void streams_say_fault(vlcs_ctx *c, const char *path);

/* ---- the ground floor (registry.c): calls nothing above error.c ---------- */

/* Walk with registry_lock() held: destroyed contexts leave the registry. */
HIDDEN void registry_lock(void);
HIDDEN void registry_unlock(void);
HIDDEN vlcs_ctx *registry_first(void);
HIDDEN vlcs_ctx *registry_next(vlcs_ctx *c);
HIDDEN void registry_after_fork(void); /* in the child, the lock taken before fork */
/* A context's memory, reused from a destroyed one or new, with its id and
 * slot; NULL when out of memory.  registry_add makes it alive and listed,
 * with this generation's handle. */
HIDDEN vlcs_ctx *registry_take(void);
HIDDEN void registry_add(vlcs_ctx *c);
/* Unlists a destroyed context, moves its generation on (its handles are
 * stale for good) and keeps its memory (zeroed but for its lock, id, name
 * and slot) for the next registry_take. */
HIDDEN void registry_release(vlcs_ctx *c);
/* The context a handle names, or NULL with the error set (NULL, not a
 * handle, or destroyed: VLCS_E_DESTROYED, also once its memory is reused). */
HIDDEN vlcs_ctx *ctx_get(const vlcs_ctx *h, const char *doing);
/* With c->lock held: whether handle h still names c, alive. */
HIDDEN bool ctx_still(const vlcs_ctx *c, const vlcs_ctx *h);
/* Sets the error for a handle that ctx_still refused; returns -1. */
HIDDEN int ctx_gone(const vlcs_ctx *h, const char *doing);
/* Whether a fault broke c (fault.c); if so the error says so and what to do. */
HIDDEN bool ctx_broken(const vlcs_ctx *c, const char *doing);
/* fn(arg) behind a recovery point for c, which the caller has entered
 * (fault.c): 0 with *result; 1 when a fault was contained (c is broken,
 * its report in c->fault); -1 with the error set. */
HIDDEN int fault_guarded(vlcs_ctx *c, void *(*fn)(void *), void *arg, void **result);
/* abort() by a context's code inside fault_guarded ends the call there;
 * returns when it is not to be contained. */
HIDDEN void fault_abort(void);
/* A signal whose default would end the process ends the guarded call on
 * this thread instead, by the same rules as a fault (no report); returns
 * when the thread holds what the process needs there. */
HIDDEN void fault_end_by_signal(int sig, void *siginfo, void *ucontext);
HIDDEN struct cpuview *ctx_view(const vlcs_ctx *c);
/* The CPUs the process may use, read once at init. */
HIDDEN const vmask *process_mask(void);
HIDDEN void registry_set_process_mask(const vmask *m);
/* Room for element n in a doubling array (*arr: *cap elements of
 * elem bytes; n is usually the count in use): 0, or -1 when out of memory (the
 * array unchanged). */
HIDDEN int array_grow(void **arr, size_t *cap, size_t n, size_t elem);
/* The file name of a path: "libfoo.so" of "/usr/lib/libfoo.so". */
HIDDEN const char *base_name(const char *path);

/* ---- the life of a context (runtime.c) ------------------------------------ */

/* libvlcs_interpose.so's path (interposer_path.c); interposer_locate finds
 * it once, at start: 0, or a VLCS_E_* code with the sentence in err. */
HIDDEN const char *interposer_path(void);
HIDDEN int interposer_locate(char *err, size_t errsize);
/* The directory libvlcs.so was loaded from (interposer_path.c): 0, or -1. */
HIDDEN int libvlcs_directory(char *dir, size_t size);

/* ---- a context's environment (env.c) -------------------------------------- */

/* vlcs_ctx_setenv (value) or unsetenv (NULL) of vlcs's own, for a context
 * it holds: 0, or -1 with the error set. */
HIDDEN int ctx_setenv(vlcs_ctx *c, const char *name, const char *value);
/* The same and name's value, with c->lock held. */
HIDDEN int env_change(vlcs_ctx *c, const char *name, const char *value);
HIDDEN const char *env_get(vlcs_ctx *c, const char *name);
/* Drops the changes recorded before c had libraries. */
HIDDEN void env_pending_clear(vlcs_ctx *c);

/* ---- elastic contexts (elastic.c, pools.c; the plan: elastic_policy.c) ---- */

/* The lock over every elastic context's home, bound and current CPUs;
 * taken before registry_lock() and any c->lock. */
HIDDEN void elastic_lock(void);
HIDDEN void elastic_unlock(void);
/* c became busy (its first thread entered) or idle (its last left); called
 * with no lock held.  Lends and reclaims CPUs before it returns. */
HIDDEN void elastic_busy_changed(vlcs_ctx *c, bool busy);
/* A destroyed context stops lending and borrowing (no lock held). */
HIDDEN void elastic_forget(vlcs_ctx *c);
/* vlcs_ctx_set_cpus after its checks (no lock held): m becomes the home;
 * a static context runs there, an elastic one where the plan says.
 * 0, or -1 with the error set. */
HIDDEN int elastic_set_home(vlcs_ctx *c, const vmask *m);
/* getloadavg() inside c: -2 to ask the kernel, else the count answered. */
HIDDEN int elastic_loadavg(vlcs_ctx *c, double *avg, int n);
/* The functions that resize the thread pools of c's libraries (the
 * families' set_threads: openblas_set_num_threads, ...), at most cap of
 * them into out; with c->lock held.  They are to be called without it
 * (family_fn_set). */
HIDDEN size_t pools_find(vlcs_ctx *c, struct family_fn *out, size_t cap);
/* A library was loaded into c (no lock held): in an elastic context, its
 * pools start at the context's current CPUs, whatever they read at load. */
HIDDEN void elastic_loaded(vlcs_ctx *c, void *handle);

/* ---- node-wide lending (node.c) ------------------------------------------ */

struct elastic_in; /* elastic_policy.h */
/* Joins the node's ledger and starts the watcher, which calls changed when
 * another process planned: VLCS_OK, or a vlcs_errcode_t with err set
 * (nothing changed). */
HIDDEN int node_enable(void (*changed)(uint32_t generation), char *err, size_t errsize);
HIDDEN bool node_active(void);
HIDDEN void node_after_fork(void); /* a child is no member */
/* With elastic_lock() held: publishes this process's elastic contexts
 * (keys[i] names in[i]), plans over the node's, stores and announces the
 * plan; out[i] is keys[i]'s share. */
HIDDEN void node_plan(const uint64_t *keys, const struct elastic_in *in, size_t n, vmask *out);
/* With elastic_lock() held: the latest plan's shares of keys[i] (whose
 * own view is in[i]) into out[i], within in[i]'s home and bound; the home
 * for a key the ledger has no slot for. */
HIDDEN void node_read(const uint64_t *keys, const struct elastic_in *in, size_t n, vmask *out);
/* Adds to out the CPUs of home that another member of the node runs on. */
HIDDEN void node_lent(uint64_t key, const vmask *home, vmask *out);
/* Whether this process's own plan produced that generation. */
HIDDEN bool node_planned_here(uint32_t generation);
/* elastic.c, handed to node.c by runtime.c: another process planned (the
 * watcher); and called by runtime.c when this process joined the node. */
HIDDEN void elastic_node_changed(uint32_t generation);
HIDDEN void elastic_node_joined(void);

/* ---- namespaces (namespace.c) --------------------------------------------- */

HIDDEN int ns_create(vlcs_ctx *c); /* with c->lock held */
HIDDEN void ns_api_fill(vlcs_ctx *c, struct vlcs_ip_api *a);

/* ---- copy mode (copies.c, elf_copy.c) ---- */
#include "elf_read.h"
HIDDEN void elf_soname_of(const char *path, char *out, size_t size);
struct elf_from { /* an object that needs a library, and its file */
    const struct elf_names *e;
    const char *path;
};
/* chain: the object that needs name, then the object that loaded it, ... */
HIDDEN int elf_resolve(const char *name, const struct elf_from *chain, size_t nchain, char *out);
/* A copy of what ld.so reads of the file (its headers, its PT_LOAD ranges);
 * lazy: without its code pages either (zeros until elf_share_pages maps
 * the original's), its constructors hidden from ld.so (elf_run_init runs
 * them once the code is in place); only for a file elf_lazy_ok passes */
HIDDEN int elf_copy(int fd, const char *path, const char *label, const struct elf_rename *renames,
                    size_t n, const struct elf_names *e, bool lazy, char *why, size_t size);
HIDDEN void elf_run_init(const struct elf_names *e, uintptr_t base);
HIDDEN void elf_keep_args(int argc, char **argv);
HIDDEN int elf_new_name(const char *old, unsigned long serial, char *out, size_t size);
HIDDEN int elf_share_pages(const struct elf_names *e, int origin_fd, int copy_fd, uintptr_t base,
                           const struct elf_rename *renames, size_t nrenames);
/* copy_origins.c: one read-only descriptor per original file (or -VLCS_E_*) */
HIDDEN int origin_hold(const char *real, char *why, size_t size);
HIDDEN void origin_release(int fd);
/* The paths held name their files again only once checked (stat) anew. */
HIDDEN void origins_recheck(void);
HIDDEN int copies_create(vlcs_ctx *c); /* with c->lock held */
struct link_map;
/* The table of which copy-mode context each loaded copy is (copy_owners.c):
 * a copy's /proc/self/fd name is added before it loads, its link map once
 * loaded, and it is removed when unloaded. */
HIDDEN int owners_add(const char *path, vlcs_ctx *c);
HIDDEN void owners_loaded(const char *path, const void *lm);
HIDDEN void owners_remove(const char *path);
HIDDEN vlcs_ctx *copies_owner(const void *link_map); /* the copy-mode context holding it */
/* The same in a signal handler: NULL when the table is being changed. */
HIDDEN vlcs_ctx *copies_owner_nowait(const void *link_map);
/* unload.c: nothing of the context's libraries runs or is kept for a thread
 * any more, and its handles are closed (refused in strict mode) */
HIDDEN int ctx_close_libraries(vlcs_ctx *c, char *why, size_t size);
/* The order in which ld.so hands the addresses of unloaded objects to the
 * next load, stated for ThreadSanitizer (ld.so's lock is invisible to it):
 * back before an unload, over after a load. */
HIDDEN void ns_handed_back(void);
HIDDEN void ns_handed_over(void);
/* Closes the namespace's first object when nothing else is left in it (a
 * failed first load, or a destroyed context's libraries all closed): the
 * namespace goes, glibc reuses its number, and the context forgets it (its
 * libc's environment copy freed, its fork handlers dropped). */
HIDDEN void ns_teardown(vlcs_ctx *c);
/* Per-namespace tables are indexed by the namespace's number (glibc has at
 * most 16; it reuses the numbers of namespaces taken back). */
#define NS_SLOTS 64
static inline int ns_slot(Lmid_t lmid) { return (int)((unsigned long)lmid % NS_SLOTS); }

/* ---- what a context loaded, and its threads that ended (handles.c) ---- */

/* Records a successful load (with c->lock held); 0 or -1 (out of memory). */
HIDDEN int ns_note_handle(vlcs_ctx *c, void *h);
/* Closes a recorded handle and forgets it (a rolled-back service add). */
HIDDEN void ns_close_handle(vlcs_ctx *c, void *h);
/* A library thread of c ended (with c->lock held): wait for it before unmapping. */
HIDDEN void ns_note_ended(vlcs_ctx *c, pid_t tid);
/* Whether the kernel has thread tid gone; returns once it has. */
HIDDEN bool thread_gone(pid_t tid);
HIDDEN void thread_wait_gone(pid_t tid);
HIDDEN void thread_pause(void); /* 0.2 ms between two looks */

/* ---- giving a destroyed context's namespace back (unload.c) ---- */
/* Called without c->lock, once c is marked destroyed.  0: the namespace is
 * gone (glibc may reuse it); -1: it stays, with the reason in why. */
HIDDEN int ns_unload(vlcs_ctx *c, char *why, size_t size);
HIDDEN void drop_opens(void *(*reopen)(vlcs_ctx *, const char *), vlcs_ctx *c, const char *name);

/* ---- fork handlers of the namespaces' libraries (fork.c) ---- */
/* Registers fork.c's own handlers with the base libc; at init, before
 * runtime.c's, so that at fork the elastic and registry locks are taken
 * before fork.c's (loading holds a c->lock while a library registers). */
HIDDEN void fork_install(void);
HIDDEN int fork_register(vlcs_ctx *c, void (*prepare)(void), void (*parent)(void),
                         void (*child)(void), void *dso);
HIDDEN void fork_forget(vlcs_ctx *c); /* c's namespace went away */
HIDDEN void ns_flush(vlcs_ctx *c);

/* The streams vlcs_ctx_set_stdio gave: closed (their descriptors with them,
 * so that a reader sees the end), the namespace's back on the process's. */
HIDDEN void ns_streams_release(vlcs_ctx *c, bool broken);

/* ---- the trace (trace.c) ---- */
/* 1 while a trace records: each event site tests it first. */
extern _Atomic int trace_recording;
static inline bool tracing_on(void)
{
    return __builtin_expect(atomic_load_explicit(&trace_recording, memory_order_relaxed), 0);
}
HIDDEN void trace_enter(const vlcs_ctx *c);
HIDDEN void trace_leave(const vlcs_ctx *c);
HIDDEN void trace_cpus(const vlcs_ctx *c, const vmask *from, const vmask *to, const char *why,
                       const vlcs_ctx *cause);
HIDDEN void trace_pool(const vlcs_ctx *c, const char *family, int threads);
HIDDEN void trace_from_env(void); /* VLCS_TRACE_FILE, at vlcs_init */

/* ---- thread-specific data keys of contexts' libraries (keys.c) ---- */
/* As pthread_key_*, past glibc's PTHREAD_KEYS_MAX for the process. */
/* The interposer's pthread_key_create and _delete for c's libraries: keys
 * recorded with their context (a key c did not create is not its to delete). */
HIDDEN int ns_key_create(vlcs_ctx *c, pthread_key_t *key, void (*dtor)(void *));
HIDDEN int ns_key_delete(vlcs_ctx *c, pthread_key_t key);
/* Unloading c: this thread's values of c's keys destroyed as at its exit;
 * then c's keys deleted (no thread's exit runs their destructors). */
HIDDEN void keys_run_destructors_here(vlcs_ctx *c);
HIDDEN void keys_delete_of(vlcs_ctx *c);
HIDDEN int key_create(pthread_key_t *key, void (*dtor)(void *));
HIDDEN int key_delete(pthread_key_t key);
HIDDEN void *key_get(pthread_key_t key);
HIDDEN int key_set(pthread_key_t key, const void *value);
/* Keys held for contexts' libraries, and how many they may hold. */
HIDDEN void key_room(unsigned long *used, unsigned long *limit);

/* ---- programs run inside a context (exec.c) ---- */
/* api->exit, ->quick_exit, ->exit_now: on a thread running a program
 * (vlcs_ctx_exec), the end of that run; elsewhere the process's. */
HIDDEN void exec_exit(int status) __attribute__((noreturn));
HIDDEN void exec_quick_exit(int status) __attribute__((noreturn));
HIDDEN void exec_exit_now(int status) __attribute__((noreturn));
HIDDEN void exec_abort(void) __attribute__((noreturn));
/* api->pthread_join: on a program's main thread, a join that the
 * instance's end (exit() in another of its threads, a signal's default
 * end) cuts short as it cuts a process's; elsewhere pthread_join. */
HIDDEN int exec_pthread_join(pthread_t th, void **ret);
HIDDEN int exec_instead(int (*run)(void *), void *arg);
/* fork, and the children of the instance this thread runs (exec.c) */
struct rusage;
HIDDEN pid_t exec_fork(void);
HIDDEN void exec_child_started(pid_t pid);
HIDDEN pid_t exec_wait4(pid_t pid, int *status, int options, struct rusage *ru);
HIDDEN pid_t exec_wait4_api(pid_t pid, int *status, int options, struct rusage *ru); /* -errno */

/* ---- the Service context (service.c, forwarder.c) ---- */

/* A symbol whose forwarder entry points somewhere else than the library. */
struct fwd_override {
    const char *name;
    void *addr;
};

/* What a forwarder holds of the object it stands for. */
struct fwd_spec {
    const struct fwd_override *ov; /* entries pointed elsewhere */
    size_t nov;
    const char *soname;   /* NULL: the object's own */
    const char *prefixes; /* comma-separated name prefixes to forward; NULL: all */
};

/* Whether name begins with one of the comma-separated prefixes (every name
 * when prefixes is NULL). */
HIDDEN bool fwd_name_wanted(const char *name, const char *prefixes);
/* A forwarder for `handle` (loaded in the base) as a memfd; its soname is
 * written to soname_out.  On failure -VLCS_E_* (a negated vlcs_errcode_t)
 * with err set. */
HIDDEN int forwarder_create(void *handle, const struct fwd_spec *spec, char *soname_out,
                            size_t soname_size, char *err, size_t errsize);
/* A symbol-less object whose DT_NEEDED are `needed`, as a memfd, or
 * -VLCS_E_* with err set. */
HIDDEN int forwarder_root(const char *const *needed, size_t n, char *err, size_t errsize);
/* The same, made once per list of paths: a new descriptor of it. */
HIDDEN int forwarder_root_shared(const char *const *needed, size_t n, char *err, size_t errsize);

/* In *fd a memfd holding the first object for a new namespace: `first`
 * then the forwarders of the services (but the one whose soname is
 * `except`, or NULL) as DT_NEEDED; -1 when `first` is one object and there
 * are no services.  Returns VLCS_OK, or a vlcs_errcode_t with err set. */
HIDDEN int services_root(const char *const *first, size_t nfirst, const char *except, int *fd,
                         char *err, size_t errsize);
/* Held (read) around creating a namespace and loading into one, before the
 * context's lock: a service is added under the write lock. */
HIDDEN void services_read_lock(void);
HIDDEN void services_unlock(void);
HIDDEN bool services_held_here(void); /* this thread holds the read lock */
HIDDEN int service_add_local(const char *library); /* loaded RTLD_LOCAL */
HIDDEN int service_add_global(const char *library); /* vlcs_service_add, once vlcs_init ran */
HIDDEN int service_add_program(const char *soname, const char *prefixes); /* vlcs_service_add_program */
/* The libraries that must exist once per process (service_auto.c) made
 * services, those not tried yet; called before a load takes any lock. */
HIDDEN void services_auto_add(void);
HIDDEN bool services_has(const char *soname); /* a library of the Service context */
HIDDEN void *services_open_forwarder(const char *soname); /* in the base namespace, or NULL */
/* The path a memfd of this process is loaded from, "/proc/PID/fd/N", in a
 * buffer of FD_PATH_SIZE. */
#define FD_PATH_SIZE 48
HIDDEN void fd_path(char *buf, size_t size, int fd);
HIDDEN void fd_path_after_fork(void); /* in a child of fork: its pid is asked again */
/* Their forwarders, but that of the service named `except` (NULL: none):
 * a context whose own global library stands in for it (its own libpython). */
HIDDEN size_t services_paths(char (*out)[FD_PATH_SIZE], size_t cap, const char *except);

/* ---- threads (thread.c) ---------------------------------------------------- */

/* The calling thread's context (its innermost entered, or the one its
 * library thread belongs to), or NULL. */
HIDDEN vlcs_ctx *thread_current(void);
/* This thread's end, done now: it is about to end without its destructors. */
HIDDEN void thread_end_here(void);
HIDDEN void thread_created(vlcs_ctx *c);
HIDDEN void thread_begin(vlcs_ctx *c, void *(*start)(void *));
/* The start routines of c's library threads still alive (with c->lock held). */
HIDDEN size_t threads_created_starts(vlcs_ctx *c, void **out, size_t cap);
HIDDEN void thread_ns_created(vlcs_ctx *c); /* the creating thread was set up by libc */
HIDDEN void thread_ns_gone(vlcs_ctx *c); /* its namespace number may be reused */
HIDDEN void threads_move(vlcs_ctx *c, const vmask *m); /* with c->lock held */
HIDDEN void thread_after_fork(void);

/* ---- the context's view of the machine (view.c) --------------------------- */

/* A view of m (older: the context's previous views); NULL out of memory. */
HIDDEN struct cpuview *view_new(const vmask *m, struct cpuview *older);
/* Makes m the context's CPU set (with c->lock held): its view published,
 * its threads moved.  0, or -1 when out of memory. */
HIDDEN int ctx_switch_view(vlcs_ctx *c, const vmask *m);

HIDDEN void view_filter_mask(vlcs_ctx *c, size_t size, cpu_set_t *set);
HIDDEN int view_clamp_mask(vlcs_ctx *c, size_t size, const cpu_set_t *in, size_t outsize,
                           cpu_set_t *out);
HIDDEN long view_ncpus(vlcs_ctx *c);
/* A read-only open of a forged file (view.c's table): a file descriptor with
 * c's view; -2 for any other path or mode; -1 with errno on failure. */
HIDDEN int view_open_forged(vlcs_ctx *c, int dirfd, const char *path, int flags);
/* Every row's prefix, NULL-terminated: no path outside them is forged. */
HIDDEN const char *const *view_forged_prefixes(void);
/* Frees the files forged for a snapshot no one reads any more. */
HIDDEN void view_free_forged(struct cpuview *v);

#endif

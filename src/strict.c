/*
 * strict.c - the syscall-level safety net, without ptrace.
 *
 * Seccomp filters, synchronised onto every thread, trap sched_getaffinity,
 * sched_setaffinity, open, openat and openat2 when the syscall instruction
 * lies in code that belongs to a context: its libraries, its libc (whose
 * syscall() and internal opens the symbol layer cannot see), inline syscall
 * instructions, a libc linked statically into one of its libraries.  A
 * SIGSYS handler answers in-process with the context's view, as the
 * interposer does; syscalls from any other code never trap.  Filters cannot
 * read a path, so every open from context code traps and the handler
 * decides.
 *
 * Keying on the code address rather than trapping every open in the process
 * keeps the base untouched, and keeps programs exec'd by this one working:
 * they inherit the filters but not the handler, and their code lies
 * elsewhere.  Filters cannot be removed or changed, so each load into a
 * context adds one covering the code it mapped.  The kernel caches the
 * verdict for syscalls whose answer depends only on their number, so the
 * filters cost nothing to other syscalls.
 *
 * Everything the handler touches is async-signal-safe: raw syscalls, a
 * lock-free table of code ranges, and the mmap-based forging of view.c.
 */
#include "common.h"
#include "strict.h"
#include "context.h"
#include "error.h"
#include "rawsys.h"
#include "registry.h"
#include "strict_filter.h"
#include "view.h"

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <stddef.h>

#ifndef SYS_SECCOMP
#define SYS_SECCOMP 1 /* si_code of a seccomp trap (asm-generic/siginfo.h) */
#endif

/* ---- which context owns a code address --------------------------------- */

struct range {
    uintptr_t start, end;
    vlcs_ctx *ctx;
};

struct range_table {
    size_t n;
    struct range r[];
};

static struct range_table *_Atomic ranges;
static pthread_mutex_t ranges_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool active;

bool strict_active(void) { return atomic_load(&active); }

static vlcs_ctx *owner_of(uintptr_t ip)
{
    struct range_table *t = atomic_load_explicit(&ranges, memory_order_acquire);
    if (t != NULL)
        for (size_t i = 0; i < t->n; i++)
            if (ip >= t->r[i].start && ip < t->r[i].end)
                return t->r[i].ctx;
    return NULL;
}

/* The executable segments of one loaded object, as c's, read from the
 * program headers each object has mapped at its load address. */
static size_t object_ranges(vlcs_ctx *c, const struct link_map *lm, struct range *out, size_t cap)
{
    size_t n = 0;
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)lm->l_addr;
    if (eh == NULL || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
        return 0;
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)((const char *)eh + eh->e_phoff);
    for (int i = 0; i < eh->e_phnum && n < cap; i++)
        if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X))
            out[n++] = (struct range){lm->l_addr + ph[i].p_vaddr,
                                      lm->l_addr + ph[i].p_vaddr + ph[i].p_memsz, c};
    return n;
}

/* A context's code: every object its libraries live in (a copy-mode
 * context's libc is the process's, not among them). */
static size_t context_ranges(vlcs_ctx *c, struct range *out, size_t cap)
{
    enum { MAX_OBJECTS = 1024 };
    struct link_map **maps = malloc(MAX_OBJECTS * sizeof *maps); /* see copies_tree.c: small stacks */
    size_t nmaps = maps != NULL && c->backend != NULL ? c->backend->objects(c, maps, MAX_OBJECTS)
                                                      : 0,
           n = 0;
    for (size_t i = 0; i < nmaps; i++)
        n += object_ranges(c, maps[i], out + n, cap - n);
    free(maps);
    return n;
}

static int range_order(const void *a, const void *b)
{
    const struct range *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

/* Tables are published sorted: a load among a thousand contexts looks up
 * each of their ranges in the last table, which a linear search made
 * quadratic (minutes at 1,024 contexts). */
static bool covered(const struct range_table *t, const struct range *r)
{
    return t != NULL && t->n > 0 && bsearch(r, t->r, t->n, sizeof *r, range_order) != NULL;
}

/* Once the kernel refused a filter (its size limit), later loads cannot be
 * covered either: strict_note_load says so once, then costs nothing. */
static atomic_bool coverage_full;

#define MAX_RANGES 4096

static bool in_namespace(const vlcs_ctx *c)
{
    const struct ctx_backend *b = c->backend;
    return b != NULL && b->mode == VLCS_MODE_NAMESPACE;
}

/* Every namespace context's code, walked once from inside dl_iterate_phdr:
 * its callback runs under the loader's lock that dlclose takes to unlink,
 * unmap and free an object, so no link map of the chains walked goes
 * meanwhile (a run of vlcs_ctx_exec unloading its program in another
 * context freed one under the walk).  The copy-mode contexts' copies are
 * reached under their copyset's lock, which may not be taken here. */
static int namespaces_ranges(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)info;
    (void)size;
    struct range_table *t = arg;
    for (vlcs_ctx *c = registry_first(); c; c = registry_next(c))
        if (in_namespace(c))
            t->n += context_ranges(c, t->r + t->n, MAX_RANGES - t->n);
    return 1;
}

/* A filter that traps the five syscalls when made from one of the ranges
 * (strict_filter.c builds it).  Returns VLCS_OK or a vlcs_errcode_t with
 * err set. */
static int add_filter(const struct code_range *r, size_t n, char *err, size_t errsize)
{
    size_t k = strict_filter_size(r, n);
    if (k > BPF_MAXINSNS) {
        snprintf(err, errsize, "a filter for %zu code ranges needs %zu BPF instructions, over "
                               "the kernel's %d",
                 n, k, BPF_MAXINSNS);
        return LIMIT_CODE(VLCS_LIMIT_SECCOMP);
    }
    struct sock_filter *f = calloc(k, sizeof *f);
    if (f == NULL) {
        snprintf(err, errsize, "out of memory");
        return VLCS_E_SYSTEM;
    }
    strict_filter_build(r, n, f, k);
    struct sock_fprog prog = {(unsigned short)k, f};
    /* SPEC_ALLOW: this filter is no sandbox, so spare the process the
     * speculative-store-bypass mitigation that seccomp turns on by default
     * (it slows every instruction, not just syscalls). */
    long rc = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                      SECCOMP_FILTER_FLAG_TSYNC | SECCOMP_FILTER_FLAG_SPEC_ALLOW, &prog);
    int e = errno;
    free(f);
    if (rc == 0)
        return VLCS_OK;
    if (rc > 0) {
        snprintf(err, errsize, "seccomp could not apply the filter to thread %ld of this process",
                 rc);
        return VLCS_E_SYSTEM;
    }
    if (e == ENOSYS || e == EINVAL) {
        snprintf(err, errsize, "this kernel has no seccomp filters (%s)", strerror(e));
        return VLCS_E_UNSUPPORTED;
    }
    if (e == ENOMEM) {
        snprintf(err, errsize, "the kernel's limit on seccomp filter size is reached");
        return LIMIT_CODE(VLCS_LIMIT_SECCOMP);
    }
    snprintf(err, errsize,
             "seccomp is not allowed here (%s: a container policy or an existing filter "
             "forbids it)",
             strerror(e));
    return VLCS_E_UNSUPPORTED;
}

/* Cover every context's code not yet covered; publish the new table.
 * Returns VLCS_OK or a vlcs_errcode_t with err set. */
static int cover_new_code(char *err, size_t errsize)
{
    size_t mapped = sizeof(struct range_table) + MAX_RANGES * sizeof(struct range);
    struct range_table *t = mmap(NULL, mapped, PROT_READ | PROT_WRITE,
                                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (t == MAP_FAILED) {
        snprintf(err, errsize, "out of memory");
        return VLCS_E_SYSTEM;
    }
    t->n = 0;
    registry_lock();
    dl_iterate_phdr(namespaces_ranges, t);
    for (vlcs_ctx *c = registry_first(); c; c = registry_next(c))
        if (!in_namespace(c)) /* copy mode: its copies, under its own lock */
            t->n += context_ranges(c, t->r + t->n, MAX_RANGES - t->n);
    registry_unlock();
    qsort(t->r, t->n, sizeof t->r[0], range_order);
    struct range_table *old = atomic_load(&ranges);
    struct code_range *fresh = malloc((t->n ? t->n : 1) * sizeof *fresh);
    if (fresh == NULL) {
        munmap(t, mapped);
        snprintf(err, errsize, "out of memory");
        return VLCS_E_SYSTEM;
    }
    size_t nfresh = 0;
    for (size_t i = 0; i < t->n; i++)
        if (!covered(old, &t->r[i]))
            fresh[nfresh++] = (struct code_range){t->r[i].start, t->r[i].end};
    /* Publish before filtering: a trap from the new code must find its owner. */
    atomic_store_explicit(&ranges, t, memory_order_release);
    /* The old table may be read by a handler on another thread right now; it
     * stays mapped (one table per load, while strict mode is on). */
    int rc = nfresh ? add_filter(fresh, nfresh, err, errsize) : VLCS_OK;
    free(fresh);
    return rc;
}

void strict_note_load(void)
{
    if (!strict_active() || atomic_load(&coverage_full))
        return;
    char why[256];
    pthread_mutex_lock(&ranges_lock);
    int rc = cover_new_code(why, sizeof why);
    bool full = rc == LIMIT_CODE(VLCS_LIMIT_SECCOMP);
    if (full)
        atomic_store(&coverage_full, true);
    pthread_mutex_unlock(&ranges_lock);
    /* the library is loaded and works; only strict coverage is missing */
    if (full)
        fprintf(stderr, "vlcs: strict mode does not cover the last library loaded, nor any "
                        "loaded after it: %s\n", why);
    else if (rc != 0)
        fprintf(stderr, "vlcs: strict mode does not cover the last library loaded: %s\n", why);
}

/* ---- the handler ------------------------------------------------------- */

/* Copy from the trapping code's memory without faulting on a bad pointer:
 * the kernel would have answered EFAULT, so must we.  Returns the bytes
 * copied (fewer at the end of a mapping) or -errno. */
static long copy_in(const void *user, void *buf, size_t size)
{
    struct iovec local = {buf, size}, remote = {(void *)user, size};
    return raw_syscall(SYS_process_vm_readv, raw_syscall(SYS_getpid, 0, 0, 0, 0, 0, 0),
                          (long)&local, 1, (long)&remote, 1, 0);
}

static bool is_self(long pid)
{
    return pid == 0 || pid == raw_syscall(SYS_getpid, 0, 0, 0, 0, 0, 0) ||
           pid == raw_syscall(SYS_gettid, 0, 0, 0, 0, 0, 0);
}

static long answer(vlcs_ctx *c, long nr, const long a[6])
{
    switch (nr) {
    case SYS_sched_getaffinity: {
        long rc = raw_syscall(nr, a[0], a[1], a[2], 0, 0, 0);
        if (rc > 0 && c != NULL && is_self(a[0]))
            view_filter_self(c, (size_t)rc, (cpu_set_t *)a[2]);
        return rc;
    }
    case SYS_sched_setaffinity: {
        if (c == NULL || a[2] == 0)
            return raw_syscall(nr, a[0], a[1], a[2], 0, 0, 0);
        cpu_set_t want[16], clamped[16];
        size_t in = (size_t)a[1] < sizeof want ? (size_t)a[1] : sizeof want;
        if (copy_in((const void *)a[2], want, in) != (long)in)
            return -EFAULT;
        if ((is_self(a[0]) ? view_clamp_self : view_clamp_mask)(c, in, want, in, clamped) != 0)
            return -EINVAL;
        return raw_syscall(nr, a[0], (long)in, (long)clamped, 0, 0, 0);
    }
    default: { /* open, openat, openat2 */
        /* Open for real first: the kernel validates the pointers (EFAULT
         * comes back as it should), and most paths are not forged at all. */
        long fd = raw_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
        if (fd < 0 || c == NULL)
            return fd;
        const char *path = (const char *)(nr == SYS_open ? a[0] : a[1]);
        long flags = nr == SYS_open ? a[1] : nr == SYS_openat ? a[2]
                                                              : (long)((const struct open_how *)a[2])->flags;
        int dirfd = nr == SYS_open ? AT_FDCWD : (int)a[0];
        int forged = view_open_forged(c, dirfd, path, (int)flags);
        if (forged == -2)
            return fd;
        raw_syscall(SYS_close, fd, 0, 0, 0, 0, 0);
        return forged >= 0 ? forged : -errno;
    }
    }
}

static struct sigaction previous;

static void on_sigsys(int sig, siginfo_t *info, void *uc_)
{
    ucontext_t *uc = uc_;
    if (info->si_code != SYS_SECCOMP || info->si_errno != STRICT_TRAP_DATA) {
        /* Not ours: hand it to whoever had SIGSYS before. */
        if (previous.sa_flags & SA_SIGINFO) {
            if (previous.sa_sigaction)
                previous.sa_sigaction(sig, info, uc_);
        } else if (previous.sa_handler != SIG_IGN && previous.sa_handler != SIG_DFL) {
            previous.sa_handler(sig);
        } else {
            signal(SIGSYS, SIG_DFL);
            raise(SIGSYS);
        }
        return;
    }
    greg_t *g = uc->uc_mcontext.gregs;
    long a[6] = {g[REG_RDI], g[REG_RSI], g[REG_RDX], g[REG_R10], g[REG_R8], g[REG_R9]};
    uintptr_t ip = (uintptr_t)info->si_call_addr;
    vlcs_ctx *c = owner_of(ip); /* NULL only if a filter outlived its table */
    int saved = errno;
    g[REG_RAX] = answer(c, info->si_syscall, a);
    errno = saved;
}

/* ---- installing ------------------------------------------------------- */

static int install(char *err, size_t errsize)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigsys;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSYS, &sa, &previous) != 0) {
        snprintf(err, errsize, "cannot install the SIGSYS handler: %s", strerror(errno));
        return VLCS_E_SYSTEM;
    }
    int rc = VLCS_OK;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        snprintf(err, errsize, "prctl(PR_SET_NO_NEW_PRIVS) failed: %s", strerror(errno));
        rc = VLCS_E_SYSTEM;
        goto undo;
    }
    /* The first filter covers what contexts hold already (maybe nothing: it
     * then only proves that seccomp is allowed here). */
    pthread_mutex_lock(&ranges_lock);
    rc = cover_new_code(err, errsize);
    if (rc == VLCS_OK && atomic_load(&ranges)->n == 0)
        rc = add_filter(NULL, 0, err, errsize);
    pthread_mutex_unlock(&ranges_lock);
    if (rc != VLCS_OK)
        goto undo;
    return VLCS_OK;
undo:
    sigaction(SIGSYS, &previous, NULL);
    return rc;
}

int strict_enable(char *err, size_t errsize)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&lock);
    int rc = VLCS_OK;
    if (!atomic_load(&active)) {
        rc = install(err, errsize);
        if (rc == VLCS_OK)
            atomic_store(&active, true);
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

#else /* not x86_64 */

int strict_enable(char *err, size_t errsize)
{
    snprintf(err, errsize, "strict mode is implemented for x86_64 only");
    return VLCS_E_UNSUPPORTED;
}
bool strict_active(void) { return false; }
void strict_note_load(void) {}
#endif

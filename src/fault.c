/*
 * fault.c - a fault in a context's code ends the call that ran it, not the
 * process.
 *
 * fault_guarded runs a function behind a recovery point (vlcs_ctx_call,
 * thread.c, enters the context around it).
 * The handlers below see SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT first.
 * One is contained, and the thread jumps back to its recovery point, only
 * when all of these hold:
 *  - the thread runs fault_guarded (a guard is open on it);
 *  - the signal is the thread's own: raised by the kernel for the
 *    instruction it ran, or SIGABRT sent by this process (abort());
 *  - the faulting instruction lies in the guard's context's own objects (its
 *    namespace, or its copies in copy mode);
 *  - no frame between it and fault_guarded lies in the dynamic loader, the
 *    base's libc or allocator, or libvlcs: their locks may be held, and a
 *    lock left held by a frame that never returns would hang the base.
 * In a namespace the context has a libc of its own, so whatever its libc
 * held is the context's alone (its heap is the process's: a fault in the
 * allocator lies in the base's libc, and is not contained); the context is
 * then broken for good (vlcs_enter, vlcs_ctx_load and vlcs_ctx_call refuse
 * it, ctx_broken in registry.c, and destroy keeps its memory).  Anything else goes on to the handler that was there
 * before, or to the default action, as without vlcs; a fault with a guard
 * open that is not contained is reported on stderr first, with why.
 *
 * The handler reads neither thread-local storage (a dlopened library's TLS
 * may be allocated on first use, by malloc) nor anything behind a lock: the
 * open guards are found by pthread_self() in a fixed table, objects by
 * _dl_find_object (objects.c; glibc before 2.35 lacks it, and dladdr then
 * takes the loader's lock), a namespace's objects along its link-map
 * chain, copies in copy_owners.c's table without waiting for its lock.
 */
#include "common.h"
#include "fault.h"
#include "context.h"
#include "error.h"
#include "objects.h"
#include "rawsys.h"
#include "registry.h"

#include <errno.h>
#include <gnu/lib-names.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>
#include <unwind.h>

enum {
    MAX_GUARDED = 4096,     /* live threads that have made guarded calls */
    MAX_REPORTED = 48,      /* frames kept for the report */
    MAX_WALKED = 1 << 17,   /* frames walked to find the boundary */
    ALT_STACK = 64 * 1024,  /* the handler's stack: a stack overflow is a fault too */
};

static const int caught[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
enum { NCAUGHT = sizeof caught / sizeof caught[0] };
static struct sigaction previous[NCAUGHT];

struct guard {
    sigjmp_buf jump;
    vlcs_ctx *ctx;
    struct guard *outer;
    uintptr_t boundary; /* fault_guarded's stack pointer: frames below it are the call's */
    /* written by the handler */
    int sig, code;
    void *addr, *pc;
    int nframes;
    void *frames[MAX_REPORTED];
};

struct slot {
    _Atomic pthread_t self; /* 0: free */
    struct guard *_Atomic top;
};
static struct slot slots[MAX_GUARDED];

/* Objects whose frames make a fault uncontainable (their locks). */
static const void *ldso_map, *libc_map, *malloc_map, *self_map;

static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static int install_errno;

static int signal_index(int sig)
{
    for (int i = 0; i < NCAUGHT; i++)
        if (caught[i] == sig)
            return i;
    return -1;
}

/* ---- async-signal-safe output --------------------------------------------- */

struct line {
    char buf[512];
    size_t len;
};

static void put(struct line *l, const char *s)
{
    while (s && *s && l->len < sizeof l->buf - 1)
        l->buf[l->len++] = *s++;
}

static void put_hex(struct line *l, uintptr_t v)
{
    char tmp[2 + 16 + 1], *p = tmp + sizeof tmp - 1;
    *p = '\0';
    do {
        *--p = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    *--p = 'x';
    *--p = '0';
    put(l, p);
}

/* ---- what a fault is ------------------------------------------------------ */

static const char *signal_name(int sig)
{
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGTERM: return "SIGTERM";
    case SIGKILL: return "SIGKILL";
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    default: return "a signal";
    }
}

static const char *code_meaning(int sig, int code)
{
    switch (sig) {
    case SIGSEGV:
        return code == SEGV_MAPERR ? "address not mapped"
               : code == SEGV_ACCERR ? "access not permitted"
                                     : "invalid memory access";
    case SIGBUS:
        return code == BUS_ADRALN ? "misaligned address"
               : code == BUS_ADRERR ? "no such physical address (a truncated mapped file?)"
                                    : "bus error";
    case SIGFPE:
        return code == FPE_INTDIV ? "integer divide by zero"
               : code == FPE_INTOVF ? "integer overflow"
               : code == FPE_FLTDIV ? "floating-point divide by zero"
                                    : "arithmetic exception";
    case SIGILL:
        return code == ILL_ILLOPC ? "illegal instruction" : "illegal operation";
    case SIGABRT:
        return "abort() was called";
    default: /* a signal sent to a program's instance (exec_signals.c) */
        return sigdescr_np(sig) ? sigdescr_np(sig) : "sent to it";
    }
}

/* ---- which objects are whose ---------------------------------------------- */

static bool owned_by(const vlcs_ctx *c, const void *map)
{
    const struct ctx_backend *b = c->backend;
    return map != NULL && b != NULL && b->owns(c, map);
}

static bool holds_locks(const void *map)
{
    return map == ldso_map || map == libc_map || map == malloc_map || map == self_map;
}

/* ---- the open guards ------------------------------------------------------ */

/* A thread claims a slot at its first guarded call and keeps it until it
 * ends (the key's destructor gives it back); the handler finds it by
 * pthread_self(), a read of the thread pointer. */
static pthread_key_t slot_key;
static __thread struct slot *my_slot;

static struct slot *slot_of(pthread_t self)
{
    for (int i = 0; i < MAX_GUARDED; i++)
        if (atomic_load_explicit(&slots[i].self, memory_order_acquire) == self)
            return &slots[i];
    return NULL;
}

static void slot_give_back(void *slot)
{
    struct slot *s = slot;
    atomic_store_explicit(&s->top, NULL, memory_order_release);
    atomic_store_explicit(&s->self, 0, memory_order_release);
}

/* In a forked child only the forking thread lives: the others' slots
 * name threads that the child's new ones may be again. */
static void slots_after_fork(void)
{
    for (int i = 0; i < MAX_GUARDED; i++)
        if (&slots[i] != my_slot)
            slot_give_back(&slots[i]);
}

static struct slot *slot_claim(void)
{
    if (my_slot != NULL)
        return my_slot;
    pthread_t self = pthread_self();
    for (int i = 0; i < MAX_GUARDED; i++) {
        pthread_t none = 0;
        if (atomic_compare_exchange_strong(&slots[i].self, &none, self)) {
            if (pthread_setspecific(slot_key, &slots[i]) != 0) {
                slot_give_back(&slots[i]);
                return NULL;
            }
            return my_slot = &slots[i];
        }
    }
    return NULL;
}

/* ---- the handler ---------------------------------------------------------- */

struct walk {
    void *pc;           /* the faulting instruction */
    uintptr_t boundary;
    bool at_fault;      /* past the handler's own frames */
    bool skip_self;     /* libvlcs's frames on top are not the call's (fault_abort) */
    bool in_self;       /* a frame of libvlcs was seen: only libvlcs's may follow */
    bool reached;       /* the boundary's frame was seen */
    bool locked;        /* a frame of an object whose locks matter */
    const void *locked_map;
    int libc_first;     /* frames of the process's libc on top taken as holding nothing */
    long walked;
    struct guard *g;
};

static _Unwind_Reason_Code walk_frame(struct _Unwind_Context *uc, void *arg)
{
    struct walk *w = arg;
    int before = 0;
    uintptr_t ip = _Unwind_GetIPInfo(uc, &before);
    if (!w->at_fault) {
        if ((void *)ip != w->pc)
            return ++w->walked < 64 ? _URC_NO_REASON : _URC_END_OF_STACK;
        w->at_fault = true;
    } else if (_Unwind_GetCFA(uc) >= w->boundary) {
        /* the unwinder's CFA here is the callee's: this frame's stack
         * pointer at its call, fault_guarded's own for its frame */
        w->reached = true;
        return _URC_END_OF_STACK;
    }
    if (++w->walked > MAX_WALKED)
        return _URC_END_OF_STACK;
    /* a return address points after its call: -1 stays in the caller */
    uintptr_t at = ip - (before || (void *)ip == w->pc ? 0 : 1);
    const void *map = object_at((void *)at);
    if (w->skip_self && map == self_map)
        return _URC_NO_REASON;
    w->skip_self = false;
    /* libvlcs's frames right above fault_guarded are the function it
     * called (vlcs_ctx_exec's); below them, code of the context's, they
     * are vlcs called from the context and may hold its locks. */
    if (map == self_map)
        w->in_self = true;
    else if (w->in_self && !w->locked) {
        w->locked = true;
        w->locked_map = self_map;
    }
    /* the top frames of the process's libc a signal's end allows (a system
     * call's wrapper: fault_end_by_signal); any other frame of it, or of
     * the loader, holds locks that matter */
    if (w->libc_first > 0 && map == libc_map) {
        w->libc_first--;
    } else {
        w->libc_first = 0;
        if (map != self_map && holds_locks(map) && !w->locked) {
            w->locked = true;
            w->locked_map = map;
        }
    }
    if (w->g->nframes < MAX_REPORTED)
        w->g->frames[w->g->nframes++] = (void *)at;
    return _URC_NO_REASON;
}

static void *fault_pc(const void *ucontext)
{
    const ucontext_t *uc = ucontext;
#if defined(__x86_64__)
    return (void *)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (void *)uc->uc_mcontext.pc;
#else
    (void)uc;
    return NULL;
#endif
}

static const char *map_name(const void *map)
{
    const struct link_map *m = map;
    if (m == NULL)
        return "unknown code";
    return m->l_name && m->l_name[0] ? m->l_name : "the program";
}

/* What was there before vlcs: its handler, else the default action. */
static void pass_on(int sig, siginfo_t *si, void *ucontext)
{
    int i = signal_index(sig);
    struct sigaction *old = &previous[i];
    if (old->sa_flags & SA_SIGINFO) {
        old->sa_sigaction(sig, si, ucontext);
        return;
    }
    if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
        old->sa_handler(sig);
        return;
    }
    if (old->sa_handler == SIG_IGN && si->si_code <= 0)
        return; /* an ignored signal sent by someone (a fault cannot be ignored) */
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    /* A fault happens again when the instruction is retried; a sent signal
     * is sent again, delivered once this handler returns. */
    if (si->si_code <= 0)
        raise(sig);
}

static _Unwind_Reason_Code walk_frame(struct _Unwind_Context *uc, void *arg);

/* The stack down to the call, a frame a line, as "#1 0x7f... in libx.so+0x1a2b"
 * (names from the link maps: dladdr would take the loader's lock). */
static void put_frames(struct guard *g, void *pc)
{
    if (g->nframes == 0) {
        struct walk w = {.pc = pc, .boundary = g->boundary, .g = g};
        _Unwind_Backtrace(walk_frame, &w);
    }
    for (int i = 0; i < g->nframes; i++) {
        struct line l = {.len = 0};
        const struct link_map *m = object_at(g->frames[i]);
        char n[12], *p = n + sizeof n - 1;
        *p = '\0';
        int k = i;
        do
            *--p = (char)('0' + k % 10);
        while ((k /= 10) > 0);
        put(&l, "  #");
        put(&l, p);
        put(&l, " ");
        put_hex(&l, (uintptr_t)g->frames[i]);
        put(&l, " in ");
        put(&l, map_name(m));
        if (m != NULL) {
            put(&l, "+");
            put_hex(&l, (uintptr_t)g->frames[i] - m->l_addr);
        }
        put(&l, "\n");
        ssize_t unused = write(2, l.buf, l.len);
        (void)unused;
    }
}

static void report_uncontained(struct guard *g, int sig, void *pc, const void *map,
                               const char *why, const void *below)
{
    struct line l = {.len = 0};
    put(&l, "vlcs: ");
    put(&l, signal_name(sig));
    put(&l, " in context '");
    put(&l, g->ctx->name);
    put(&l, "' at ");
    put_hex(&l, (uintptr_t)pc);
    put(&l, " in ");
    put(&l, map_name(map));
    put(&l, ", ");
    put(&l, why);
    if (below != NULL) {
        put(&l, " (");
        put(&l, map_name(below));
        put(&l, ")");
    }
    put(&l, ": the process ends\n");
    ssize_t unused = write(2, l.buf, l.len);
    (void)unused;
    put_frames(g, pc);
}

#if defined(__x86_64__)
/* The kernel returns from a handler through the restorer that the libc
 * registering it named: a context's libc registering vlcs's handler again
 * (a library putting back the handler it found) names its own, which is
 * gone once the context is unloaded, and the unwinder reads its code to
 * find the signal frame.  Every libc's restorer does the same
 * (rt_sigreturn): the frame's return goes to the base's, always mapped. */
struct kernel_sigaction {
    void *handler;
    unsigned long flags;
    void *restorer;
    uint64_t mask;
};
static void *base_restorer;

static void restorer_read(void)
{
    struct kernel_sigaction k;
    if (raw_syscall(SYS_rt_sigaction, SIGSEGV, 0, (long)&k, sizeof k.mask, 0, 0) == 0)
        base_restorer = k.restorer;
}

static void restorer_mend(void *ucontext)
{
    void **ret = (void **)ucontext - 1; /* the rt_sigframe's pretcode, before its ucontext */
    if (base_restorer != NULL && *ret != base_restorer)
        *ret = base_restorer;
}
#else
static void restorer_read(void) {}
static void restorer_mend(void *ucontext) { (void)ucontext; }
#endif

static void on_fault(int sig, siginfo_t *si, void *ucontext)
{
    int saved_errno = errno;
    restorer_mend(ucontext);
    struct slot *s = slot_of(pthread_self());
    struct guard *g = s ? atomic_load_explicit(&s->top, memory_order_acquire) : NULL;
    bool own = si->si_code > 0 || (sig == SIGABRT && si->si_pid == getpid());
    if (g == NULL || !own) {
        errno = saved_errno;
        pass_on(sig, si, ucontext);
        return;
    }
    void *pc = fault_pc(ucontext);
    const void *map = object_at(pc);
    const struct sigaction *old = &previous[signal_index(sig)];
    const void *old_fn = old->sa_flags & SA_SIGINFO ? (const void *)old->sa_sigaction
                                                    : (const void *)old->sa_handler;
    if (owned_by(g->ctx, object_at(old_fn))) {
        /* the context's own library handles its faults (a JIT, a collector) */
        errno = saved_errno;
        pass_on(sig, si, ucontext);
        return;
    }
    if (!owned_by(g->ctx, map)) {
        report_uncontained(g, sig, pc, map,
                           map == libc_map || map == malloc_map
                               ? "the process's libc or allocator, which every context shares "
                                 "(its heap, or a lock, may be left broken): a fault there cannot "
                                 "be contained"
                               : "code the context shares with the process: a fault there "
                                 "cannot be contained",
                           NULL);
        errno = saved_errno;
        pass_on(sig, si, ucontext);
        return;
    }
    g->nframes = 0;
    struct walk w = {.pc = pc, .boundary = g->boundary, .g = g};
    _Unwind_Backtrace(walk_frame, &w);
    if (w.locked || !w.reached) {
        report_uncontained(g, sig, pc, map,
                           w.locked ? (w.locked_map == ldso_map
                                           ? "while the dynamic loader ran (its lock may be held)"
                                           : "with the base's libc, allocator or vlcs below it "
                                             "on the stack (their locks may be held)")
                                    : "and the stack down to the call into the context cannot be read",
                           w.locked ? w.locked_map : NULL);
        errno = saved_errno;
        pass_on(sig, si, ucontext);
        return;
    }
    g->sig = sig;
    g->code = si->si_code;
    g->addr = si->si_addr;
    g->pc = pc;
    siglongjmp(g->jump, 1);
}

/* A signal that ends a program's instance (exec_signals.c) where the
 * process's action would end the process: the thread jumps back to its
 * recovery point where a fault there would be contained. */
void fault_end_by_signal(int sig, void *siginfo, void *ucontext)
{
    const siginfo_t *si = siginfo;
    struct slot *s = slot_of(pthread_self());
    struct guard *g = s ? atomic_load_explicit(&s->top, memory_order_acquire) : NULL;
    if (g == NULL)
        return;
    void *pc = fault_pc(ucontext);
    /* In copy mode a program waits in the process's libc (pause, read,
     * nanosleep): ended there when the thread was in a system call and at
     * most two frames of libc lie above the context's code, wrappers that
     * hold none of libc's locks (malloc's mmap, stdio's write and a locale's
     * open lie deeper). */
    int libc_first = 0;
#if defined(__x86_64__)
    const unsigned char *code = pc;
    if (object_at(pc) == libc_map && code[-2] == 0x0f && code[-1] == 0x05) /* after a syscall */
        libc_first = 2;
#endif
    if (libc_first == 0 && !owned_by(g->ctx, object_at(pc)))
        return;
    g->nframes = 0;
    struct walk w = {.pc = pc, .boundary = g->boundary, .g = g, .libc_first = libc_first};
    _Unwind_Backtrace(walk_frame, &w);
    if (w.locked || !w.reached)
        return;
    g->sig = sig;
    g->code = si->si_code;
    g->addr = NULL;
    g->pc = pc;
    siglongjmp(g->jump, 1);
}

/* abort() called by the context's code reaches vlcs through the
 * interposer (runtime-wide, so that outside a guard it ends the process as
 * the base's abort would).  Inside a guard it is contained as a raised
 * SIGABRT would be, without taking the base's abort lock on the way.
 * Returns when it is not to be contained. */
void fault_abort(void)
{
    struct slot *s = my_slot;
    struct guard *g = s ? atomic_load_explicit(&s->top, memory_order_acquire) : NULL;
    if (g == NULL)
        return;
    g->nframes = 0;
    struct walk w = {.at_fault = true, .skip_self = true, .boundary = g->boundary, .g = g};
    _Unwind_Backtrace(walk_frame, &w);
    /* frames[0] is the interposer's abort, frames[1] its caller */
    if (w.locked || !w.reached || g->nframes < 2 || !owned_by(g->ctx, object_at(g->frames[1])))
        return;
    memmove(g->frames, g->frames + 1, (size_t)--g->nframes * sizeof g->frames[0]);
    g->sig = SIGABRT;
    g->code = SI_TKILL;
    g->addr = NULL;
    g->pc = g->frames[0];
    siglongjmp(g->jump, 2);
}

/* ---- installing ------------------------------------------------------------ */

static const void *loaded_map(const char *soname)
{
    void *h = dlopen(soname, RTLD_NOLOAD | RTLD_LAZY);
    struct link_map *map = NULL;
    if (h != NULL) {
        if (dlinfo(h, RTLD_DI_LINKMAP, &map) != 0)
            map = NULL;
        dlclose(h);
    }
    return map;
}

static void install(void)
{
    if ((install_errno = pthread_key_create(&slot_key, slot_give_back)) != 0 ||
        (install_errno = pthread_atfork(NULL, NULL, slots_after_fork)) != 0)
        return;
    /* By name, not by the address of one of their symbols: a program built
     * without -fPIE holds copies of the data it reads (_r_debug) and the
     * canonical addresses of the functions it takes the address of. */
    ldso_map = loaded_map(LD_SO);
    libc_map = loaded_map(LIBC_SO);
    malloc_map = object_at(dlsym(RTLD_DEFAULT, "malloc"));
    if (malloc_map == NULL || ((const struct link_map *)malloc_map)->l_name[0] == '\0')
        malloc_map = libc_map; /* the program's own symbol: libc's malloc, unless preloaded */
    self_map = object_at((const void *)&install);
    /* The unwinder is loaded now, not first in a handler (dlopen, malloc). */
    struct walk w = {.pc = NULL, .boundary = 0};
    struct guard g;
    w.g = &g;
    g.nframes = 0;
    w.at_fault = true;
    w.boundary = (uintptr_t)-1;
    _Unwind_Backtrace(walk_frame, &w);
    for (int i = 0; i < NCAUGHT; i++) {
        struct sigaction sa = {.sa_sigaction = on_fault, .sa_flags = SA_SIGINFO | SA_ONSTACK};
        sigemptyset(&sa.sa_mask);
        if (sigaction(caught[i], &sa, &previous[i]) != 0) {
            install_errno = errno;
            for (int k = 0; k < i; k++)
                sigaction(caught[k], &previous[k], NULL);
            return;
        }
    }
    restorer_read();
}

/* A stack for the handler on each thread that makes guarded calls and has
 * none, unmapped when the thread ends. */
static pthread_key_t alt_key;
static pthread_once_t alt_once = PTHREAD_ONCE_INIT;
static __thread bool alt_checked;

static void alt_free(void *mem)
{
    stack_t off = {.ss_flags = SS_DISABLE};
    sigaltstack(&off, NULL);
    munmap(mem, ALT_STACK);
}

static void alt_key_make(void) { pthread_key_create(&alt_key, alt_free); }

static void alt_stack_ensure(void)
{
    if (alt_checked)
        return;
    alt_checked = true;
    stack_t cur;
    if (sigaltstack(NULL, &cur) != 0 || !(cur.ss_flags & SS_DISABLE))
        return;
    pthread_once(&alt_once, alt_key_make);
    void *mem = mmap(NULL, ALT_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return;
    stack_t ss = {.ss_sp = mem, .ss_size = ALT_STACK, .ss_flags = 0};
    if (sigaltstack(&ss, NULL) != 0 || pthread_setspecific(alt_key, mem) != 0) {
        alt_free(mem);
        return;
    }
}

/* ---- after a contained fault ---------------------------------------------- */

/* An object's file: a copy is named after its original's descriptor
 * (/proc/PID/fd/N), whose target is read into buf. */
static const char *original_file(const char *name, char *buf, size_t size)
{
    if (strncmp(name, "/proc/", 6) != 0)
        return name;
    ssize_t n = readlink(name, buf, size - 1);
    if (n <= 0)
        return name;
    buf[n] = '\0';
    return buf;
}

static void describe_at(char *buf, size_t size, const void *pc)
{
    Dl_info info;
    void *map = NULL;
    char path[512];
    const char *file = "unknown code";
    if (dladdr1(pc, &info, &map, RTLD_DL_LINKMAP) != 0 && map != NULL)
        file = original_file(map_name(map), path, sizeof path);
    if (map != NULL && info.dli_sname != NULL)
        snprintf(buf, size, "%s+0x%lx in %s", info.dli_sname,
                 (unsigned long)((uintptr_t)pc - (uintptr_t)info.dli_saddr), file);
    else if (map != NULL)
        snprintf(buf, size, "%s+0x%lx", file,
                 (unsigned long)((uintptr_t)pc - (uintptr_t)info.dli_fbase));
    else
        snprintf(buf, size, "%p (%s)", pc, file);
}

/* libc, or vlcs's interposer (a copy-mode program's failed assert raises
 * SIGABRT there): where the caller says more */
static bool in_libc(const void *pc)
{
    Dl_info info;
    char path[512];
    if (dladdr(pc, &info) == 0 || info.dli_fname == NULL)
        return false;
    const char *file = original_file(info.dli_fname, path, sizeof path);
    const char *slash = strrchr(file, '/');
    const char *name = slash ? slash + 1 : file;
    return strncmp(name, "libc.so", 7) == 0 || strncmp(name, "libvlcs_interpose", 17) == 0;
}

/* The report vlcs_ctx_fault returns: a line, then the frames. */
static char *report(const struct guard *g)
{
    char where[768], first[1024];
    describe_at(where, sizeof where, g->pc);
    if (g->sig != SIGSEGV && g->sig != SIGBUS) /* si_addr is the instruction's: the pc */
        snprintf(first, sizeof first, "%s (%s) at %s", signal_name(g->sig),
                 code_meaning(g->sig, g->code), where);
    else
        snprintf(first, sizeof first, "%s (%s, address 0x%lx) at %s", signal_name(g->sig),
                 code_meaning(g->sig, g->code), (unsigned long)(uintptr_t)g->addr, where);
    /* In libc (the context's own copy) or the interposer, the caller says
     * more: strlen, abort, assert */
    bool in_libc_first = g->nframes > 0 && in_libc(g->frames[0]);
    for (int i = 1; i < g->nframes && in_libc_first; i++)
        if (!in_libc(g->frames[i])) {
            size_t n = strlen(first);
            describe_at(where, sizeof where, g->frames[i]);
            snprintf(first + n, sizeof first - n, ", called from %s", where);
            break;
        }
    size_t cap = strlen(first) + 2 + (size_t)g->nframes * 800;
    char *out = malloc(cap);
    if (out == NULL)
        return NULL;
    size_t len = (size_t)snprintf(out, cap, "%s\n", first);
    for (int i = 0; i < g->nframes && len < cap; i++) {
        describe_at(where, sizeof where, g->frames[i]);
        len += (size_t)snprintf(out + len, cap - len, "  #%d %p %s\n", i, g->frames[i], where);
    }
    return out;
}

/* For good: the first fault's report stays (the context is never entered
 * again, so there is no second), and destroy keeps the libraries loaded. */
static void ctx_mark_broken(vlcs_ctx *c, char *text, int sig)
{
    static char unknown[] = "a fault (no memory was left to describe it)";
    pthread_mutex_lock(&c->lock);
    if (c->keep == NULL)
        c->keep = strdup("a fault broke it, and its code may hold its own locks");
    char *none = NULL;
    if (atomic_compare_exchange_strong(&c->fault, &none, text ? text : unknown))
        c->fault_signal = sig;
    else
        free(text);
    pthread_mutex_unlock(&c->lock);
}

/* The caller's stack pointer at its call of this (its own CFA): the same at
 * the caller's every call, as fault_guarded's frame has a fixed size. */
static __attribute__((noinline)) uintptr_t caller_stack(void)
{
    return (uintptr_t)__builtin_dwarf_cfa();
}

/* ---- public ---------------------------------------------------------------- */

VLCS_API const char *vlcs_ctx_fault(const vlcs_ctx *h)
{
    vlcs_ctx *c = ctx_get(h, "reading a context's fault");
    return c ? atomic_load_explicit(&c->fault, memory_order_acquire) : NULL;
}

int fault_guarded(vlcs_ctx *c, void *(*fn)(void *), void *arg, void **result)
{
    pthread_once(&install_once, install);
    if (install_errno != 0) {
        set_error(VLCS_E_SYSTEM, "Error calling into context '%s': its fault handlers cannot be "
                  "installed: %s", c->name, strerror(install_errno));
        return -1;
    }
    alt_stack_ensure();
    struct slot *s = slot_claim();
    if (s == NULL) {
        set_error(LIMIT_CODE(VLCS_LIMIT_OTHER), "Error calling into context '%s': %d threads "
                  "have made calls into contexts; make them from fewer threads",
                  c->name, MAX_GUARDED);
        return -1;
    }
    struct guard g = {.ctx = c, .outer = atomic_load_explicit(&s->top, memory_order_relaxed)};
    g.boundary = caller_stack();
    atomic_store_explicit(&s->top, &g, memory_order_release);
    int how = sigsetjmp(g.jump, 0);
    if (how == 0) {
        void *r = fn(arg);
        atomic_store_explicit(&s->top, g.outer, memory_order_release);
        *result = r;
        return 0;
    }
    /* The handler jumped here (how 1), its signal still blocked: no mask
     * was saved, so that a call costs no system call.  Or fault_abort did
     * (how 2). */
    atomic_store_explicit(&s->top, g.outer, memory_order_release);
    if (how == 1) {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, g.sig);
        pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    }
    ctx_mark_broken(c, report(&g), g.sig);
    return 1;
}

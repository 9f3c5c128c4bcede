/*
 * exec_signals.c - the signals of a program's instances are the instance's.
 *
 * A process has one action per signal.  Instances of programs (exec.c)
 * share the process, so a handler one of them installed would serve them
 * all and outlive its code: a shell's SIGCHLD handler, run on another
 * thread once its instance had been unloaded, ended the process.  Here an
 * instance's sigaction (signal, kill, raise, alarm, setitimer and
 * timer_create reach libvlcs through the interposer: ip_signal.c) is
 * recorded as the instance's own, and the process's action for that signal
 * becomes dispatch() below, in libvlcs, which is never unloaded.
 *
 * dispatch() finds whose a signal is:
 *  - the instance whose main thread it was sent to: tgkill (raise, kill of
 *    its own pid), a fault of its code, a SIGPIPE of its write, one of its
 *    timers (alarm, setitimer and timer_create signal its thread);
 *  - SIGCHLD: the instance that started the child (si_pid);
 *  - anything else is the process's (a kill from outside, Ctrl-C): the
 *    action the process had before vlcs took the signal over.
 * An instance's handler runs on its own thread (a SIGCHLD the kernel gave
 * to another thread is sent on with tgkill, its siginfo kept here), with
 * its sa_mask, SA_SIGINFO, SA_RESETHAND and SA_NODEFER as asked.  SIG_IGN
 * drops the signal; SIG_DFL does the default for the instance: nothing,
 * or its end with 128 + the signal, at once where fault.c's rules say the
 * thread holds nothing the process needs, else as soon as it does (a wait
 * interrupted, or a retry 2 ms later).  Stop signals do not stop one
 * instance.  SA_RESTART is the process's, as the last sigaction asked.
 * When no instance is left the process gets back every action taken over.
 *
 * The handler reads no thread-local storage and takes no lock: instances
 * sit in a fixed table, found by thread id.
 */
#include "common.h"
#include "exec_signals.h"
#include "context.h"
#include "error.h"
#include "fault.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

enum {
    MAX_INSTANCES = 256,
    MAX_CHILDREN = 4096,
    MAX_TIMERS = 8, /* timer_create'd per instance and remembered as its */
    RETRY_NS = 2 * 1000 * 1000,
};

struct isig {
    struct sigaction act[NSIG];
    /* alarm and setitimer(ITIMER_REAL): a timer signalling tid */
    timer_t alarm_timer;
    _Atomic int alarm_id; /* the kernel's id of it; -1: none yet */
    /* an end the thread could not take where it was: retried */
    timer_t retry_timer;
    _Atomic int retry_id;
    _Atomic int pending_end;
    _Atomic int timers[MAX_TIMERS]; /* the program's own, by kernel id; -1: none */
    /* a SIGCHLD the kernel gave another thread, sent on to tid */
    _Atomic int chld_kept;
    siginfo_t chld_info;
};

static struct isig slots[MAX_INSTANCES];
/* Who runs in each slot, apart from the rest: every lookup walks these
 * (a sigaction from any context's library asks), not the slots' pages. */
static _Atomic pid_t slot_tid[MAX_INSTANCES]; /* the thread running its main; 0: free */
static vlcs_ctx *_Atomic slot_ctx[MAX_INSTANCES];
static struct {
    _Atomic pid_t pid;
    _Atomic int slot;
} children[MAX_CHILDREN];

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int live;                      /* slots in use; under lock */
static _Atomic bool taken[NSIG];      /* actions replaced by dispatch() */
static struct sigaction before[NSIG]; /* the process's, before */

static void dispatch(int sig, siginfo_t *si, void *uc);

static pid_t my_tid(void) { return (pid_t)syscall(SYS_gettid); }

static bool ignored_by_default(int sig)
{
    return sig == SIGCHLD || sig == SIGCONT || sig == SIGURG || sig == SIGWINCH;
}

static bool stops(int sig)
{
    return sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU || sig == SIGSTOP;
}

static bool is_fault(int sig)
{
    return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL ||
           sig == SIGTRAP || sig == SIGSYS || sig == SIGABRT;
}

static bool is_handler(const struct sigaction *a)
{
    return a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN;
}

static int slot_of_tid(pid_t tid)
{
    for (int i = 0; i < MAX_INSTANCES; i++)
        if (atomic_load_explicit(&slot_tid[i], memory_order_acquire) == tid)
            return i;
    return -1;
}

static int slot_of_ctx(const vlcs_ctx *c)
{
    if (c == NULL)
        return -1;
    for (int i = 0; i < MAX_INSTANCES; i++)
        if (atomic_load_explicit(&slot_ctx[i], memory_order_acquire) == c)
            return i;
    return -1;
}

/* ---- the process's actions ------------------------------------------------ */

/* sig's action becomes dispatch(); under lock. */
static int take(int sig, int restart)
{
    struct sigaction d = {.sa_sigaction = dispatch, .sa_flags = SA_SIGINFO | SA_ONSTACK | restart};
    sigemptyset(&d.sa_mask);
    if (!atomic_load(&taken[sig])) {
        struct sigaction now;
        if (sigaction(sig, NULL, &now) != 0)
            return -errno;
        /* still ours from a run that found it replaced and left it */
        if (!(now.sa_flags & SA_SIGINFO) || now.sa_sigaction != dispatch)
            before[sig] = now;
        if (sigaction(sig, &d, NULL) != 0)
            return -errno;
        atomic_store(&taken[sig], true);
        return 0;
    }
    struct sigaction now;
    if (sigaction(sig, NULL, &now) == 0 && (now.sa_flags & SA_SIGINFO) &&
        now.sa_sigaction == dispatch && (now.sa_flags & SA_RESTART) != restart)
        sigaction(sig, &d, NULL);
    return 0;
}

/* Every action taken over goes back, unless the process replaced dispatch()
 * since (its own is the one to keep); under lock. */
static void give_back(void)
{
    for (int sig = 1; sig < NSIG; sig++) {
        if (!atomic_load(&taken[sig]))
            continue;
        struct sigaction now;
        if (sigaction(sig, NULL, &now) == 0 && (now.sa_flags & SA_SIGINFO) &&
            now.sa_sigaction == dispatch)
            sigaction(sig, &before[sig], NULL);
        atomic_store(&taken[sig], false);
    }
}

/* Runs a handler as the kernel would have: its mask added while it runs. */
static void call_handler(const struct sigaction *a, int sig, siginfo_t *si, void *uc)
{
    sigset_t block = a->sa_mask, old;
    if (a->sa_flags & SA_NODEFER)
        sigdelset(&block, sig);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    if (a->sa_flags & SA_NODEFER) {
        sigset_t one;
        sigemptyset(&one);
        sigaddset(&one, sig);
        pthread_sigmask(SIG_UNBLOCK, &one, NULL);
    }
    if (a->sa_flags & SA_SIGINFO)
        a->sa_sigaction(sig, si, uc);
    else
        a->sa_handler(sig);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* What the process would have done without vlcs. */
static void process_action(int sig, siginfo_t *si, void *uc)
{
    struct sigaction a = before[sig];
    if (a.sa_handler == SIG_IGN)
        return;
    if (a.sa_handler == SIG_DFL) {
        if (ignored_by_default(sig))
            return;
        /* The default ends the process, as without vlcs: a fault happens
         * again when its instruction is retried, a sent signal is sent
         * again, and taken once this handler returns. */
        struct sigaction dfl = {.sa_handler = SIG_DFL};
        sigemptyset(&dfl.sa_mask);
        sigaction(sig, &dfl, NULL);
        if (si->si_code <= 0)
            syscall(SYS_tgkill, getpid(), my_tid(), sig);
        return;
    }
    if (a.sa_flags & SA_RESETHAND) {
        before[sig].sa_handler = SIG_DFL;
        before[sig].sa_flags &= ~SA_SIGINFO;
    }
    call_handler(&a, sig, si, uc);
}

/* ---- an instance's actions ------------------------------------------------ */

static void arm(timer_t t, long ns)
{
    struct itimerspec when = {.it_value = {.tv_sec = ns / 1000000000L, .tv_nsec = ns % 1000000000L}};
    timer_settime(t, 0, &when, NULL);
}

/* The default action for instance s of a signal that ends a process. */
static void instance_ends(int s, int sig, siginfo_t *si, void *uc)
{
    /* where the thread holds nothing of the process's: there and then */
    fault_end_by_signal(sig, si, uc);
    /* else as soon as it can: an interrupted wait, or a retry */
    atomic_store(&slots[s].pending_end, sig);
    if (atomic_load(&slots[s].retry_id) >= 0)
        arm(slots[s].retry_timer, RETRY_NS);
}

static void instance_action(int s, int sig, siginfo_t *si, void *uc)
{
    struct isig *in = &slots[s];
    struct sigaction a = in->act[sig];
    if (a.sa_handler == SIG_IGN)
        return;
    if (a.sa_handler == SIG_DFL) {
        if (ignored_by_default(sig) || stops(sig))
            return;
        if (is_fault(sig)) /* fault.c's own rules */
            process_action(sig, si, uc);
        else
            instance_ends(s, sig, si, uc);
        return;
    }
    if (a.sa_flags & SA_RESETHAND) {
        in->act[sig].sa_handler = SIG_DFL;
        in->act[sig].sa_flags &= ~SA_SIGINFO;
    }
    call_handler(&a, sig, si, uc);
}

static bool own_timer(const struct isig *in, int id)
{
    if (id == atomic_load(&in->alarm_id) || id == atomic_load(&in->retry_id))
        return true;
    for (int k = 0; k < MAX_TIMERS; k++)
        if (atomic_load(&in->timers[k]) == id)
            return true;
    return false;
}

/* Whether the signal was meant for this very thread (not the process). */
static bool sent_to_thread(const struct isig *in, int sig, const siginfo_t *si)
{
    if (si->si_code == SI_TKILL)
        return true;
    if (si->si_code == SI_TIMER)
        return own_timer(in, si->si_timerid);
    if (is_fault(sig) && si->si_code > 0)
        return true;
    return (sig == SIGPIPE || sig == SIGXFSZ) && si->si_code == SI_USER && si->si_pid == getpid();
}

static int owner_of_child(pid_t pid)
{
    for (int k = 0; k < MAX_CHILDREN; k++)
        if (atomic_load_explicit(&children[k].pid, memory_order_acquire) == pid)
            return atomic_load_explicit(&children[k].slot, memory_order_acquire);
    return -1;
}

/* A SIGCHLD the kernel gave this thread, sent on to instance s's. */
static void send_on(int s, const siginfo_t *si)
{
    struct isig *in = &slots[s];
    pid_t tid = atomic_load(&slot_tid[s]);
    in->chld_info = *si;
    atomic_store(&in->chld_kept, 1);
    if (tid != 0)
        syscall(SYS_tgkill, getpid(), tid, SIGCHLD);
}

/* The kernel's SIGCHLD is the process's: a second child's end while the
 * first's is pending makes no second signal, and the signal names one
 * child.  So each instance with a child that has ended (seen, not reaped,
 * with WNOWAIT) hears of it; a child that ended before its parent's fork
 * returned and named it is heard of by every instance that waits for
 * children.  The process's own action runs when the child is none of
 * theirs. */
static void children_changed(int here, siginfo_t *si, void *uc)
{
    unsigned long told[MAX_INSTANCES / (8 * sizeof(unsigned long))] = {0};
    enum { BITS = 8 * sizeof(unsigned long) };
    int named = owner_of_child(si->si_pid);
    bool any = false;
    for (int k = 0; k < MAX_CHILDREN; k++) {
        pid_t pid = atomic_load_explicit(&children[k].pid, memory_order_acquire);
        int s = atomic_load_explicit(&children[k].slot, memory_order_acquire);
        /* one with no handler is not interrupted (SIGCHLD's default is
         * nothing) */
        if (pid <= 0 || s < 0 || s >= MAX_INSTANCES || (told[s / BITS] >> (s % BITS)) & 1 ||
            !is_handler(&slots[s].act[SIGCHLD]))
            continue;
        siginfo_t w;
        memset(&w, 0, sizeof w);
        if (s != named &&
            (waitid(P_PID, (id_t)pid, &w, WEXITED | WNOHANG | WNOWAIT) != 0 || w.si_pid != pid))
            continue;
        if (s == named)
            w = *si;
        told[s / BITS] |= 1UL << (s % BITS);
        any = true;
        if (s == here)
            instance_action(here, SIGCHLD, &w, uc);
        else
            send_on(s, &w);
    }
    if (named >= 0 && !((told[named / BITS] >> (named % BITS)) & 1) &&
        is_handler(&slots[named].act[SIGCHLD])) {
        any = true;
        if (named == here)
            instance_action(here, SIGCHLD, si, uc);
        else
            send_on(named, si);
    }
    if (!any)
        for (int s = 0; s < MAX_INSTANCES; s++)
            if (atomic_load(&slot_tid[s]) != 0 && is_handler(&slots[s].act[SIGCHLD]))
                send_on(s, si);
    if (named < 0)
        process_action(SIGCHLD, si, uc);
}

static void dispatch(int sig, siginfo_t *si, void *uc)
{
    int saved_errno = errno;
    int here = slot_of_tid(my_tid());
    siginfo_t info = *si;
    int to = -1;
    if (here >= 0 && sent_to_thread(&slots[here], sig, si)) {
        to = here;
        struct isig *in = &slots[here];
        if (si->si_code == SI_TIMER && si->si_timerid == atomic_load(&in->retry_id)) {
            int end = atomic_exchange(&in->pending_end, 0);
            if (end != 0)
                instance_ends(here, end, si, uc);
            errno = saved_errno;
            return;
        }
        if (sig == SIGCHLD && si->si_code == SI_TKILL && si->si_pid == getpid() &&
            atomic_exchange(&in->chld_kept, 0))
            info = in->chld_info;
    }
    if (to == here && to >= 0) {
        instance_action(here, sig, &info, uc);
    } else if (to >= 0) {
        send_on(to, si);
    } else if (sig == SIGCHLD && si->si_code > 0) {
        children_changed(here, si, uc);
    } else {
        process_action(sig, si, uc);
    }
    errno = saved_errno;
}

/* ---- an instance's life ----------------------------------------------------- */

static int thread_timer(pid_t tid, int sig, void *value, timer_t *t)
{
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = sig;
    ev.sigev_value.sival_ptr = value;
    ev._sigev_un._tid = tid;
    return timer_create(CLOCK_MONOTONIC, &ev, t) == 0 ? (int)(intptr_t)*t : -1;
}

/* A fork from an instance makes a process of its own (a shell's subshell,
 * a child before its exec): the instance's actions become that process's
 * real ones, and it hosts no instance.  The table's lock is held across
 * the fork, so that the child finds it whole. */
static int forking_slot = -1;

static void signals_fork_prepare(void)
{
    pthread_mutex_lock(&lock);
    forking_slot = slot_of_tid(my_tid());
}

static void signals_fork_parent(void) { pthread_mutex_unlock(&lock); }

static void signals_fork_child(void)
{
    int s = forking_slot;
    for (int sig = 1; sig < NSIG; sig++) {
        if (!atomic_load(&taken[sig]))
            continue;
        sigaction(sig, s >= 0 ? &slots[s].act[sig] : &before[sig], NULL);
        atomic_store(&taken[sig], false);
    }
    for (int i = 0; i < MAX_INSTANCES; i++) {
        atomic_store(&slot_ctx[i], NULL);
        atomic_store(&slot_tid[i], 0);
    }
    for (int k = 0; k < MAX_CHILDREN; k++)
        atomic_store(&children[k].pid, 0);
    live = 0;
    pthread_mutex_init(&lock, NULL);
}

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static int fork_errno;
static void signals_fork_install(void) { fork_errno = pthread_atfork(signals_fork_prepare, signals_fork_parent, signals_fork_child); }

int exec_signals_begin(vlcs_ctx *c)
{
    pthread_once(&fork_once, signals_fork_install);
    if (fork_errno != 0) {
        set_error(VLCS_E_SYSTEM, "Error running a program in context '%s': pthread_atfork: %s",
                  c->name, strerror(fork_errno));
        return -1;
    }
    pthread_mutex_lock(&lock);
    int s = -1;
    for (int i = 0; i < MAX_INSTANCES && s < 0; i++)
        if (atomic_load(&slot_tid[i]) == 0)
            s = i;
    if (s < 0) {
        pthread_mutex_unlock(&lock);
        set_error(VLCS_E_LIMIT, "Error running a program in context '%s': %d instances run at "
                  "once already; wait for one to end", c->name, MAX_INSTANCES);
        return -1;
    }
    struct isig *in = &slots[s];
    pid_t tid = my_tid();
    /* As a new process: what the process ignores stays ignored (nohup's
     * SIGHUP), but SIGPIPE and SIGXFSZ, which CPython ignores for itself,
     * take their default, as for a program a shell or subprocess starts:
     * an instance writing to a closed pipe ends by SIGPIPE alone. */
    int rc = 0;
    for (int sig = 1; sig < NSIG; sig++) {
        struct sigaction now = {.sa_handler = SIG_DFL};
        if (atomic_load(&taken[sig]))
            now = before[sig];
        else
            sigaction(sig, NULL, &now);
        bool fresh = sig == SIGPIPE || sig == SIGXFSZ;
        memset(&in->act[sig], 0, sizeof in->act[sig]);
        in->act[sig].sa_handler = now.sa_handler == SIG_IGN && !fresh ? SIG_IGN : SIG_DFL;
        sigemptyset(&in->act[sig].sa_mask);
        if (fresh && now.sa_handler == SIG_IGN && rc == 0)
            rc = take(sig, 0); /* the kernel's SIGPIPE reaches dispatch(), the base's stays ignored */
    }
    for (int k = 0; k < MAX_TIMERS; k++)
        atomic_store(&in->timers[k], -1);
    atomic_store(&in->pending_end, 0);
    atomic_store(&in->chld_kept, 0);
    /* Its alarm, and the retry of an end, signal SIGALRM on its thread. */
    if (rc == 0)
        rc = take(SIGALRM, 0);
    atomic_store(&in->alarm_id, rc == 0 ? thread_timer(tid, SIGALRM, in, &in->alarm_timer) : -1);
    atomic_store(&in->retry_id, rc == 0 ? thread_timer(tid, SIGALRM, in, &in->retry_timer) : -1);
    atomic_store(&slot_ctx[s], c);
    atomic_store_explicit(&slot_tid[s], tid, memory_order_release);
    live++;
    pthread_mutex_unlock(&lock);
    return 0;
}

void exec_signals_end(vlcs_ctx *c)
{
    pthread_mutex_lock(&lock);
    int s = slot_of_ctx(c);
    if (s < 0) {
        pthread_mutex_unlock(&lock);
        return;
    }
    struct isig *in = &slots[s];
    if (atomic_load(&in->alarm_id) >= 0)
        timer_delete(in->alarm_timer);
    if (atomic_load(&in->retry_id) >= 0)
        timer_delete(in->retry_timer);
    atomic_store(&in->alarm_id, -1);
    atomic_store(&in->retry_id, -1);
    /* the program's timers would go on signalling a thread that is gone,
     * or another instance's that has its id */
    for (int k = 0; k < MAX_TIMERS; k++) {
        int id = atomic_exchange(&in->timers[k], -1);
        if (id >= 0)
            syscall(SYS_timer_delete, id);
    }
    for (int k = 0; k < MAX_CHILDREN; k++)
        if (atomic_load(&children[k].pid) > 0 && atomic_load(&children[k].slot) == s)
            atomic_store(&children[k].pid, 0);
    atomic_store(&slot_ctx[s], NULL);
    atomic_store_explicit(&slot_tid[s], 0, memory_order_release);
    if (--live == 0)
        give_back();
    pthread_mutex_unlock(&lock);
}

void exec_signals_child(pid_t pid)
{
    int s = slot_of_tid(my_tid());
    if (s < 0 || pid <= 0)
        return;
    for (int k = 0; k < MAX_CHILDREN; k++) {
        pid_t none = 0;
        /* claimed (-1, which no signal names), then named */
        if (atomic_compare_exchange_strong(&children[k].pid, &none, -1)) {
            atomic_store(&children[k].slot, s);
            atomic_store_explicit(&children[k].pid, pid, memory_order_release);
            return;
        }
    }
}

void exec_signals_child_gone(pid_t pid)
{
    for (int k = 0; k < MAX_CHILDREN; k++) {
        pid_t was = pid;
        if (atomic_compare_exchange_strong(&children[k].pid, &was, 0))
            return;
    }
}

_Atomic int *exec_signals_pending_word(vlcs_ctx *c)
{
    int s = slot_of_ctx(c);
    return s < 0 ? NULL : &slots[s].pending_end;
}

int exec_signals_end_pending(void)
{
    int s = slot_of_tid(my_tid());
    return s < 0 ? 0 : atomic_exchange(&slots[s].pending_end, 0);
}

/* ---- the interposer's calls -------------------------------------------------- */

int exec_sigaction(vlcs_ctx *c, int sig, const struct sigaction *act, struct sigaction *old)
{
    int s = slot_of_ctx(c);
    if (s < 0)
        return 1;
    /* libc's own: SIGKILL and SIGSTOP keep theirs, and the two signals
     * glibc keeps for itself (thread cancellation, setxid) are refused */
    if (sig <= 0 || sig >= NSIG || (sig >= 32 && sig < SIGRTMIN) ||
        (act != NULL && (sig == SIGKILL || sig == SIGSTOP)))
        return -EINVAL;
    pthread_mutex_lock(&lock);
    struct isig *in = &slots[s];
    struct sigaction was = in->act[sig];
    int rc = 0;
    if (act != NULL) {
        rc = take(sig, act->sa_flags & SA_RESTART);
        if (rc == 0)
            in->act[sig] = *act;
    }
    pthread_mutex_unlock(&lock);
    if (rc == 0 && old != NULL)
        *old = was;
    return rc;
}

/* sig to instance s, as the kernel would deliver it to a process of its
 * own.  A default end is taken at once from its main thread (128 + sig:
 * the status it ends with), else on it as soon as it can (a kill from
 * another of its threads). */
static int send_to_instance(int s, int sig)
{
    struct isig *in = &slots[s];
    if (sig == 0)
        return 0;
    if (sig < 0 || sig >= NSIG)
        return -EINVAL;
    struct sigaction a = in->act[sig];
    if (sig != SIGKILL && a.sa_handler == SIG_IGN)
        return 0;
    if (sig == SIGKILL || a.sa_handler == SIG_DFL) {
        if (ignored_by_default(sig) || stops(sig))
            return 0;
        if (atomic_load(&slot_tid[s]) == my_tid())
            return 128 + sig; /* the interposer ends it, as _exit */
        atomic_store(&in->pending_end, sig);
        if (atomic_load(&in->retry_id) < 0)
            return -EAGAIN;
        arm(in->retry_timer, 1);
        return 0;
    }
    pid_t tid = atomic_load(&slot_tid[s]);
    if (tid == 0)
        return -ESRCH;
    return syscall(SYS_tgkill, getpid(), tid, sig) == 0 ? 0 : -errno;
}

int exec_raise(vlcs_ctx *c, int sig)
{
    int s = slot_of_ctx(c);
    return s < 0 ? 1 : send_to_instance(s, sig);
}

int exec_kill(vlcs_ctx *c, pid_t pid, int sig)
{
    int s = slot_of_ctx(c);
    if (s < 0)
        return 1;
    pid_t me = getpid();
    if (pid == me)
        return send_to_instance(s, sig);
    if (pid == 0 || pid == -getpgrp()) {
        /* its process group: its children, then itself */
        for (int k = 0; k < MAX_CHILDREN; k++) {
            pid_t child = atomic_load(&children[k].pid);
            if (child > 0 && atomic_load(&children[k].slot) == s)
                kill(child, sig);
        }
        return send_to_instance(s, sig);
    }
    return 1;
}

int exec_setitimer(vlcs_ctx *c, int which, const struct itimerval *value, struct itimerval *old)
{
    int s = slot_of_ctx(c);
    if (s < 0 || which != ITIMER_REAL)
        return 1;
    struct isig *in = &slots[s];
    if (atomic_load(&in->alarm_id) < 0)
        return 1;
    struct itimerspec now, *was = old != NULL ? &now : NULL;
    if (value == NULL) {
        if (timer_gettime(in->alarm_timer, &now) != 0)
            return -errno;
    } else {
        struct itimerspec want = {
            .it_interval = {value->it_interval.tv_sec, value->it_interval.tv_usec * 1000},
            .it_value = {value->it_value.tv_sec, value->it_value.tv_usec * 1000},
        };
        if (value->it_value.tv_usec < 0 || value->it_value.tv_usec >= 1000000 ||
            value->it_interval.tv_usec < 0 || value->it_interval.tv_usec >= 1000000)
            return -EINVAL;
        if (timer_settime(in->alarm_timer, 0, &want, was) != 0)
            return -errno;
    }
    if (old != NULL)
        *old = (struct itimerval){
            .it_interval = {now.it_interval.tv_sec, now.it_interval.tv_nsec / 1000},
            .it_value = {now.it_value.tv_sec, now.it_value.tv_nsec / 1000},
        };
    return 0;
}

pid_t exec_timer_thread(vlcs_ctx *c)
{
    int s = slot_of_ctx(c);
    return s < 0 ? 0 : atomic_load(&slot_tid[s]);
}

void exec_timer_made(vlcs_ctx *c, int kernel_id)
{
    int s = slot_of_ctx(c);
    if (s < 0)
        return;
    for (int k = 0; k < MAX_TIMERS; k++) {
        int none = -1;
        if (atomic_compare_exchange_strong(&slots[s].timers[k], &none, kernel_id))
            return;
    }
}

/*
 * ip_signal.c - a program's instance has signals of its own.
 *
 * The actions a program sets, the signals it sends itself and its alarm go
 * to libvlcs (../exec_signals.c), which keeps them as the instance's: a
 * process has one action per signal, and instances share the process.
 * signal(), sysv_signal() and killpg() are wrapped too, as libc's call its
 * own sigaction and kill inside, where no interposer sees them.  In a
 * context running no instance each is its libc's, one call later.
 */
#define _GNU_SOURCE
#include "ip.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static const struct vlcs_ip_api *api(void) { return __atomic_load_n(&vlcs_ip, __ATOMIC_ACQUIRE); }

/* rc of an api call: 1 (not an instance's) is passed on as 1; else the
 * call's return, errno set from -rc. */
static int answered(int rc)
{
    if (rc < 0) {
        errno = -rc;
        return -1;
    }
    return rc;
}

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef sighandler_t (*signal_fn)(int, sighandler_t);
typedef int (*kill_fn)(pid_t, int);
typedef int (*raise_fn)(int);
typedef int (*setitimer_fn)(__itimer_which_t, const struct itimerval *, struct itimerval *);
typedef int (*getitimer_fn)(__itimer_which_t, struct itimerval *);
typedef unsigned (*alarm_fn)(unsigned);
typedef int (*timer_create_fn)(clockid_t, struct sigevent *, timer_t *);
typedef int (*setpgid_fn)(pid_t, pid_t);

/* The namespace libc's own, looked up when the interposer is bound: a
 * child forked while another thread held the loader's lock (a program
 * being loaded) would wait for ever on a lookup (dlsym) made after. */
enum { LIBC_SIGACTION, LIBC_SIGNAL, LIBC_SYSV_SIGNAL, LIBC_KILL, LIBC_RAISE, LIBC_SETITIMER, LIBC_GETITIMER, LIBC_ALARM, LIBC_TIMER_CREATE, LIBC_SETPGID, LIBC_COUNT };
static const char *const libc_names[LIBC_COUNT] = {"sigaction", "signal", "sysv_signal", "kill", "raise", "setitimer", "getitimer", "alarm", "timer_create", "setpgid"};
static void *libc_fns[LIBC_COUNT];

IP_HIDDEN void ip_signal_bind(void)
{
    for (int k = 0; k < LIBC_COUNT; k++)
        if (__atomic_load_n(&libc_fns[k], __ATOMIC_RELAXED) == NULL)
            __atomic_store_n(&libc_fns[k], ip_next(libc_names[k]), __ATOMIC_RELAXED);
}

static void *libc_fn(int k)
{
    void *fn = __atomic_load_n(&libc_fns[k], __ATOMIC_RELAXED);
    if (fn == NULL) {
        fn = ip_next(libc_names[k]);
        __atomic_store_n(&libc_fns[k], fn, __ATOMIC_RELAXED);
    }
    return fn;
}

/* 1: libc's to answer */
static int instance_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    const struct vlcs_ip_api *a = api();
    if (a == NULL) /* bound only to a libvlcs of this ABI, which fills every entry */
        return 1;
    return answered(a->sig_action(a->ctx, sig, act, old));
}

IP_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    int rc = instance_sigaction(sig, act, old);
    if (rc != 1)
        return rc;
    return ((sigaction_fn)libc_fn(LIBC_SIGACTION))(sig, act, old);
}

/* signal() as glibc's: BSD semantics (restarting, sig blocked in its
 * handler); sysv_signal(): reset once taken, not blocked. */
static sighandler_t set_handler(int sig, sighandler_t h, int flags, int self_blocked, int *passed)
{
    struct sigaction act, old;
    memset(&act, 0, sizeof act);
    act.sa_handler = h;
    act.sa_flags = flags;
    sigemptyset(&act.sa_mask);
    if (self_blocked && sig > 0 && sig < NSIG)
        sigaddset(&act.sa_mask, sig);
    int rc = h == SIG_ERR ? (errno = EINVAL, -1) : instance_sigaction(sig, &act, &old);
    *passed = rc == 1;
    return rc == 0 ? old.sa_handler : SIG_ERR;
}

IP_EXPORT sighandler_t signal(int sig, sighandler_t h)
{
    int passed;
    sighandler_t r = set_handler(sig, h, SA_RESTART, 1, &passed);
    if (!passed)
        return r;
    return ((signal_fn)libc_fn(LIBC_SIGNAL))(sig, h);
}

IP_EXPORT sighandler_t bsd_signal(int sig, sighandler_t h) { return signal(sig, h); }

IP_EXPORT sighandler_t sysv_signal(int sig, sighandler_t h)
{
    int passed;
    sighandler_t r = set_handler(sig, h, SA_RESETHAND | SA_NODEFER, 0, &passed);
    if (!passed)
        return r;
    return ((signal_fn)libc_fn(LIBC_SYSV_SIGNAL))(sig, h);
}

IP_EXPORT int kill(pid_t pid, int sig)
{
    const struct vlcs_ip_api *a = api();
    if (a != NULL) {
        int rc = answered(a->sig_kill(a->ctx, pid, sig));
        if (rc >= 128)
            a->exit_now(rc);
        if (rc != 1)
            return rc;
    }
    return ((kill_fn)libc_fn(LIBC_KILL))(pid, sig);
}

IP_EXPORT int killpg(pid_t pgrp, int sig)
{
    if (pgrp < 0) {
        errno = EINVAL;
        return -1;
    }
    return kill(-pgrp, sig);
}

IP_EXPORT int raise(int sig)
{
    const struct vlcs_ip_api *a = api();
    if (a != NULL) {
        int rc = answered(a->sig_raise(a->ctx, sig));
        if (rc >= 128)
            a->exit_now(rc);
        if (rc != 1)
            return rc;
    }
    return ((raise_fn)libc_fn(LIBC_RAISE))(sig);
}

IP_EXPORT int gsignal(int sig) { return raise(sig); }

IP_EXPORT int setitimer(__itimer_which_t which, const struct itimerval *value, struct itimerval *old)
{
    const struct vlcs_ip_api *a = api();
    if (a != NULL) {
        int rc = answered(a->sig_setitimer(a->ctx, which, value, old));
        if (rc != 1)
            return rc;
    }
    return ((setitimer_fn)libc_fn(LIBC_SETITIMER))(which, value, old);
}

IP_EXPORT int getitimer(__itimer_which_t which, struct itimerval *value)
{
    const struct vlcs_ip_api *a = api();
    if (a != NULL && value != NULL) {
        int rc = answered(a->sig_setitimer(a->ctx, which, NULL, value));
        if (rc != 1)
            return rc;
    }
    return ((getitimer_fn)libc_fn(LIBC_GETITIMER))(which, value);
}

/* alarm() as the kernel's: the seconds left of the one before, rounded. */
IP_EXPORT unsigned alarm(unsigned seconds)
{
    const struct vlcs_ip_api *a = api();
    if (a != NULL) {
        struct itimerval want = {.it_value = {.tv_sec = seconds}}, old;
        int rc = a->sig_setitimer(a->ctx, ITIMER_REAL, &want, &old);
        if (rc == 0) {
            unsigned left = (unsigned)old.it_value.tv_sec;
            if ((left == 0 && old.it_value.tv_usec > 0) || old.it_value.tv_usec >= 500000)
                left++;
            return left;
        }
    }
    return ((alarm_fn)libc_fn(LIBC_ALARM))(seconds);
}

/* A timer that would signal the process signals the instance's thread. */
IP_EXPORT int timer_create(clockid_t clock, struct sigevent *ev, timer_t *timer)
{
    const struct vlcs_ip_api *a = api();
    pid_t tid = a != NULL ? a->sig_timer_thread(a->ctx) : 0;
    if (tid == 0 || (ev != NULL && ev->sigev_notify != SIGEV_SIGNAL))
        return ((timer_create_fn)libc_fn(LIBC_TIMER_CREATE))(clock, ev, timer);
    struct sigevent to;
    memset(&to, 0, sizeof to);
    to.sigev_notify = SIGEV_THREAD_ID;
    to.sigev_signo = ev != NULL ? ev->sigev_signo : SIGALRM;
    to.sigev_value = ev != NULL ? ev->sigev_value : (union sigval){.sival_int = 0};
    to._sigev_un._tid = tid;
    int rc = ((timer_create_fn)libc_fn(LIBC_TIMER_CREATE))(clock, &to, timer);
    if (rc == 0)
        a->sig_timer_made(a->ctx, (int)(intptr_t)*timer);
    return rc;
}

/* setpgid(0, 0) from an instance would move the whole process into a
 * group of its own (coreutils' timeout does, to signal its group), away
 * from the terminal's foreground: an instance stays in the process's. */
IP_EXPORT int setpgid(pid_t pid, pid_t pgid)
{
    const struct vlcs_ip_api *a = api();
    pid_t me = getpid();
    if ((pid == 0 || pid == me) && (pgid == 0 || pgid == me) && a != NULL &&
        a->sig_timer_thread(a->ctx) != 0)
        return 0;
    return ((setpgid_fn)libc_fn(LIBC_SETPGID))(pid, pgid);
}

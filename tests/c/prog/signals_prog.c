/*
 * signals_prog.c - a program that uses signals as programs do, run as
 * several instances of vlcs exec and as separate processes; what it
 * prints and how it ends must be the same either way.  Instance i
 * (VLCS_INSTANCE) does case i % 6:
 *   0: a SIGUSR1 handler, taken by raise() and by kill(getpid());
 *   1: its own interval timer (setitimer), three SIGALRMs to its handler;
 *   2: alarm() with no handler: it ends by SIGALRM (142);
 *   3: kill(getpid(), SIGTERM) with the default action: 143;
 *   4: SIGUSR2 ignored, raised, and the handler a sigaction hands back;
 *   5: a SIGCHLD handler (SA_SIGINFO) for its own child, and that child's
 *      status.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t got, got_pid;

static void on_signal(int sig) { got += sig == SIGUSR1 || sig == SIGALRM; }

static void on_child(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    if (sig == SIGCHLD)
        got_pid = si->si_pid;
}

int main(void)
{
    const char *n = getenv("VLCS_INSTANCE");
    int i = n ? atoi(n) : 0;
    sigset_t none;
    sigemptyset(&none);
    switch (i % 6) {
    case 0:
        signal(SIGUSR1, on_signal);
        raise(SIGUSR1);
        kill(getpid(), SIGUSR1);
        printf("instance %d: its handler ran %d times\n", i, (int)got);
        return got == 2 ? 0 : 1;
    case 1: {
        signal(SIGALRM, on_signal);
        sigset_t alrm, old;
        sigemptyset(&alrm);
        sigaddset(&alrm, SIGALRM);
        sigprocmask(SIG_BLOCK, &alrm, &old);
        struct itimerval every = {{0, 20000}, {0, 20000}};
        setitimer(ITIMER_REAL, &every, NULL);
        while (got < 3)
            sigsuspend(&old);
        struct itimerval off = {{0, 0}, {0, 0}};
        setitimer(ITIMER_REAL, &off, NULL);
        printf("instance %d: three ticks of its own timer\n", i);
        return 0;
    }
    case 2:
        printf("instance %d: alarm(1) with no handler\n", i);
        fflush(stdout);
        alarm(1);
        for (;;)
            pause();
    case 3:
        printf("instance %d: SIGTERM to itself\n", i);
        fflush(stdout);
        kill(getpid(), SIGTERM);
        puts("not reached");
        return 0;
    case 4: {
        signal(SIGUSR2, SIG_IGN);
        raise(SIGUSR2);
        struct sigaction was;
        sigaction(SIGUSR2, NULL, &was);
        printf("instance %d: SIGUSR2 ignored (%s)\n", i,
               was.sa_handler == SIG_IGN ? "SIG_IGN handed back" : "another action");
        return 0;
    }
    case 5: {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_child;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGCHLD, &sa, NULL);
        sigset_t chld, old;
        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        sigprocmask(SIG_BLOCK, &chld, &old);
        pid_t pid = fork();
        if (pid == 0)
            _exit(7);
        while (got_pid == 0)
            sigsuspend(&old);
        int st = 0;
        waitpid(pid, &st, 0);
        printf("instance %d: SIGCHLD from its child, %s, which exited %d\n", i,
               got_pid == pid ? "named" : "another", WEXITSTATUS(st));
        return 0;
    }
    }
    return 0;
}

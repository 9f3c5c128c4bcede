/* A library with bugs, as a buggy or thread-unsafe C library has them: each
 * function faults its own way (test_fault). */
#undef NDEBUG /* its assert is one of the faults */
#include <assert.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

static int calls; /* the copy's own state: counts crash_ok's calls */

void *crash_ok(void *arg)
{
    calls++;
    return (void *)((long)arg * 2);
}

int crash_calls(void) { return calls; }

void *crash_null(void *arg)
{
    (void)arg;
    volatile int *p = NULL;
    return (void *)(long)*p;
}

void *crash_divide(void *arg)
{
    volatile int zero = (int)(long)arg, n = 7; /* volatile: no division is folded away */
    return (void *)(long)(n / zero);
}

void *crash_abort(void *arg)
{
    (void)arg;
    abort();
}

void *crash_double_free(void *arg)
{
    (void)arg;
    char *volatile p = malloc(64);
    free(p);
    free(p);
    return NULL;
}

void *crash_assert(void *arg)
{
    assert(arg != NULL && "crash_assert needs an argument");
    return arg;
}

/* in libc's strlen: the namespace's own libc, or the base's in copy mode */
void *crash_in_libc(void *arg)
{
    (void)arg;
    const char *volatile s = NULL;
    return (void *)strlen(s);
}

static long deeper(long n)
{
    volatile char pad[512];
    pad[0] = (char)n;
    return deeper(n + 1) + pad[0];
}

void *crash_overflow(void *arg) { return (void *)deeper((long)arg); }

/* a handler of its own for SIGSEGV, as a runtime with a collector has: it
 * gets its faults (the process's other handler is put back after) */
static volatile sig_atomic_t handled;
static struct sigaction before;

static void own_handler(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)uc;
    handled = 1;
    /* the faulting access was to this page: map it, and the access is retried */
    (void)si;
}

static char *volatile guarded_page;

#include <sys/mman.h>
static void on_fault_map(int sig, siginfo_t *si, void *uc)
{
    own_handler(sig, si, uc);
    mprotect(guarded_page, 4096, PROT_READ | PROT_WRITE);
}

void *crash_handled_by_itself(void *arg)
{
    (void)arg;
    guarded_page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct sigaction sa = {.sa_sigaction = on_fault_map, .sa_flags = SA_SIGINFO};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &before);
    guarded_page[0] = 7; /* faults once; its handler makes the page writable */
    int ok = handled && guarded_page[0] == 7;
    sigaction(SIGSEGV, &before, NULL);
    munmap(guarded_page, 4096);
    return (void *)(long)ok;
}

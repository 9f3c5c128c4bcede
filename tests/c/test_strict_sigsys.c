/* An application that installs its own SIGSYS handler after strict mode is
 * on receives vlcs's traps, as vlcs.h says, and the trapped syscall of
 * context code is then not answered.  Filters cannot be undone: a test
 * program of its own. */
#define _GNU_SOURCE
#include "check.h"

#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <unistd.h>

typedef int (*int_fn)(void);

static volatile sig_atomic_t traps, last_code, last_errno, last_nr;
static void *volatile last_addr;

static void app_handler(int sig, siginfo_t *info, void *uc)
{
    (void)sig;
    (void)uc;
    traps++;
    last_code = info->si_code;
    last_errno = info->si_errno;
    last_nr = info->si_syscall;
    last_addr = info->si_call_addr;
}

int main(void)
{
    if (get_nprocs() < 2) {
        printf("SKIP: needs 2 CPUs\n");
        return 77;
    }
    vlcs_opts o = {.size = sizeof o, .strict = 1};
    if (vlcs_init_opts(&o) != 0) {
        printf("SKIP: strict mode unavailable here: %s\n", vlcs_error());
        return 77;
    }
    vlcs_ctx *c = vlcs_ctx_create("strict");
    CHECK_EQ(0, vlcs_ctx_set_cpus(c, "1"), "set");
    void *lib = must_load(c, RAWSYS_LIB);
    int_fn inline_count = SYM(lib, int_fn, "inline_affinity_count");
    CHECK_EQ(1, inline_count(), "vlcs answers while its handler is installed");

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = app_handler;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    CHECK_EQ(0, sigaction(SIGSYS, &sa, NULL), "the application's handler, after vlcs's");

    int got = inline_count();
    CHECK_EQ(1, traps, "the application's handler received the trap");
    CHECK_EQ(1, last_code, "si_code is SYS_SECCOMP");
    CHECK_EQ(0x766c, last_errno, "si_errno carries vlcs's filter data");
    CHECK_EQ(SYS_sched_getaffinity, last_nr, "the trapped syscall");
    CHECK((char *)last_addr >= (char *)inline_count &&
              (char *)last_addr < (char *)inline_count + 4096,
          "the trap came from the context's code (%p, function at %p)", last_addr,
          (void *)inline_count);
    /* The kernel skipped the syscall and no one answered it: the CPU set
     * the context's code asked for stays empty. */
    CHECK_EQ(0, got, "the trapped syscall failed: no CPUs read");

    /* Code outside contexts is still never trapped. */
    cpu_set_t s;
    CPU_ZERO(&s);
    CHECK(syscall(SYS_sched_getaffinity, 0, sizeof s, &s) > 0, "base syscall");
    CHECK_EQ(get_nprocs(), CPU_COUNT(&s), "the base sees the machine");
    CHECK_EQ(1, traps, "and raised no trap");
    PASS("strict mode with a SIGSYS handler installed later");
    return 0;
}

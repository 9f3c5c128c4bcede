/* Where seccomp is refused (here: by an existing filter that answers EPERM
 * to seccomp(2), as some container policies do), strict mode fails with a
 * sentence saying so, and contexts keep working at the symbol level. */
#define _GNU_SOURCE
#include "check.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <unistd.h>

typedef int (*int_fn)(void);

int main(void)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_seccomp, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {4, f};
    CHECK_EQ(0, prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs");
    CHECK_EQ(0, prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog), "the container's filter");

    vlcs_opts o = {.size = sizeof o, .strict = 1};
    CHECK_ERR(vlcs_init_opts(&o), "seccomp is not allowed here");
    CHECK_CODE(VLCS_E_UNSUPPORTED, "seccomp refused");
    CHECK(strstr(vlcs_error(), "contexts keep working") != NULL, "says what still works");
    CHECK_EQ(0, vlcs_strict_active(), "strict mode is off");

    vlcs_ctx *c = vlcs_ctx_create("c");
    CHECK_EQ(0, vlcs_ctx_set_cpus(c, "0"), "set");
    void *lib = must_load(c, PROBE_LIB);
    CHECK_EQ(1, SYM(lib, int_fn, "probe_get_nprocs")(), "the symbol layer works");
    PASS("strict mode unavailable");
    return 0;
}

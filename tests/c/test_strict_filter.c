/* Strict mode's seccomp program, run in user space: strict_filter.c builds
 * it into a buffer, a small interpreter below (only the instructions the
 * generator emits) runs it over synthetic seccomp_data, and each verdict is
 * checked against the ranges: TRAP inside them for the five syscalls,
 * ALLOW everywhere else, at the edges and across 4 GiB boundaries too. */
#define _GNU_SOURCE
#include "check.h"
#include "strict_filter.h"

#if defined(__x86_64__)
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>

#define TRAP (SECCOMP_RET_TRAP | STRICT_TRAP_DATA)
#define ALLOW SECCOMP_RET_ALLOW

static uint32_t run(const struct sock_filter *f, size_t n, const struct seccomp_data *d)
{
    uint32_t a = 0;
    size_t pc = 0;
    while (pc < n) {
        const struct sock_filter *i = &f[pc];
        switch (i->code) {
        case BPF_LD | BPF_W | BPF_ABS:
            CHECK(i->k % 4 == 0 && i->k + 4 <= sizeof *d, "load at %u inside seccomp_data", i->k);
            memcpy(&a, (const char *)d + i->k, 4);
            pc++;
            break;
        case BPF_JMP | BPF_JEQ | BPF_K:
            pc += 1 + (a == i->k ? i->jt : i->jf);
            break;
        case BPF_JMP | BPF_JGE | BPF_K:
            pc += 1 + (a >= i->k ? i->jt : i->jf);
            break;
        case BPF_JMP | BPF_JGT | BPF_K:
            pc += 1 + (a > i->k ? i->jt : i->jf);
            break;
        case BPF_JMP | BPF_JSET | BPF_K:
            pc += 1 + ((a & i->k) ? i->jt : i->jf);
            break;
        case BPF_RET | BPF_K:
            return i->k;
        default:
            FAIL("instruction %zu: opcode 0x%x the generator should not emit", pc, i->code);
        }
    }
    FAIL("the program ran past its end (%zu instructions)", n);
}

static const int trapped[] = {SYS_sched_getaffinity, SYS_sched_setaffinity, SYS_open, SYS_openat,
                              SYS_openat2};
static const int untouched[] = {SYS_read, SYS_close, SYS_getpid, SYS_seccomp, SYS_openat2 + 1};

static bool inside(const struct code_range *r, size_t n, uint64_t ip)
{
    for (size_t i = 0; i < n; i++)
        if (ip >= r[i].start && ip < r[i].end)
            return true;
    return false;
}

/* Every syscall at ip, on both architectures, against the reference. */
static void check_ip(const struct sock_filter *f, size_t k, const struct code_range *r, size_t n,
                     uint64_t ip)
{
    struct seccomp_data d;
    memset(&d, 0, sizeof d);
    d.instruction_pointer = ip;
    for (size_t i = 0; i < sizeof trapped / sizeof trapped[0]; i++) {
        d.nr = trapped[i];
        d.arch = AUDIT_ARCH_X86_64;
        uint32_t want = inside(r, n, ip) ? TRAP : ALLOW, got = run(f, k, &d);
        if (want != got)
            FAIL("syscall %d at ip 0x%llx: expected 0x%x, got 0x%x", d.nr,
                 (unsigned long long)ip, want, got);
        d.arch = AUDIT_ARCH_I386; /* another ABI's numbers mean other syscalls */
        CHECK_EQ(ALLOW, run(f, k, &d), "i386 syscalls are never trapped");
    }
    d.arch = AUDIT_ARCH_X86_64;
    for (size_t i = 0; i < sizeof untouched / sizeof untouched[0]; i++) {
        d.nr = untouched[i];
        CHECK_EQ(ALLOW, run(f, k, &d), "other syscalls are never trapped");
    }
}

static size_t build(const struct code_range *r, size_t n, struct sock_filter *f, size_t cap)
{
    size_t want = strict_filter_size(r, n);
    CHECK(want <= cap, "test buffer");
    CHECK_EQ(0, strict_filter_build(r, n, f, want - 1), "a buffer one short is refused");
    size_t k = strict_filter_build(r, n, f, cap);
    CHECK_EQ(want, k, "the program has the size announced");
    return k;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

int main(void)
{
    static struct sock_filter f[4096];
    /* No code yet: the program strict mode starts with allows everything. */
    size_t k = build(NULL, 0, f, 4096);
    CHECK_EQ(11, k, "header and the final ALLOW");
    check_ip(f, k, NULL, 0, 0x7f0000001000ull);

    const struct code_range r[] = {
        {0x400000ull, 0x401000ull},                /* low, one piece */
        {0x7f0000001000ull, 0x7f0000003000ull},    /* high word 0x7f */
        {0x7f00fffff000ull, 0x7f0100001000ull},    /* crosses a 4 GiB boundary */
        {0x7ffff0000000ull, 0x800000000000ull},    /* ends on a boundary */
        {0xfffffffffffff000ull, UINT64_MAX},       /* at the top of the space */
    };
    size_t n = sizeof r / sizeof r[0];
    k = build(r, n, f, 4096);
    CHECK_EQ(11 + 6 * 6, k, "six pieces: one range split in two");
    for (size_t i = 0; i < n; i++) {
        uint64_t s = r[i].start, e = r[i].end;
        uint64_t probes[] = {s, s + 1, s + (e - s) / 2, e - 1, e, s - 1,
                             (s & 0xffffffffull) | 0x100000000000ull, /* same low word */
                             s ^ (1ull << 32)};
        for (size_t p = 0; p < sizeof probes / sizeof probes[0]; p++)
            check_ip(f, k, r, n, probes[p]);
    }
    /* The split: both sides of the boundary inside, neighbours outside. */
    check_ip(f, k, r, n, 0x7f00ffffffffull);
    check_ip(f, k, r, n, 0x7f0100000000ull);
    check_ip(f, k, r, n, 0x7f0100000fffull);
    check_ip(f, k, r, n, 0x7f0100001000ull);
    check_ip(f, k, r, n, 0x7fffffffffffull);
    check_ip(f, k, r, n, 0);

    /* Many random ranges, some split, probed near their edges and at random. */
    struct code_range many[200];
    for (int round = 0; round < 20; round++) {
        size_t m = 1 + next() % 200;
        for (size_t i = 0; i < m; i++) {
            uint64_t s = next() & 0x7ffffffff000ull, len = 1 + next() % (1ull << (next() % 34));
            many[i] = (struct code_range){s, s + len};
        }
        k = build(many, m, f, 4096);
        for (size_t i = 0; i < m; i++) {
            check_ip(f, k, many, m, many[i].start);
            check_ip(f, k, many, m, many[i].start - 1);
            check_ip(f, k, many, m, many[i].end);
            check_ip(f, k, many, m, many[i].end - 1);
        }
        for (int i = 0; i < 200; i++)
            check_ip(f, k, many, m, next() & 0x7fffffffffffull);
    }
    PASS("strict filter");
    return 0;
}
#else
int main(void)
{
    printf("SKIP: strict mode's filter is built for x86_64 only\n");
    return 77;
}
#endif

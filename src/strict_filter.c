/*
 * strict_filter.c - the seccomp program of strict mode (see strict.c): which
 * syscalls trap, and the split of the context's code ranges into BPF jumps.
 *
 * Classic BPF compares 32-bit words, and seccomp_data holds the 64-bit
 * instruction pointer as two of them.  Each range is therefore split at
 * 4 GiB boundaries; a piece is then "high word equal, low word within".
 */
#define _GNU_SOURCE
#include "strict_filter.h"

#if defined(__x86_64__)
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>

#define LD_W(off) ((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (off)))
#define JUMP(op, val, jt, jf) ((struct sock_filter)BPF_JUMP(BPF_JMP | (op) | BPF_K, (val), (jt), (jf)))
#define RET(val) ((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, (val)))
#define IP_LO offsetof(struct seccomp_data, instruction_pointer)
#define IP_HI (offsetof(struct seccomp_data, instruction_pointer) + 4)

enum { HEAD = 10, PER_PIECE = 6, TAIL = 1 };

/* The end of the piece of [s, end) that starts at s: the last address
 * before the next 4 GiB boundary, or end - 1. */
static uint64_t piece_last(uint64_t s, uint64_t end)
{
    uint64_t boundary = (s | 0xffffffffull) + 1; /* 0 past the top of the address space */
    return boundary != 0 && end > boundary ? boundary - 1 : end - 1;
}

size_t strict_filter_size(const struct code_range *r, size_t n)
{
    size_t k = HEAD + TAIL;
    for (size_t i = 0; i < n; i++)
        for (uint64_t s = r[i].start; s < r[i].end;) {
            uint64_t last = piece_last(s, r[i].end);
            k += PER_PIECE;
            if (last == UINT64_MAX)
                break;
            s = last + 1;
        }
    return k;
}

size_t strict_filter_build(const struct code_range *r, size_t n, struct sock_filter *f, size_t cap)
{
    if (cap < strict_filter_size(r, n))
        return 0;
    size_t k = 0;
    f[k++] = LD_W(offsetof(struct seccomp_data, arch));
    f[k++] = JUMP(BPF_JEQ, AUDIT_ARCH_X86_64, 1, 0);
    f[k++] = RET(SECCOMP_RET_ALLOW);
    f[k++] = LD_W(offsetof(struct seccomp_data, nr));
    f[k++] = JUMP(BPF_JEQ, SYS_sched_getaffinity, 5, 0);
    f[k++] = JUMP(BPF_JEQ, SYS_sched_setaffinity, 4, 0);
    f[k++] = JUMP(BPF_JEQ, SYS_open, 3, 0);
    f[k++] = JUMP(BPF_JEQ, SYS_openat, 2, 0);
    f[k++] = JUMP(BPF_JEQ, SYS_openat2, 1, 0);
    f[k++] = RET(SECCOMP_RET_ALLOW);
    for (size_t i = 0; i < n; i++) {
        for (uint64_t s = r[i].start; s < r[i].end;) {
            uint64_t last = piece_last(s, r[i].end);
            /* A miss at any step skips to the next piece. */
            f[k++] = LD_W(IP_HI);
            f[k++] = JUMP(BPF_JEQ, (uint32_t)(s >> 32), 0, 4);
            f[k++] = LD_W(IP_LO);
            f[k++] = JUMP(BPF_JGE, (uint32_t)s, 0, 2);
            f[k++] = JUMP(BPF_JGT, (uint32_t)last, 1, 0);
            f[k++] = RET(SECCOMP_RET_TRAP | STRICT_TRAP_DATA);
            if (last == UINT64_MAX)
                break;
            s = last + 1;
        }
    }
    f[k++] = RET(SECCOMP_RET_ALLOW);
    return k;
}
#else
size_t strict_filter_size(const struct code_range *r, size_t n)
{
    (void)r;
    (void)n;
    return 0;
}
size_t strict_filter_build(const struct code_range *r, size_t n, struct sock_filter *out, size_t cap)
{
    (void)r;
    (void)n;
    (void)out;
    (void)cap;
    return 0;
}
#endif

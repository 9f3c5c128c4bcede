/*
 * view.c - the machine as code inside a context sees it: its CPUs, and the
 * files that list CPUs, forged in memory; a change of its CPUs taking effect
 * (its view switched, its member threads moved).
 */
#include "common.h"
#include "view.h"
#include "thread_state.h"
#include "context.h"
#include "cpuset.h"
#include "rawsys.h"
#include "registry.h"
#include "thread.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- a context's CPU set: one view per set it has had ----------------------- */

struct cpuview *view_new(const vmask *m, struct cpuview *older)
{
    struct cpuview *v = calloc(1, sizeof *v);
    if (v == NULL)
        return NULL;
    v->mask = *m;
    v->count = mask_count(m);
    mask_format(m, v->list, sizeof v->list);
    v->older = older;
    return v;
}

int ctx_switch_view(vlcs_ctx *c, const vmask *m)
{
    if (mask_eq(&ctx_view(c)->mask, m))
        return 0;
    /* A set the context had before gets its old view back: a program that
     * alternates between sets (elastic lending, a tuner) makes two views,
     * not one per change. */
    struct cpuview *v = c->views;
    while (v != NULL && !mask_eq(&v->mask, m))
        v = v->older;
    if (v == NULL) {
        if ((v = view_new(m, c->views)) == NULL)
            return -1;
        c->views = v;
    }
    atomic_store_explicit(&c->view, v, memory_order_release);
    threads_move(c, m);
    return 0;
}

/* ---- the view's answers ------------------------------------------------------ */

void view_filter_mask(vlcs_ctx *c, size_t size, cpu_set_t *set)
{
    const struct cpuview *v = ctx_view(c);
    size_t n = size / sizeof(uint64_t), i;
    uint64_t *w = (uint64_t *)set, any = 0;
    for (i = 0; i < n; i++) {
        w[i] &= i < MASK_WORDS ? v->mask.w[i] : 0;
        any |= w[i];
    }
    if (!any) /* a thread of the base calling in: it sees the whole context */
        mask_to_cpuset(&v->mask, size, set);
}

int view_clamp_mask(vlcs_ctx *c, size_t size, const cpu_set_t *in, size_t outsize,
                    cpu_set_t *out)
{
    const struct cpuview *v = ctx_view(c);
    vmask m;
    mask_from_cpuset(&m, size, in);
    uint64_t any = 0;
    for (int i = 0; i < MASK_WORDS; i++)
        any |= (m.w[i] &= v->mask.w[i]);
    if (!any)
        return -1;
    mask_to_cpuset(&m, outsize, out);
    return 0;
}

/* Whether the thread's last read was by c's code, with the thread in the
 * same place among contexts as now. */
static bool read_still_holds(const struct tstate *ts, vlcs_ctx *c)
{
    return ts->read.ctx == c && ts->read.depth == ts->depth && ts->read.in == effective(ts);
}

void view_filter_self(vlcs_ctx *c, size_t size, cpu_set_t *set)
{
    struct tstate *ts = tstate();
    vmask got;
    mask_from_cpuset(&got, size, set);
    /* In strict mode a libc wrapper's answer was filtered once already, by
     * the trap: what the kernel said is the record's. */
    if (!read_still_holds(ts, c) || !mask_eq(&got, &ts->read.seen))
        ts->read.real = got;
    view_filter_mask(c, size, set);
    mask_from_cpuset(&ts->read.seen, size, set);
    ts->read.ctx = c;
    ts->read.in = effective(ts);
    ts->read.depth = ts->depth;
}

int view_clamp_self(vlcs_ctx *c, size_t size, const cpu_set_t *in, size_t outsize,
                    cpu_set_t *out)
{
    struct tstate *ts = tstate();
    if (read_still_holds(ts, c)) {
        vmask m;
        mask_from_cpuset(&m, size, in);
        /* real: in strict mode the wrapper's restored mask reaches the trap */
        if (mask_eq(&m, &ts->read.seen) || mask_eq(&m, &ts->read.real)) {
            mask_to_cpuset(&ts->read.real, outsize, out);
            return 0;
        }
    }
    return view_clamp_mask(c, size, in, outsize, out);
}

long view_ncpus(vlcs_ctx *c) { return ctx_view(c)->count; }

/* ---- forged files --------------------------------------------------------- */

/* "/proc/self/status", "/proc/thread-self/status", "/proc/<pid>/status",
 * "/proc/<pid or self>/task/<tid>/status": the caller's own process. */
static bool own_status_path(const char *p)
{
    p += 6; /* "/proc/" */
    if (strncmp(p, "self/", 5) == 0)
        p += 5;
    else if (strncmp(p, "thread-self/", 12) == 0)
        return strcmp(p + 12, "status") == 0;
    else {
        char *end;
        long pid = strtol(p, &end, 10);
        if (end == p || *end != '/' || pid != getpid())
            return false;
        p = end + 1;
    }
    if (strncmp(p, "task/", 5) == 0) {
        char *end;
        strtol(p + 5, &end, 10);
        if (end == p + 5 || *end != '/')
            return false;
        p = end + 1;
    }
    return strcmp(p, "status") == 0;
}

/* Buffers come from mmap, not malloc: strict mode forges files inside a
 * SIGSYS handler, where malloc is not safe to call. */
static void *buf_alloc(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void buf_free(void *p, size_t size)
{
    if (p != NULL)
        munmap(p, size);
}

void view_free_forged(struct cpuview *v)
{
    struct forged_text *info = __atomic_load_n(&v->cpuinfo, __ATOMIC_ACQUIRE);
    if (info != NULL)
        buf_free(info, info->cap);
}

/* Whole content of a real file into an mmap'd buffer of *cap bytes,
 * bypassing every interposer and every trap. */
static char *slurp(const char *path, size_t *len, size_t *cap)
{
    int fd = (int)raw_syscall(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_CLOEXEC, 0, 0, 0);
    if (fd < 0) {
        errno = -fd;
        return NULL;
    }
    size_t n = 0;
    *cap = 1 << 16;
    char *buf = buf_alloc(*cap);
    while (buf != NULL) {
        if (n + 1 >= *cap) {
            char *b = mremap(buf, *cap, *cap * 2, MREMAP_MAYMOVE);
            if (b == MAP_FAILED) {
                buf_free(buf, *cap);
                buf = NULL;
                break;
            }
            buf = b;
            *cap *= 2;
        }
        ssize_t r = read(fd, buf + n, *cap - n - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            buf_free(buf, *cap);
            buf = NULL;
            break;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    int e = errno;
    close(fd);
    errno = e;
    if (buf) {
        buf[n] = '\0';
        *len = n;
    }
    return buf;
}

/* Keep the blocks of /proc/cpuinfo whose "processor : N" is in the mask;
 * CPU ids stay real. */
static struct forged_text *filter_cpuinfo(const vmask *m)
{
    size_t n, incap;
    char *in = slurp("/proc/cpuinfo", &n, &incap);
    if (in == NULL)
        return NULL;
    struct forged_text *out = buf_alloc(sizeof *out + n + 1);
    if (out == NULL) {
        buf_free(in, incap);
        return NULL;
    }
    out->cap = sizeof *out + n + 1;
    char *o = out->text;
    for (char *blk = in; *blk;) {
        char *end = strstr(blk, "\n\n");
        end = end ? end + 2 : blk + strlen(blk);
        int cpu = -1;
        if (sscanf(blk, "processor : %d", &cpu) != 1)
            sscanf(blk, "processor\t: %d", &cpu);
        if (cpu >= 0 && cpu < VLCS_MAX_CPUS && ((m->w[cpu / 64] >> (cpu % 64)) & 1)) {
            memcpy(o, blk, (size_t)(end - blk));
            o += end - blk;
        }
        blk = end;
    }
    *o = '\0';
    out->len = (size_t)(o - out->text);
    buf_free(in, incap);
    return out;
}

/* The kernel's "%*pb" format: hex in comma-separated 32-bit groups, as many
 * digits as the real line had. */
static void format_hexmask(const vmask *m, int digits, char *out)
{
    int pos = 0;
    for (int d = digits - 1; d >= 0; d--) {
        int bit = d * 4;
        unsigned nib = bit < VLCS_MAX_CPUS ? (unsigned)(m->w[bit / 64] >> (bit % 64)) & 0xf : 0;
        out[pos++] = "0123456789abcdef"[nib];
        if (d > 0 && d % 8 == 0)
            out[pos++] = ',';
    }
    out[pos] = '\0';
}

static char *forge_status(vlcs_ctx *c, const char *path, size_t *len, size_t *outcap)
{
    size_t n, incap;
    char *in = slurp(path, &n, &incap);
    if (in == NULL)
        return NULL;
    vmask m;
    cpu_set_t *set = (cpu_set_t *)&m;
    mask_get_thread(0, &m);
    view_filter_mask(c, sizeof m, set);
    char list[sizeof ctx_view(c)->list];
    mask_format(&m, list, sizeof list);
    size_t cap = n + 2 * VLCS_MAX_CPUS + 64;
    char *out = buf_alloc(cap), *o = out;
    if (out == NULL) {
        buf_free(in, incap);
        return NULL;
    }
    *outcap = cap;
    for (char *line = in; *line;) {
        char *nl = strchr(line, '\n');
        char *end = nl ? nl + 1 : line + strlen(line);
        if (strncmp(line, "Cpus_allowed:\t", 14) == 0) {
            int digits = 0;
            for (char *p = line + 14; p < end; p++)
                digits += (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f');
            char hex[VLCS_MAX_CPUS / 4 + VLCS_MAX_CPUS / 32 + 1];
            format_hexmask(&m, digits < VLCS_MAX_CPUS / 4 ? digits : VLCS_MAX_CPUS / 4, hex);
            o += sprintf(o, "Cpus_allowed:\t%s\n", hex);
        } else if (strncmp(line, "Cpus_allowed_list:\t", 19) == 0) {
            o += sprintf(o, "Cpus_allowed_list:\t%s\n", list);
        } else {
            memcpy(o, line, (size_t)(end - line));
            o += end - line;
        }
        line = end;
    }
    *o = '\0';
    *len = (size_t)(o - out);
    buf_free(in, incap);
    return out;
}

static int memfd_with(const char *name, const char *data, size_t len, int flags)
{
    int fd = memfd_create(name, (flags & O_CLOEXEC) ? MFD_CLOEXEC : 0);
    if (fd < 0)
        return -1;
    for (size_t off = 0; off < len;) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        off += (size_t)w;
    }
    lseek(fd, 0, SEEK_SET);
    return fd;
}

/* ---- the table: one row per forged file --------------------------------- */

/* Each forge returns a file descriptor with the context's text, or -1 with
 * errno set. */
static int forge_cpulist(vlcs_ctx *c, const char *path, int flags)
{
    (void)path;
    struct cpuview *v = ctx_view(c);
    char buf[sizeof v->list + 2];
    int n = snprintf(buf, sizeof buf, "%s\n", v->list);
    return memfd_with("vlcs-cpulist", buf, (size_t)n, flags);
}

static int forge_cpuinfo(vlcs_ctx *c, const char *path, int flags)
{
    (void)path;
    struct cpuview *v = ctx_view(c);
    /* Built once per CPU set: the model, flags and topology it lists do
     * not change (only "cpu MHz" goes stale). */
    struct forged_text *info = __atomic_load_n(&v->cpuinfo, __ATOMIC_ACQUIRE);
    if (info == NULL) {
        struct forged_text *fresh = filter_cpuinfo(&v->mask), *expected = NULL;
        if (fresh == NULL)
            return -1;
        if (__atomic_compare_exchange_n(&v->cpuinfo, &expected, fresh, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE))
            info = fresh;
        else {
            buf_free(fresh, fresh->cap); /* another thread built it first */
            info = expected;
        }
    }
    return memfd_with("vlcs-cpuinfo", info->text, info->len, flags);
}

static int forge_own_status(vlcs_ctx *c, const char *path, int flags)
{
    size_t len, cap;
    char *status = forge_status(c, path, &len, &cap);
    if (status == NULL)
        return -1;
    int fd = memfd_with("vlcs-status", status, len, flags);
    buf_free(status, cap);
    return fd;
}

/* Every file a context forges, for every door: the interposer's open family
 * (its cheap test reads the prefixes through the ABI table), strict mode's
 * trap, and Python's open() (vlcs_view_file).  A new forged file is one row.
 * `match` NULL: the path is the prefix itself. */
static const struct forged_file {
    const char *prefix;
    bool (*match)(const char *path);
    int (*forge)(vlcs_ctx *c, const char *path, int flags);
    const char *example;
} forged_files[] = {
    {"/proc/cpuinfo", NULL, forge_cpuinfo, "/proc/cpuinfo"},
    {"/proc/", own_status_path, forge_own_status, "/proc/self/status"},
    {"/sys/devices/system/cpu/online", NULL, forge_cpulist, "/sys/devices/system/cpu/online"},
    {"/sys/devices/system/cpu/present", NULL, forge_cpulist, "/sys/devices/system/cpu/present"},
    {"/sys/devices/system/cpu/possible", NULL, forge_cpulist, "/sys/devices/system/cpu/possible"},
};

#define NFORGED (sizeof forged_files / sizeof *forged_files)

/* The rows' prefixes, NULL-terminated, for the interposer's cheap test. */
static const char *prefix_list[NFORGED + 1];
static pthread_once_t prefix_once = PTHREAD_ONCE_INIT;

static void fill_prefixes(void)
{
    for (size_t i = 0; i < NFORGED; i++)
        prefix_list[i] = forged_files[i].prefix;
    prefix_list[NFORGED] = NULL;
}

const char *const *view_forged_prefixes(void)
{
    pthread_once(&prefix_once, fill_prefixes);
    return prefix_list;
}

int view_open_forged(vlcs_ctx *c, int dirfd, const char *path, int flags)
{
    (void)dirfd; /* only absolute paths are forged */
    if ((flags & O_ACCMODE) != O_RDONLY)
        return -2; /* writers get the real file (and the kernel's answer) */
    for (size_t i = 0; i < NFORGED; i++) {
        const struct forged_file *f = &forged_files[i];
        bool hit = f->match != NULL ? strncmp(path, f->prefix, strlen(f->prefix)) == 0 && f->match(path)
                                    : strcmp(path, f->prefix) == 0;
        if (hit)
            return f->forge(c, path, flags);
    }
    return -2;
}

VLCS_API const char *vlcs_view_file(unsigned long i, const char **example)
{
    if (i >= NFORGED)
        return NULL;
    if (example != NULL)
        *example = forged_files[i].example;
    return forged_files[i].prefix;
}

VLCS_API int vlcs_view_open(vlcs_ctx *h, const char *path, int flags)
{
    if (h == NULL || path == NULL || path[0] != '/')
        return -2;
    vlcs_ctx *c = ctx_get(h, "opening a forged file");
    if (c == NULL) {
        errno = ESTALE;
        return -1;
    }
    return view_open_forged(c, AT_FDCWD, path, flags);
}

/*
 * room.c - the per-process resources that contexts use up, counted.
 *
 * A process has one table of memory maps (the kernel's vm.max_map_count),
 * one of file descriptors (RLIMIT_NOFILE), of threads, of linker
 * namespaces and of thread-specific data keys, and a thousand contexts
 * reach their ends: about 21 maps per context holding one small library
 * with libgomp in copy mode, and a descriptor per copied library.  A
 * dlopen that finds no map left fails cleanly, but a library that finds
 * none at run time (a thread's stack, a buffer) may end the process, and
 * so may the program's next open().  So a load that would leave the
 * process less than a reserve is refused before anything is mapped, with
 * the resource and the remedy named (room_for_load), and vlcs_room says
 * how much of each is in use.
 *
 * Counting maps means reading /proc/self/maps, a line per map (tens of
 * milliseconds at 30,000), so a load counts again only when the last count
 * and what loads promised since (counted high) leave less than twice the
 * reserve (what the program opened or mapped itself is in no promise), when the
 * address space grew by more pages than the limit has maps since (the
 * program's own mappings: a page or more each), or every RECOUNT_EVERY
 * loads; otherwise a check is arithmetic and a read of /proc/self/statm.
 * Descriptors are counted the same way, without the address space's hint.
 */
#include "common.h"
#include "room.h"
#include "context.h"
#include "error.h"
#include "keys.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* Maps per object: its segments, the split of its read-only-after-
 * relocation part, its zeroed data; measured about 5 (3,118 contexts of
 * 4 objects filled 65,523 maps), counted high. */
enum { MAPS_PER_OBJECT = 8, RECOUNT_EVERY = 64, NAMESPACES = 15 };

/* Lines of a /proc file, or -1. */
static long count_lines(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    enum { CHUNK = 1 << 16 };
    char *buf = malloc(CHUNK); /* not on the stack: loads run on small stacks */
    long lines = buf ? 0 : -1;
    ssize_t got;
    while (buf != NULL && (got = read(fd, buf, CHUNK)) != 0) {
        if (got < 0) {
            if (errno == EINTR)
                continue;
            lines = -1;
            break;
        }
        for (char *p = buf, *end = buf + got; (p = memchr(p, '\n', (size_t)(end - p))) != NULL;
             p++)
            lines++;
    }
    free(buf);
    close(fd);
    return lines;
}

/* The process's open descriptors, or -1. */
static long count_descriptors(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL)
        return -1;
    long n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1; /* the directory's own */
}

/* The number a file holds, ULONG_MAX for "max", 0 when unreadable. */
static unsigned long file_number(const char *path)
{
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return 0;
    char word[32] = "";
    int got = fscanf(f, "%31s", word);
    fclose(f);
    if (got != 1)
        return 0;
    if (strcmp(word, "max") == 0)
        return ULONG_MAX;
    return strtoul(word, NULL, 10);
}

static unsigned long max_maps(void)
{
    unsigned long n = file_number("/proc/sys/vm/max_map_count");
    return n ? n : 65530; /* the kernel's default */
}

static unsigned long max_descriptors(unsigned long *hard)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) != 0)
        r.rlim_cur = r.rlim_max = RLIM_INFINITY;
    if (hard != NULL)
        *hard = r.rlim_max == RLIM_INFINITY ? ULONG_MAX : (unsigned long)r.rlim_max;
    return r.rlim_cur == RLIM_INFINITY ? ULONG_MAX : (unsigned long)r.rlim_cur;
}

/* ---- checks before loads --------------------------------------------- */

struct tally {
    pthread_mutex_t lock;
    unsigned long seen;  /* the last count */
    unsigned long mark;  /* the hint's value at that count */
    unsigned long since; /* promised to loads since that count */
    unsigned loads;      /* loads since that count */
    bool counted;
};

static struct tally maps_tally = {.lock = PTHREAD_MUTEX_INITIALIZER};
static struct tally fds_tally = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Whether `need` more leaves `reserve` of `limit`; *used: the estimate of
 * what is in use now.  `mark`: a hint that grows with the resource, which
 * forces a count when it grew by more than `slack` (0: none).  Room is
 * assumed when the count cannot be read. */
static bool tally_take(struct tally *t, long (*count)(void), unsigned long need,
                       unsigned long limit, unsigned long reserve, unsigned long mark,
                       unsigned long slack, unsigned long *used)
{
    pthread_mutex_lock(&t->lock);
    bool stale = !t->counted || t->loads >= RECOUNT_EVERY || (slack != 0 && mark > t->mark + slack);
    /* within another reserve of the edge, counted at every load: what the
     * process opened or mapped besides loads is in no estimate */
    bool tight = limit < 2 * reserve || t->seen + t->since + need > limit - 2 * reserve;
    if (stale || tight) {
        long n = count();
        if (n >= 0) {
            t->seen = (unsigned long)n;
            t->mark = mark;
            t->since = 0;
            t->loads = 0;
            t->counted = true;
        }
    }
    *used = t->seen + t->since;
    bool ok = !t->counted || limit < reserve || *used + need <= limit - reserve;
    if (ok) {
        t->since += need;
        t->loads++;
    }
    pthread_mutex_unlock(&t->lock);
    return ok;
}

/* vm.max_map_count as last read: again at each count of the maps (an
 * administrator may raise it), not at every load. */
static _Atomic unsigned long maps_limit;

static long count_maps(void)
{
    atomic_store(&maps_limit, max_maps());
    return count_lines("/proc/self/maps");
}

/* /proc/self/statm, held open so that a load reads it with one system
 * call; a child of fork opens its own ("self" was its parent). */
static _Atomic int statm_fd = -1;

void room_after_fork(void)
{
    int fd = atomic_exchange(&statm_fd, -1);
    if (fd >= 0)
        close(fd);
}

/* The address space's size in pages, or 0. */
static unsigned long address_space_pages(void)
{
    int fd = atomic_load(&statm_fd);
    if (fd < 0) {
        fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
        int none = -1;
        if (fd >= 0 && !atomic_compare_exchange_strong(&statm_fd, &none, fd)) {
            close(fd); /* another thread's is there */
            fd = none;
        }
    }
    char text[64];
    ssize_t n = fd >= 0 ? pread(fd, text, sizeof text - 1, 0) : -1;
    if (n <= 0)
        return 0;
    text[n] = '\0';
    return strtoul(text, NULL, 10);
}

int room_for_load(vlcs_ctx *c, const char *what, size_t objects, size_t descriptors)
{
    unsigned long used, limit = atomic_load(&maps_limit), need = objects * MAPS_PER_OBJECT;
    if (limit == 0)
        atomic_store(&maps_limit, limit = max_maps());
    unsigned long reserve = limit / 64 < 256 ? 256 : limit / 64;
    if (!tally_take(&maps_tally, count_maps, need, limit, reserve, address_space_pages(), limit,
                    &used)) {
        set_error(LIMIT_CODE(VLCS_LIMIT_MAPS),
                  "Error loading %s into context '%s': the process holds %lu of the %lu memory "
                  "maps the kernel allows it (vm.max_map_count), and the load needs about %lu "
                  "more besides a reserve of %lu for the process; raise the limit (sysctl -w "
                  "vm.max_map_count=%lu) or destroy contexts no longer needed",
                  what, c->name, used, limit, need, reserve, 2 * limit);
        return -1;
    }
    if (descriptors == 0)
        return 0;
    unsigned long hard;
    limit = max_descriptors(&hard);
    reserve = limit / 32 < 16 ? 16 : limit / 32;
    if (!tally_take(&fds_tally, count_descriptors, descriptors, limit, reserve, 0, 0, &used)) {
        char most[32] = "unlimited";
        if (hard != ULONG_MAX)
            snprintf(most, sizeof most, "%lu", hard);
        set_error(LIMIT_CODE(VLCS_LIMIT_DESCRIPTORS),
                  "Error loading %s into context '%s': the process has %lu of its %lu file "
                  "descriptors open (RLIMIT_NOFILE; copy mode holds one per copied library), "
                  "and the load needs %zu more besides a reserve of %lu for the process; raise "
                  "the limit (ulimit -n, up to the hard limit: %s) or destroy contexts no "
                  "longer needed",
                  what, c->name, used, limit, descriptors, reserve, most);
        return -1;
    }
    return 0;
}

/* ---- vlcs_room ---------------------------------------------------------- */

static _Atomic long namespaces_live;

void room_namespaces(int change) { atomic_fetch_add(&namespaces_live, change); }

static long threads_used(void)
{
    FILE *f = fopen("/proc/self/status", "re");
    if (f == NULL)
        return -1;
    char line[256];
    long n = -1;
    while (fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, "Threads:", 8) == 0) {
            n = strtol(line + 8, NULL, 10);
            break;
        }
    fclose(f);
    return n;
}

/* The cgroup's pids.max (cgroup v2, or v1's pids controller), ULONG_MAX
 * when none applies. */
static unsigned long cgroup_pids_max(void)
{
    FILE *f = fopen("/proc/self/cgroup", "re");
    if (f == NULL)
        return ULONG_MAX;
    char line[PATH_MAX], path[PATH_MAX + 64];
    unsigned long most = ULONG_MAX;
    while (fgets(line, sizeof line, f) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        char *controllers = strchr(line, ':'), *where = controllers ? strchr(controllers + 1, ':')
                                                                    : NULL;
        if (where == NULL)
            continue;
        *where++ = '\0';
        controllers++;
        if (*controllers == '\0')
            snprintf(path, sizeof path, "/sys/fs/cgroup%s/pids.max", where);
        else if (strcmp(controllers, "pids") == 0)
            snprintf(path, sizeof path, "/sys/fs/cgroup/pids%s/pids.max", where);
        else
            continue;
        unsigned long n = file_number(path);
        if (n != 0 && n < most)
            most = n;
    }
    fclose(f);
    return most;
}

static unsigned long max_threads(void)
{
    unsigned long most = file_number("/proc/sys/kernel/threads-max");
    if (most == 0)
        most = ULONG_MAX;
    struct rlimit r;
    if (getrlimit(RLIMIT_NPROC, &r) == 0 && r.rlim_cur != RLIM_INFINITY && r.rlim_cur < most)
        most = (unsigned long)r.rlim_cur;
    unsigned long pids = cgroup_pids_max();
    return pids < most ? pids : most;
}

VLCS_API int vlcs_room(int resource, unsigned long *used, unsigned long *limit)
{
    long n;
    unsigned long u = 0, l = 0;
    switch (resource) {
    case VLCS_LIMIT_NAMESPACES:
        u = (unsigned long)atomic_load(&namespaces_live);
        l = NAMESPACES;
        break;
    case VLCS_LIMIT_MAPS:
        if ((n = count_maps()) < 0)
            goto unreadable;
        u = (unsigned long)n;
        l = max_maps();
        break;
    case VLCS_LIMIT_DESCRIPTORS:
        if ((n = count_descriptors()) < 0)
            goto unreadable;
        u = (unsigned long)n;
        l = max_descriptors(NULL);
        break;
    case VLCS_LIMIT_THREADS:
        if ((n = threads_used()) < 0)
            goto unreadable;
        u = (unsigned long)n;
        l = max_threads();
        break;
    case VLCS_LIMIT_KEYS:
        key_room(&u, &l);
        break;
    default:
        set_error(VLCS_E_INVALID, "Error reading a resource's room: %d is none of "
                  "VLCS_LIMIT_NAMESPACES, _MAPS, _DESCRIPTORS, _THREADS and _KEYS", resource);
        return -1;
    }
    if (used != NULL)
        *used = u;
    if (limit != NULL)
        *limit = l;
    return 0;
unreadable:
    set_error(VLCS_E_SYSTEM, "Error reading the room of resource %d: /proc cannot be read (%s); "
              "mount procfs", resource, strerror(errno));
    return -1;
}

/* A library that reports what it sees of the machine, the way real
 * libraries ask: through libc, in its own namespace copy. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

static int counter;
int probe_bump(void) { return ++counter; }
void *probe_counter_addr(void) { return &counter; }

int probe_sched_getaffinity(void)
{
    cpu_set_t s;
    return sched_getaffinity(0, sizeof s, &s) == 0 ? CPU_COUNT(&s) : -1;
}
int probe_pthread_getaffinity(void)
{
    cpu_set_t s;
    return pthread_getaffinity_np(pthread_self(), sizeof s, &s) == 0 ? CPU_COUNT(&s) : -1;
}
int probe_affinity_has(int cpu)
{
    cpu_set_t s;
    return sched_getaffinity(0, sizeof s, &s) == 0 ? CPU_ISSET(cpu, &s) : -1;
}
long probe_sysconf_onln(void) { return sysconf(_SC_NPROCESSORS_ONLN); }
long probe_sysconf_conf(void) { return sysconf(_SC_NPROCESSORS_CONF); }
int probe_get_nprocs(void) { return get_nprocs(); }
int probe_get_nprocs_conf(void) { return get_nprocs_conf(); }

/* Processor ids listed in /proc/cpuinfo, as a list "0,1". */
int probe_cpuinfo(char *out, size_t size)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return -1;
    char line[512];
    size_t n = 0;
    out[0] = '\0';
    int count = 0;
    while (fgets(line, sizeof line, f)) {
        int id;
        if (sscanf(line, "processor : %d", &id) == 1 || sscanf(line, "processor\t: %d", &id) == 1) {
            n += (size_t)snprintf(out + n, size - n, "%s%d", count ? "," : "", id);
            count++;
        }
    }
    fclose(f);
    return count;
}

/* One line of a file read with open()/read(), without its newline. */
int probe_read_line(const char *path, const char *key, char *out, size_t size)
{
    int fd = open(path, 0);
    if (fd < 0)
        return -1;
    char buf[16384];
    ssize_t n = read(fd, buf, sizeof buf - 1), r;
    while (n > 0 && (r = read(fd, buf + n, sizeof buf - 1 - (size_t)n)) > 0)
        n += r;
    close(fd);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    char *p = key ? strstr(buf, key) : buf;
    if (!p)
        return -1;
    if (key)
        p += strlen(key);
    size_t len = strcspn(p, "\n");
    snprintf(out, size, "%.*s", (int)len, p);
    return 0;
}

const char *probe_getenv(const char *name) { return getenv(name); }
/* environ as a library reads it directly (LLVM's OpenMP, Open MPI) */
char **probe_environ(void) { return environ; }

/* Threads this library creates: where they may run. */
struct seen { int count; int has[4]; int rc; };
static void *spawn_main(void *p)
{
    struct seen *s = p;
    cpu_set_t real;
    /* The raw syscall: what the kernel enforces, not what we are told. */
    CPU_ZERO(&real);
    long rc = syscall(SYS_sched_getaffinity, 0, sizeof real, &real);
    s->count = rc > 0 ? CPU_COUNT(&real) : -1;
    for (int i = 0; i < 4; i++)
        s->has[i] = CPU_ISSET(i, &real);
    return NULL;
}
int probe_spawn(int *count, int *has0, int *has1)
{
    pthread_t t;
    struct seen s = {0};
    if (pthread_create(&t, NULL, spawn_main, &s) != 0)
        return -1;
    pthread_join(t, NULL);
    *count = s.count;
    *has0 = s.has[0];
    *has1 = s.has[1];
    return 0;
}

int probe_setaffinity(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    return sched_setaffinity(0, sizeof s, &s) == 0 ? 0 : errno;
}
int probe_pthread_setaffinity(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    return pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

void *probe_malloc(size_t n) { return malloc(n); }
void probe_free(void *p) { free(p); }
void *probe_realloc(void *p, size_t n) { return realloc(p, n); }
char *probe_strdup(const char *s) { return strdup(s); }

void probe_print(const char *s) { printf("%s", s); }
/* a stream of the context's libc */
void *probe_fopen(const char *path, const char *mode) { return fopen(path, mode); }
int probe_fputs(const char *s, void *f) { return fputs(s, f); }
int probe_fclose(void *f) { return fclose(f); }
void probe_eprint(const char *s) { fputs(s, stderr); }

/* Writes through this copy's stdio, then ends the process the way `how`
 * says: 0 exit, 1 quick_exit, 2 _exit, 3 _Exit, 4 abort. */
void probe_end_process(int how, int status)
{
    printf("library-buffered\n");
    switch (how) {
    case 0:
        exit(status);
    case 1:
        quick_exit(status);
    case 2:
        _exit(status);
    case 3:
        _Exit(status);
    default:
        abort();
    }
}

/* fork() from this copy's code, as a library that starts helper processes
 * does.  The child allocates from the heap every copy shares (the base's),
 * whose locks the fork must have taken, and exits 0; a lock left held by a
 * thread that did not survive the fork ends it by SIGALRM instead. */
pid_t probe_fork_and_allocate(int blocks)
{
    pid_t pid = fork();
    if (pid == 0) {
        alarm(30);
        for (int i = 0; i < blocks; i++)
            free(malloc((size_t)(16 + (i * 97) % 8192)));
        _exit(0);
    }
    return pid;
}

/* What an open() of path by this library gets: the name of the file behind
 * the descriptor ("/memfd:vlcs-cpuinfo (deleted)" for a forged one). */
int probe_open_name(const char *path, char *out, size_t size)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, out, size - 1);
    close(fd);
    if (n < 0)
        return -1;
    out[n] = '\0';
    return 0;
}

/*
 * trace.c - a timeline of where the cores went: Chrome trace-event JSON
 * (what Perfetto's UI and chrome://tracing open).
 *
 * Started by VLCS_TRACE_FILE=out.json at vlcs_init, or vlcs_trace_start();
 * written by vlcs_trace_stop() or at exit.  Events: per thread, "inside
 * <context>" slices (vlcs_enter/vlcs_leave); per context, counters of its
 * home, current and lent CPUs and an instant for each lend and reclaim
 * with the CPU lists; pool resizes (family, threads); and what callers mark
 * (vlcs_trace_mark: the Python package's task spans).
 *
 * Each thread formats its events into a buffer of its own (no lock on the
 * way); the buffers are listed once per thread and written, in order of
 * their threads, when the trace stops.  Off, each event site costs one
 * predictable branch on trace_recording.  In a forked child tracing is off.
 */
#include "common.h"
#include "trace.h"
#include "context.h"
#include "cpuset.h"
#include "error.h"
#include "families.h"
#include "registry.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

_Atomic int trace_recording;

struct tbuf {
    _Atomic int writing; /* an event is being added (write_out waits it out) */
    char *data;
    size_t len, cap;
    pid_t tid, pid;
    char name[32];
    struct tbuf *next;
};

static pthread_mutex_t trace_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tbuf *buffers; /* every thread's, since the trace started */
static char trace_path[4096];
/* Opened once, when the trace starts: the file written at the stop is the
 * one checked then, whatever is put at its path meanwhile. */
static int trace_fd = -1;
static unsigned trace_epoch; /* a buffer of an older trace is started afresh */
static __thread struct tbuf *mine;
static __thread unsigned mine_epoch;

/* CLOCK_MONOTONIC in nanoseconds, printed as microseconds with three
 * decimals by integer arithmetic (a double's %f costs more than the rest). */
static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static struct tbuf *buffer(void)
{
    unsigned epoch = __atomic_load_n(&trace_epoch, __ATOMIC_ACQUIRE);
    if (mine != NULL && mine_epoch == epoch)
        return mine;
    struct tbuf *b = calloc(1, sizeof *b);
    if (b == NULL)
        return NULL;
    b->tid = (pid_t)syscall(SYS_gettid);
    b->pid = getpid();
    pthread_getname_np(pthread_self(), b->name, sizeof b->name);
    pthread_mutex_lock(&trace_lock);
    b->next = buffers;
    buffers = b;
    pthread_mutex_unlock(&trace_lock);
    mine = b;
    mine_epoch = epoch;
    return b;
}

static void append(struct tbuf *b, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/* One event, formatted into this thread's buffer: `fmt` is the JSON object's
 * fields after "ts", "pid" and "tid". */
static void event(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void event(const char *fmt, ...)
{
    struct tbuf *b = buffer();
    if (b == NULL)
        return;
    atomic_store(&b->writing, 1);
    if (!atomic_load(&trace_recording)) { /* stopped meanwhile: its file is being written */
        atomic_store(&b->writing, 0);
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    append(b, fmt, ap);
    va_end(ap);
    atomic_store(&b->writing, 0);
}

static void append(struct tbuf *b, const char *fmt, va_list ap)
{
    if (b->cap - b->len < 1024) {
        size_t cap = b->cap ? b->cap * 2 : 64 * 1024;
        char *more = realloc(b->data, cap);
        if (more == NULL)
            return; /* out of memory: the event is lost, the program is not */
        b->data = more;
        b->cap = cap;
    }
    long long ns = now_ns();
    int n = snprintf(b->data + b->len, b->cap - b->len, "{\"ts\":%lld.%03d,\"pid\":%d,\"tid\":%d,",
                     ns / 1000, (int)(ns % 1000), (int)b->pid, (int)b->tid);
    int m = vsnprintf(b->data + b->len + n, b->cap - b->len - (size_t)n, fmt, ap);
    if (n < 0 || m < 0 || (size_t)(n + m) + 3 >= b->cap - b->len)
        return; /* too long for one event: dropped whole */
    b->len += (size_t)(n + m);
    memcpy(b->data + b->len, "},\n", 3);
    b->len += 3;
}

/* A name as a JSON string's contents (quotes and backslashes escaped). */
static void json_text(const char *in, char *out, size_t size)
{
    size_t k = 0;
    for (; *in && k + 7 < size; in++) {
        unsigned char ch = (unsigned char)*in;
        if (ch == '"' || ch == '\\') {
            out[k++] = '\\';
            out[k++] = (char)ch;
        } else if (ch < 0x20) {
            k += (size_t)snprintf(out + k, size - k, "\\u%04x", ch);
        } else {
            out[k++] = (char)ch;
        }
    }
    out[k] = '\0';
}

void trace_enter(const vlcs_ctx *c)
{
    char name[160];
    json_text(c->name, name, sizeof name);
    event("\"ph\":\"B\",\"cat\":\"context\",\"name\":\"inside %s\",\"args\":{"
          "\"context\":\"%s\",\"cpus\":\"%s\"}",
          name, name, ctx_view(c)->list);
}

void trace_leave(const vlcs_ctx *c)
{
    char name[160];
    json_text(c->name, name, sizeof name);
    event("\"ph\":\"E\",\"cat\":\"context\",\"name\":\"inside %s\"", name);
}

void trace_cpus(const vlcs_ctx *c, const vmask *from, const vmask *to, const char *why,
                const vlcs_ctx *cause)
{
    char name[160], a[512], b[512], home[512], reason[256], whyj[256];
    json_text(c->name, name, sizeof name);
    mask_format(from, a, sizeof a);
    mask_format(to, b, sizeof b);
    mask_format(&c->home, home, sizeof home);
    if (cause != NULL)
        snprintf(reason, sizeof reason, "'%s' %s", cause->name, why);
    else
        snprintf(reason, sizeof reason, "%s", why);
    json_text(reason, whyj, sizeof whyj);
    int homes = mask_count(&c->home), now = mask_count(to);
    event("\"ph\":\"i\",\"s\":\"p\",\"cat\":\"elastic\",\"name\":\"%s %s\",\"args\":{"
          "\"context\":\"%s\",\"from\":\"%s\",\"to\":\"%s\",\"home\":\"%s\",\"why\":\"%s\"}",
          now > mask_count(from) ? "borrow" : "give back", name, name, a, b, home, whyj);
    event("\"ph\":\"C\",\"cat\":\"elastic\",\"name\":\"CPUs of %s\",\"args\":{\"home\":%d,"
          "\"current\":%d,\"lent\":%d}",
          name, homes, now, now > homes ? now - homes : 0);
}

void trace_pool(const vlcs_ctx *c, const char *family, int threads)
{
    char name[160], fam[64];
    json_text(c->name, name, sizeof name);
    json_text(family ? family : "?", fam, sizeof fam);
    event("\"ph\":\"i\",\"s\":\"t\",\"cat\":\"pool\",\"name\":\"%s pool of %s: %d threads\","
          "\"args\":{\"context\":\"%s\",\"family\":\"%s\",\"threads\":%d}",
          fam, name, threads, name, fam, threads);
}

VLCS_API int vlcs_trace_mark(const char *name, char phase, const char *args_json)
{
    if (!atomic_load_explicit(&trace_recording, memory_order_relaxed))
        return 0;
    if (name == NULL || (phase != 'B' && phase != 'E' && phase != 'i')) {
        set_error(VLCS_E_INVALID, "Error marking the trace: a name and a phase B, E or i");
        return -1;
    }
    char n[256];
    json_text(name, n, sizeof n);
    if (args_json != NULL && *args_json != '\0')
        event("\"ph\":\"%c\",%s\"cat\":\"mark\",\"name\":\"%s\",\"args\":%s", phase,
              phase == 'i' ? "\"s\":\"t\"," : "", n, args_json);
    else
        event("\"ph\":\"%c\",%s\"cat\":\"mark\",\"name\":\"%s\"", phase,
              phase == 'i' ? "\"s\":\"t\"," : "", n);
    return 0;
}

static void trace_child(void)
{
    /* the child has only the forking thread, and the file is the parent's */
    atomic_store(&trace_recording, 0);
    buffers = NULL;
    pthread_mutex_init(&trace_lock, NULL);
}

static void write_out(void)
{
    FILE *f = NULL;
    if (trace_fd >= 0 && ftruncate(trace_fd, 0) == 0 && lseek(trace_fd, 0, SEEK_SET) == 0)
        f = fdopen(trace_fd, "w");
    if (f == NULL && trace_fd >= 0)
        close(trace_fd);
    trace_fd = -1;
    if (f == NULL) {
        fprintf(stderr, "vlcs: cannot write the trace %s: %s\n", trace_path, strerror(errno));
        return;
    }
    for (struct tbuf *b = buffers; b != NULL; b = b->next)
        while (atomic_load(&b->writing)) /* an event that began before the stop */
            sched_yield();
    fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n", f);
    fprintf(f, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"vlcs "
               "%d\"}},\n",
            (int)getpid(), (int)getpid());
    for (struct tbuf *b = buffers; b != NULL; b = b->next) {
        char name[96];
        json_text(b->name[0] ? b->name : "thread", name, sizeof name);
        fprintf(f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{"
                   "\"name\":\"%s\"}},\n",
                (int)getpid(), (int)b->tid, name);
        if (b->len)
            fwrite(b->data, 1, b->len, f);
    }
    /* a last event without a comma after it */
    fprintf(f, "{\"ph\":\"M\",\"name\":\"trace_end\",\"pid\":%d,\"args\":{}}\n]}\n",
            (int)getpid());
    fclose(f);
}

static void trace_at_exit(void) { vlcs_trace_stop(); }

VLCS_API int vlcs_trace_start(const char *path)
{
    if (path == NULL || *path == '\0') {
        set_error(VLCS_E_INVALID, "Error starting a trace: no file given");
        return -1;
    }
    static bool handlers;
    pthread_mutex_lock(&trace_lock);
    if (atomic_load(&trace_recording)) {
        pthread_mutex_unlock(&trace_lock);
        set_error(VLCS_E_INVALID, "Error starting a trace to %s: one is running to %s", path,
                  trace_path);
        return -1;
    }
    /* Not through a link, nor into another user's file: in a shared folder
     * (/tmp) either may have been planted there. */
    int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != getuid()) {
        int e = errno;
        struct stat ls;
        if (fd >= 0 && S_ISREG(st.st_mode) && st.st_uid != getuid())
            set_error(VLCS_E_INVALID, "Error starting a trace: %s belongs to uid %u, not to this "
                      "user; write the trace to a file of your own", path, (unsigned)st.st_uid);
        else if (fd >= 0)
            set_error(VLCS_E_INVALID, "Error starting a trace: %s is not a regular file", path);
        else if (lstat(path, &ls) == 0 && S_ISLNK(ls.st_mode))
            set_error(VLCS_E_INVALID, "Error starting a trace: %s is a symbolic link, which vlcs "
                      "does not follow (another user may have planted it); write the trace to "
                      "the file itself", path);
        else
            set_error(VLCS_E_SYSTEM, "Error starting a trace: cannot write %s: %s", path,
                      strerror(e));
        if (fd >= 0)
            close(fd);
        pthread_mutex_unlock(&trace_lock);
        return -1;
    }
    if (trace_fd >= 0)
        close(trace_fd);
    trace_fd = fd;
    snprintf(trace_path, sizeof trace_path, "%s", path);
    buffers = NULL;
    __atomic_add_fetch(&trace_epoch, 1, __ATOMIC_RELEASE);
    if (!handlers) {
        handlers = true;
        pthread_atfork(NULL, NULL, trace_child);
        atexit(trace_at_exit);
    }
    atomic_store(&trace_recording, 1);
    pthread_mutex_unlock(&trace_lock);
    return 0;
}

VLCS_API int vlcs_trace_stop(void)
{
    pthread_mutex_lock(&trace_lock);
    if (!atomic_exchange(&trace_recording, 0)) {
        pthread_mutex_unlock(&trace_lock);
        return 0;
    }
    write_out();
    /* Buffers stay with their threads until the next trace starts afresh
     * (a thread may be formatting an event into one right now). */
    pthread_mutex_unlock(&trace_lock);
    return 0;
}

void trace_from_env(void)
{
    const char *path = getenv("VLCS_TRACE_FILE");
    if (path != NULL && *path != '\0' && vlcs_trace_start(path) != 0)
        fprintf(stderr, "vlcs: VLCS_TRACE_FILE ignored: %s\n", vlcs_error());
}

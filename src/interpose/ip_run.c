/*
 * ip_run.c - a program run in a copy-mode context (vlcs_ctx_exec past the
 * namespaces), which shares the process's one libc with the base and the
 * other instances: what libc would keep once per process is kept here,
 * once per context (this is the context's own renamed copy).
 *
 *  - the implicit streams: printf, puts, putchar, getchar, scanf, perror
 *    and their fortified forms write and read the run's stdin, stdout and
 *    stderr (ip_exec.c's run_streams), not the process's;
 *  - getopt's place in the arguments (ip_getopt.c) and its variables (the
 *    program's copies of optind, optarg...);
 *  - the program's name in messages (error(), err(), getopt's: ip_end.c);
 *  - setlocale, which would set the whole process's locale: the calling
 *    thread's instead (uselocale), with the names read from the context's
 *    environment;
 *  - strtok's place;
 *  - a signal that ended the run while it was inside the process's libc
 *    (SIGPIPE at a write), where it cannot be cut short: its end comes at
 *    the run's next call here (printf, error(), exit...), before it says
 *    or does more;
 *  - a failed assert(): glibc's message, on the run's stderr with the
 *    run's name, then SIGABRT raised here, in the context's own code, where
 *    vlcs contains it as the process's libc's abort() could not be;
 *  - popen's shell, started with the context's environment;
 *  - the streams the run opens (fopen, fdopen, tmpfile, popen...): its
 *    fflush(NULL), and its end, flush those and its own three only.  A
 *    stream's descriptor is a number in the run's own descriptor table
 *    (exec.c): written from another thread (libc's fflush(NULL) flushes
 *    every stream of the process), its buffer would go to whatever that
 *    thread's table holds at that number.
 *
 * With a namespace of its own a program has a libc of its own: there, and
 * in a copy-mode context running no program, every function here is
 * libc's.
 */
#define _GNU_SOURCE
#include "ip.h"
#include "ip_getopt.h"
#include "ip_run.h"

#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <spawn.h>
#include <sys/wait.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>

extern int __vfprintf_chk(FILE *, int, const char *, va_list);

extern char **environ;

static struct vlcs_ip_run run;
static bool running;
static _Atomic int *pending_end; /* libvlcs's word for the run's pending end */
/* setlocale's objects, freed once no thread uses them: when replaced on
 * their thread, at the run's end (no thread-local storage: the interposer
 * has none, which every context's copy would take) */
static pthread_mutex_t locale_lock = PTHREAD_MUTEX_INITIALIZER;
static locale_t made[32];
static size_t nmade;
/* getopt's variables where the program has no copies of its own */
static int own_optind = 1, own_opterr = 1, own_optopt = '?';
static char *own_optarg;
static struct ip_getopt parse;

IP_EXPORT void vlcs_ip_exec_pending(_Atomic int *word)
{
    __atomic_store_n(&pending_end, word, __ATOMIC_RELEASE);
}

IP_EXPORT void vlcs_ip_exec_run(const struct vlcs_ip_run *r)
{
    __atomic_store_n(&running, false, __ATOMIC_RELEASE);
    if (r == NULL) {
        __atomic_store_n(&pending_end, NULL, __ATOMIC_RELEASE);
        pthread_mutex_lock(&locale_lock); /* the run's threads are gone */
        while (nmade > 0)
            freelocale(made[--nmade]);
        pthread_mutex_unlock(&locale_lock);
        return;
    }
    run = *r;
    own_optind = 1;
    own_opterr = 1;
    own_optopt = '?';
    own_optarg = NULL;
    parse = (struct ip_getopt){
        .optind = run.optind ? run.optind : &own_optind,
        .opterr = run.opterr ? run.opterr : &own_opterr,
        .optopt = run.optopt ? run.optopt : &own_optopt,
        .optarg = run.optarg ? run.optarg : &own_optarg,
    };
    *parse.optind = 1;
    *parse.opterr = 1;
    *parse.optarg = NULL;
    __atomic_store_n(&running, true, __ATOMIC_RELEASE);
}

bool ip_run_active(void) { return __atomic_load_n(&running, __ATOMIC_ACQUIRE); }

void ip_run_end_if_pending(void)
{
    _Atomic int *word = __atomic_load_n(&pending_end, __ATOMIC_ACQUIRE);
    if (word == NULL || *word == 0)
        return;
    const struct vlcs_ip_api *a = __atomic_load_n(&vlcs_ip, __ATOMIC_ACQUIRE);
    int sig = a != NULL && a->sig_end_pending != NULL ? a->sig_end_pending() : 0;
    if (sig != 0)
        a->exit_now(128 + sig);
}

const char *ip_run_name(bool brief)
{
    const char *name = run.name != NULL ? run.name : "";
    const char *slash = brief ? strrchr(name, '/') : NULL;
    return slash ? slash + 1 : name;
}

FILE *ip_run_stream(int i)
{
    FILE *f = ip_run_streams(i);
    return f != NULL ? f : i == 0 ? stdin : i == 1 ? stdout : stderr;
}

void ip_run_environ_changed(void)
{
    const struct vlcs_ip_api *a = __atomic_load_n(&vlcs_ip, __ATOMIC_ACQUIRE);
    if (ip_run_active() && run.environ != NULL && a != NULL && a->env_block != NULL)
        *run.environ = a->env_block(a->ctx);
}

int ip_run_getopt(int argc, char *const argv[], const char *opts, const struct option *longopts,
                  int *longind, bool long_only, bool posix)
{
    const struct vlcs_ip_api *a = __atomic_load_n(&vlcs_ip, __ATOMIC_ACQUIRE);
    bool posixly_correct = posix || (a != NULL && a->env_get != NULL &&
                                     a->env_get(a->ctx, "POSIXLY_CORRECT") != NULL);
    return ip_getopt_next(&parse, argc, (char **)argv, opts, longopts, longind, long_only,
                          posixly_correct, ip_run_stream(2));
}

/* ---- the streams the run opened ------------------------------------------ */

static pthread_mutex_t files_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE **files;
static size_t nfiles, capfiles;

void ip_run_opened(FILE *f)
{
    if (f == NULL || !ip_run_active())
        return;
    pthread_mutex_lock(&files_lock);
    for (size_t i = 0; i < nfiles; i++)
        if (files[i] == f) { /* fopen's forged files come through fdopen */
            pthread_mutex_unlock(&files_lock);
            return;
        }
    if (nfiles == capfiles) {
        size_t cap = capfiles ? 2 * capfiles : 16;
        FILE **more = realloc(files, cap * sizeof *more);
        if (more != NULL) {
            files = more;
            capfiles = cap;
        }
    }
    if (nfiles < capfiles)
        files[nfiles++] = f; /* else out of memory: flushed at its fclose only */
    pthread_mutex_unlock(&files_lock);
}

void ip_run_closing(FILE *f)
{
    pthread_mutex_lock(&files_lock);
    for (size_t i = 0; i < nfiles; i++)
        if (files[i] == f) {
            files[i] = files[--nfiles];
            break;
        }
    pthread_mutex_unlock(&files_lock);
}

static void flush_run(void)
{
    pthread_mutex_lock(&files_lock);
    for (size_t i = 0; i < nfiles; i++)
        fflush(files[i]);
    pthread_mutex_unlock(&files_lock);
    for (int i = 1; i < 3; i++)
        if (ip_run_streams(i) != NULL)
            fflush(ip_run_streams(i));
}

/* Given by libvlcs at the run's end, on its thread: 0 flushes the streams
 * it opened (its exit), 1 closes them too (its end: a process's
 * descriptors close with it), 2 closes them unwritten after a fault, the
 * locks it left held let go (glibc's recursive {lock, count, owner}). */
IP_EXPORT void vlcs_ip_exec_files(int how)
{
    if (how == 0) {
        flush_run();
        return;
    }
    pthread_mutex_lock(&files_lock); /* taken out: fclose comes back to ip_run_closing */
    FILE **taken = files;
    size_t n = nfiles;
    files = NULL;
    nfiles = capfiles = 0;
    pthread_mutex_unlock(&files_lock);
    for (size_t i = 0; i < n; i++) {
        FILE *f = taken[i];
        if (how == 2) {
            if (f->_lock != NULL)
                memset(f->_lock, 0, 2 * sizeof(int) + sizeof(void *));
            __fpurge(f);
        }
        fclose(f);
    }
    free(taken);
}

typedef int (*fflush_fn)(FILE *);

IP_EXPORT int fflush(FILE *f)
{
    if (f == NULL && ip_run_active()) {
        flush_run();
        return 0;
    }
    NEXT(fflush_fn, fflush)
    return next_fflush(f);
}

#define OPENS(name, params, args)                   \
    typedef FILE *(*name##_fn) params;              \
    IP_EXPORT FILE *name params                     \
    {                                               \
        NEXT(name##_fn, name)                       \
        FILE *f = next_##name args;                 \
        ip_run_opened(f);                           \
        return f;                                   \
    }

OPENS(fdopen, (int fd, const char *mode), (fd, mode))
OPENS(tmpfile, (void), ())
OPENS(tmpfile64, (void), ())
OPENS(fmemopen, (void *buf, size_t size, const char *mode), (buf, size, mode))
OPENS(open_memstream, (char **at, size_t *size), (at, size))

/* popen in a run: libc's would start the shell with the process's
 * environment; this one with the context's, the pipe's other end on the
 * child's 0 or 1 as libc's does.  A child per stream, kept here. */
typedef FILE *(*popen_fn)(const char *, const char *);
typedef int (*pclose_fn)(FILE *);

static pthread_mutex_t piped_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    FILE *f;
    pid_t pid;
} piped[64];

int ip_run_shell(pid_t *pid, const posix_spawn_file_actions_t *fa, const char *command)
{
    const struct vlcs_ip_api *a = __atomic_load_n(&vlcs_ip, __ATOMIC_ACQUIRE);
    char *argv[] = {"sh", "-c", (char *)command, NULL};
    return posix_spawn(pid, "/bin/sh", fa, NULL, argv,
                       a != NULL && a->env_block != NULL ? a->env_block(a->ctx) : environ);
}

int ip_run_wait(pid_t pid)
{
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return status;
}

static FILE *run_popen(const char *command, const char *mode)
{
    bool reading = mode[0] == 'r', cloexec = strchr(mode, 'e') != NULL;
    if ((mode[0] != 'r' && mode[0] != 'w') || (mode[1] != '\0' && mode[1] != 'e')) {
        errno = EINVAL;
        return NULL;
    }
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
        return NULL;
    int mine = reading ? p[0] : p[1], theirs = reading ? p[1] : p[0];
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, theirs, reading ? 1 : 0);
    pid_t pid;
    int rc = ip_run_shell(&pid, &fa, command);
    posix_spawn_file_actions_destroy(&fa);
    close(theirs);
    FILE *f = rc == 0 ? fdopen(mine, reading ? "r" : "w") : NULL;
    if (f == NULL) {
        close(mine);
        if (rc == 0)
            waitpid(pid, NULL, 0);
        errno = rc ? rc : errno;
        return NULL;
    }
    if (!cloexec)
        fcntl(mine, F_SETFD, 0);
    pthread_mutex_lock(&piped_lock);
    size_t k = 0;
    while (k < sizeof piped / sizeof *piped && piped[k].f != NULL)
        k++;
    if (k < sizeof piped / sizeof *piped)
        piped[k].f = f, piped[k].pid = pid;
    pthread_mutex_unlock(&piped_lock);
    return f;
}

IP_EXPORT FILE *popen(const char *command, const char *mode)
{
    if (ip_run_active())
        return run_popen(command, mode); /* fdopen tracks it */
    NEXT(popen_fn, popen)
    return next_popen(command, mode);
}

IP_EXPORT int pclose(FILE *f)
{
    pid_t pid = 0;
    pthread_mutex_lock(&piped_lock);
    for (size_t k = 0; k < sizeof piped / sizeof *piped; k++)
        if (piped[k].f == f) {
            pid = piped[k].pid;
            piped[k].f = NULL;
        }
    pthread_mutex_unlock(&piped_lock);
    if (pid == 0) {
        ip_run_closing(f);
        NEXT(pclose_fn, pclose)
        return next_pclose(f);
    }
    fclose(f);
    return ip_run_wait(pid);
}

/* ---- the implicit streams ------------------------------------------------ */

typedef int (*vprintf_fn)(const char *, va_list);
typedef int (*vprintf_chk_fn)(int, const char *, va_list);
typedef int (*puts_fn)(const char *);
typedef int (*putchar_fn)(int);
typedef int (*getchar_fn)(void);
typedef int (*vscanf_fn)(const char *, va_list);
typedef void (*perror_fn)(const char *);

IP_EXPORT int vprintf(const char *fmt, va_list ap)
{
    if (ip_run_active()) {
        ip_run_end_if_pending();
        return vfprintf(ip_run_stream(1), fmt, ap);
    }
    NEXT(vprintf_fn, vprintf)
    return next_vprintf(fmt, ap);
}

IP_EXPORT int printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vprintf(fmt, ap);
    va_end(ap);
    return r;
}

IP_EXPORT int __vprintf_chk(int flag, const char *fmt, va_list ap)
{
    if (ip_run_active()) {
        ip_run_end_if_pending();
        return __vfprintf_chk(ip_run_stream(1), flag, fmt, ap);
    }
    NEXT(vprintf_chk_fn, __vprintf_chk)
    return next___vprintf_chk(flag, fmt, ap);
}

IP_EXPORT int __printf_chk(int flag, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = __vprintf_chk(flag, fmt, ap);
    va_end(ap);
    return r;
}

IP_EXPORT int puts(const char *s)
{
    if (ip_run_active()) {
        ip_run_end_if_pending();
        FILE *f = ip_run_stream(1);
        flockfile(f);
        int r = fputs_unlocked(s, f) == EOF || putc_unlocked('\n', f) == EOF ? EOF : 1;
        funlockfile(f);
        return r;
    }
    NEXT(puts_fn, puts)
    return next_puts(s);
}

IP_EXPORT int putchar(int c)
{
    if (ip_run_active())
        return putc(c, ip_run_stream(1));
    NEXT(putchar_fn, putchar)
    return next_putchar(c);
}

IP_EXPORT int putchar_unlocked(int c)
{
    if (ip_run_active())
        return putc_unlocked(c, ip_run_stream(1));
    NEXT(putchar_fn, putchar_unlocked)
    return next_putchar_unlocked(c);
}

IP_EXPORT int getchar(void)
{
    if (ip_run_active())
        return getc(ip_run_stream(0));
    NEXT(getchar_fn, getchar)
    return next_getchar();
}

IP_EXPORT int getchar_unlocked(void)
{
    if (ip_run_active())
        return getc_unlocked(ip_run_stream(0));
    NEXT(getchar_fn, getchar_unlocked)
    return next_getchar_unlocked();
}

/* scanf as C99 has it: what <stdio.h> names scanf in every program built
 * since glibc 2.7 */
#define SCANF(name, vname, vfname)                        \
    IP_EXPORT int vname(const char *fmt, va_list ap)      \
    {                                                     \
        if (ip_run_active())                              \
            return vfname(ip_run_stream(0), fmt, ap);     \
        NEXT(vscanf_fn, vname)                            \
        return next_##vname(fmt, ap);                     \
    }                                                     \
    IP_EXPORT int name(const char *fmt, ...)              \
    {                                                     \
        va_list ap;                                       \
        va_start(ap, fmt);                                \
        int r = vname(fmt, ap);                           \
        va_end(ap);                                       \
        return r;                                         \
    }

extern int __isoc99_vfscanf(FILE *, const char *, va_list);
SCANF(__isoc99_scanf, __isoc99_vscanf, __isoc99_vfscanf)

IP_EXPORT void perror(const char *s)
{
    if (!ip_run_active()) {
        NEXT(perror_fn, perror)
        next_perror(s);
        return;
    }
    ip_run_end_if_pending();
    int e = errno;
    if (s != NULL && *s != '\0')
        fprintf(ip_run_stream(2), "%s: %s\n", s, strerror(e));
    else
        fprintf(ip_run_stream(2), "%s\n", strerror(e));
    errno = e;
}

/* ---- assert -------------------------------------------------------------- */

typedef void (*assert_fail_fn)(const char *, const char *, unsigned, const char *);

IP_EXPORT __attribute__((noreturn)) void __assert_fail(const char *assertion, const char *file,
                                                        unsigned line, const char *function)
{
    if (ip_run_active()) {
        const char *name = ip_run_name(true);
        FILE *f = ip_run_stream(2);
        fprintf(f, "%s%s%s:%u: %s%sAssertion `%s' failed.\n", name, *name ? ": " : "", file,
                line, function ? function : "", function ? ": " : "", assertion);
        fflush(f);
        syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), SIGABRT);
        abort(); /* SIGABRT blocked or ignored: abort() as the interposer has it */
    }
    NEXT(assert_fail_fn, __assert_fail)
    next___assert_fail(assertion, file, line, function);
    __builtin_unreachable();
}

/* ---- strtok -------------------------------------------------------------- */

typedef char *(*strtok_fn)(char *, const char *);
static char *strtok_at;

IP_EXPORT char *strtok(char *s, const char *delim)
{
    if (ip_run_active())
        return strtok_r(s, delim, &strtok_at);
    NEXT(strtok_fn, strtok)
    return next_strtok(s, delim);
}

/* ---- setlocale: the calling thread's --------------------------------------
 * The names asked for, per category; "" read from the context's
 * environment as glibc reads the process's (LC_ALL, then LC_<category>,
 * then LANG, else "C"). */

typedef char *(*setlocale_fn)(int, const char *);

static const struct {
    int category, mask;
    const char *name;
} categories[] = {
    {LC_CTYPE, LC_CTYPE_MASK, "LC_CTYPE"},
    {LC_NUMERIC, LC_NUMERIC_MASK, "LC_NUMERIC"},
    {LC_TIME, LC_TIME_MASK, "LC_TIME"},
    {LC_COLLATE, LC_COLLATE_MASK, "LC_COLLATE"},
    {LC_MONETARY, LC_MONETARY_MASK, "LC_MONETARY"},
    {LC_MESSAGES, LC_MESSAGES_MASK, "LC_MESSAGES"},
    {LC_PAPER, LC_PAPER_MASK, "LC_PAPER"},
    {LC_NAME, LC_NAME_MASK, "LC_NAME"},
    {LC_ADDRESS, LC_ADDRESS_MASK, "LC_ADDRESS"},
    {LC_TELEPHONE, LC_TELEPHONE_MASK, "LC_TELEPHONE"},
    {LC_MEASUREMENT, LC_MEASUREMENT_MASK, "LC_MEASUREMENT"},
    {LC_IDENTIFICATION, LC_IDENTIFICATION_MASK, "LC_IDENTIFICATION"},
};
#define NCATEGORIES (sizeof categories / sizeof *categories)

static char locale_names[NCATEGORIES][128] = {
    "C", "C", "C", "C", "C", "C", "C", "C", "C", "C", "C", "C",
};
static char locale_all[NCATEGORIES * 160];
static void forget_made(locale_t l, bool free_it)
{
    for (size_t i = 0; i < nmade; i++)
        if (made[i] == l) {
            made[i] = made[--nmade];
            if (free_it)
                freelocale(l);
            return;
        }
}

static const char *from_environment(const char *category)
{
    const struct vlcs_ip_api *a = __atomic_load_n(&vlcs_ip, __ATOMIC_ACQUIRE);
    const char *names[3] = {"LC_ALL", category, "LANG"};
    for (int i = 0; i < 3 && a != NULL && a->env_get != NULL; i++) {
        const char *v = a->env_get(a->ctx, names[i]);
        if (v != NULL && *v != '\0')
            return v;
    }
    return "C";
}

/* LC_ALL's name: the one name, or glibc's composite form */
static const char *all_names(void)
{
    bool one = true;
    for (size_t i = 1; i < NCATEGORIES; i++)
        one = one && strcmp(locale_names[i], locale_names[0]) == 0;
    if (one)
        return locale_names[0];
    size_t at = 0;
    for (size_t i = 0; i < NCATEGORIES; i++)
        at += (size_t)snprintf(locale_all + at, sizeof locale_all - at, "%s%s=%s",
                               i ? ";" : "", categories[i].name, locale_names[i]);
    return locale_all;
}

IP_EXPORT char *setlocale(int category, const char *locale)
{
    if (!ip_run_active()) {
        NEXT(setlocale_fn, setlocale)
        return next_setlocale(category, locale);
    }
    int k = -1;
    for (size_t i = 0; i < NCATEGORIES; i++)
        if (categories[i].category == category)
            k = (int)i;
    if (category != LC_ALL && k < 0) {
        errno = EINVAL;
        return NULL;
    }
    pthread_mutex_lock(&locale_lock);
    char *r = NULL;
    if (locale == NULL) {
        r = (char *)(category == LC_ALL ? all_names() : locale_names[k]);
        pthread_mutex_unlock(&locale_lock);
        return r;
    }
    /* the new names, each category on its own: a name one category lacks
     * fails the whole call and changes nothing, as glibc's */
    char names[NCATEGORIES][128];
    memcpy(names, locale_names, sizeof names);
    locale_t now = uselocale((locale_t)0);
    locale_t made_now = duplocale(now == LC_GLOBAL_LOCALE ? LC_GLOBAL_LOCALE : now);
    for (size_t i = 0; i < NCATEGORIES && made_now != (locale_t)0; i++) {
        if (category != LC_ALL && (int)i != k)
            continue;
        const char *name = *locale != '\0' ? locale : from_environment(categories[i].name);
        locale_t next = newlocale(categories[i].mask, name, made_now);
        if (next == (locale_t)0) {
            freelocale(made_now);
            made_now = (locale_t)0;
            break;
        }
        made_now = next;
        snprintf(names[i], sizeof names[i], "%s", name);
    }
    if (made_now != (locale_t)0) {
        memcpy(locale_names, names, sizeof names);
        uselocale(made_now);
        forget_made(now, true); /* this thread's earlier one, if made here */
        if (nmade < sizeof made / sizeof *made)
            made[nmade++] = made_now; /* else kept for good */
        r = (char *)(category == LC_ALL ? all_names() : locale_names[k]);
    }
    pthread_mutex_unlock(&locale_lock);
    return r;
}

/*
 * ip_end.c - the ways a program ends that reach exit or abort inside libc,
 * where the interposer's exit and abort (ip_core.c) cannot see them, and
 * the exec family, which would replace the whole process.
 *
 *  - error(), error_at_line(), err(), errx(), verr(), verrx(): libc's own
 *    words, printed by libc (its error() with status 0, its vwarn), then
 *    the interposer's exit, so that the end goes where every exit goes:
 *    the instance's end under vlcs_ctx_exec, else the base's exit.  In a
 *    copy-mode run the process's libc would name the process: the words
 *    are written here as libc writes them, with the run's name, to the
 *    run's stderr (warn() and warnx() too).
 *  - execve and its family: on the thread running an instance, the new
 *    program runs in a child process with the instance's streams (libvlcs
 *    makes it; the namespace's own libc execs in it, so a PATH search
 *    and the environment are the instance's), and the instance ends with
 *    the child's status, as a shell's `exec` looks from outside.  An exec
 *    that fails returns -1 with errno to the program, as it would.
 *    Elsewhere the exec is libc's.
 *
 * __assert_fail is ip_run.c's: a namespace's libc's own abort() is
 * contained as a fault in the context's code.
 */
#define _GNU_SOURCE
#include "ip.h"
#include "ip_run.h"

#include <errno.h>
#include <stdbool.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct vlcs_ip_api *api(void) { return __atomic_load_n(&vlcs_ip, __ATOMIC_ACQUIRE); }

/* ---- error() and err(): libc prints, the interposer ends ------------------ */

/* fmt and its arguments as one string (malloc'ed; NULL: out of memory). */
static char *format(const char *fmt, va_list ap)
{
    char *s = NULL;
    return vasprintf(&s, fmt, ap) < 0 ? NULL : s;
}

/* glibc's error() and error_at_line() for a copy-mode run: "name: ",
 * "name:file:line: " with a file, the message, ": strerror" for errnum. */
static void run_error(int errnum, const char *file, unsigned line, const char *fmt, va_list ap)
{
    ip_run_end_if_pending();
    fflush(ip_run_stream(1));
    FILE *f = ip_run_stream(2);
    flockfile(f);
    if (file != NULL)
        fprintf(f, "%s:%s:%u: ", ip_run_name(false), file, line);
    else
        fprintf(f, "%s: ", ip_run_name(false));
    vfprintf(f, fmt, ap);
    if (errnum != 0)
        fprintf(f, ": %s", strerror(errnum));
    putc_unlocked('\n', f);
    fflush(f);
    funlockfile(f);
}

/* glibc's vwarn (with_errno) and vwarnx for a copy-mode run */
static void run_warn(bool with_errno, const char *fmt, va_list ap)
{
    ip_run_end_if_pending();
    int e = errno;
    FILE *f = ip_run_stream(2);
    flockfile(f);
    fprintf(f, "%s: ", ip_run_name(true));
    if (fmt != NULL) {
        vfprintf(f, fmt, ap);
        if (with_errno)
            fprintf(f, ": ");
    }
    if (with_errno)
        fprintf(f, "%s", strerror(e));
    putc_unlocked('\n', f);
    funlockfile(f);
    errno = e;
}

typedef void (*error_fn)(int, int, const char *, ...);
typedef void (*error_at_line_fn)(int, int, const char *, unsigned, const char *, ...);
typedef void (*vwarn_fn)(const char *, va_list);

IP_EXPORT void error(int status, int errnum, const char *fmt, ...)
{
    if (ip_run_active()) {
        va_list ap;
        va_start(ap, fmt);
        run_error(errnum, NULL, 0, fmt, ap);
        va_end(ap);
        if (status != 0)
            exit(status);
        return;
    }
    NEXT(error_fn, error)
    va_list ap;
    va_start(ap, fmt);
    char *s = format(fmt, ap);
    va_end(ap);
    next_error(0, errnum, "%s", s ? s : fmt);
    free(s);
    if (status != 0)
        exit(status);
}

IP_EXPORT void error_at_line(int status, int errnum, const char *file, unsigned line,
                             const char *fmt, ...)
{
    if (ip_run_active()) {
        va_list ap;
        va_start(ap, fmt);
        run_error(errnum, file, line, fmt, ap);
        va_end(ap);
        if (status != 0)
            exit(status);
        return;
    }
    NEXT(error_at_line_fn, error_at_line)
    va_list ap;
    va_start(ap, fmt);
    char *s = format(fmt, ap);
    va_end(ap);
    next_error_at_line(0, errnum, file, line, "%s", s ? s : fmt);
    free(s);
    if (status != 0)
        exit(status);
}

IP_EXPORT void vwarn(const char *fmt, va_list ap)
{
    if (ip_run_active()) {
        run_warn(true, fmt, ap);
        return;
    }
    NEXT(vwarn_fn, vwarn)
    next_vwarn(fmt, ap);
}

IP_EXPORT void vwarnx(const char *fmt, va_list ap)
{
    if (ip_run_active()) {
        run_warn(false, fmt, ap);
        return;
    }
    NEXT(vwarn_fn, vwarnx)
    next_vwarnx(fmt, ap);
}

IP_EXPORT void warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vwarn(fmt, ap);
    va_end(ap);
}

IP_EXPORT void warnx(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vwarnx(fmt, ap);
    va_end(ap);
}

IP_EXPORT __attribute__((noreturn)) void verr(int status, const char *fmt, va_list ap)
{
    vwarn(fmt, ap);
    exit(status);
}

IP_EXPORT __attribute__((noreturn)) void verrx(int status, const char *fmt, va_list ap)
{
    vwarnx(fmt, ap);
    exit(status);
}

IP_EXPORT __attribute__((noreturn)) void err(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verr(status, fmt, ap);
}

IP_EXPORT __attribute__((noreturn)) void errx(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verrx(status, fmt, ap);
}

/* ---- the exec family ------------------------------------------------------ */

/* What the child runs: one of the namespace libc's exec functions (looked
 * up before the fork: a child of a threaded process must not take the
 * loader's lock), which returns only on failure. */
struct exec_call {
    int kind; /* EXEC_* */
    void *fn;
    const char *path;
    char *const *argv;
    char *const *envp;
    int fd;
    /* copy mode, for execv and execvp: the context's environment and its
     * PATH (the process's libc would pass on and search the base's) */
    char **environment;
    const char *search_path;
    void *execve_fn;
};

enum { EXEC_VE, EXEC_V, EXEC_VP, EXEC_VPE, EXEC_FVE };

static const char *const exec_names[] = {"execve", "execv", "execvp", "execvpe", "fexecve"};

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);

/* execve of path, as execvp runs it: a file without the magic of a
 * binary (ENOEXEC) is run by /bin/sh. */
static void exec_as_execvp(execve_fn ve, const char *path, char *const argv[], char **env)
{
    ve(path, argv, env);
    if (errno != ENOEXEC)
        return;
    char *script[256];
    size_t n = 0;
    script[n++] = "/bin/sh";
    script[n++] = (char *)path;
    for (size_t i = 1; argv[0] != NULL && argv[i] != NULL && n < 255; i++)
        script[n++] = argv[i];
    script[n] = NULL;
    ve("/bin/sh", script, env);
}

/* execvp with the context's environment and PATH (copy mode); -errno. */
static int exec_in_path(const struct exec_call *c)
{
    execve_fn ve = (execve_fn)c->execve_fn;
    if (c->kind == EXEC_V) {
        ve(c->path, c->argv, c->environment);
        return -errno;
    }
    if (strchr(c->path, '/') != NULL) {
        exec_as_execvp(ve, c->path, c->argv, c->environment);
        return -errno;
    }
    const char *dirs = c->search_path != NULL ? c->search_path : "/bin:/usr/bin";
    bool denied = false;
    char candidate[PATH_MAX];
    for (const char *at = dirs;; at++) {
        const char *end = strchr(at, ':');
        size_t len = end ? (size_t)(end - at) : strlen(at);
        int n = len ? snprintf(candidate, sizeof candidate, "%.*s/%s", (int)len, at, c->path)
                    : snprintf(candidate, sizeof candidate, "%s", c->path);
        if (n > 0 && (size_t)n < sizeof candidate) {
            exec_as_execvp(ve, candidate, c->argv, c->environment);
            if (errno == EACCES)
                denied = true;
            else if (errno != ENOENT && errno != ENOTDIR && errno != ESTALE && errno != ENODEV &&
                     errno != ETIMEDOUT)
                return -errno;
        }
        if (end == NULL)
            break;
        at = end;
    }
    return denied ? -EACCES : -ENOENT;
}

/* Returns only when the exec failed: -errno (this libc's errno, which is
 * not libvlcs's). */
static int run_exec(void *arg)
{
    const struct exec_call *c = arg;
    if (c->environment != NULL)
        return exec_in_path(c);
    switch (c->kind) {
    case EXEC_V:
    case EXEC_VP:
        ((execv_fn)c->fn)(c->path, c->argv);
        break;
    case EXEC_FVE:
        ((fexecve_fn)c->fn)(c->fd, c->argv, c->envp);
        break;
    default:
        ((execve_fn)c->fn)(c->path, c->argv, c->envp);
    }
    return -errno;
}

/* The exec as the thread's place calls for: an instance's in a child, or
 * the process's. */
static void *fns[sizeof exec_names / sizeof *exec_names];

/* Looked up at bind: in a child forked while another thread held the
 * loader's lock, a lookup would never return. */
IP_HIDDEN void ip_end_bind(void)
{
    for (size_t k = 0; k < sizeof fns / sizeof *fns; k++)
        if (__atomic_load_n(&fns[k], __ATOMIC_RELAXED) == NULL)
            __atomic_store_n(&fns[k], ip_next(exec_names[k]), __ATOMIC_RELAXED);
}

static int do_exec(int kind, const char *path, int fd, char *const argv[], char *const envp[])
{
    void *fn = __atomic_load_n(&fns[kind], __ATOMIC_RELAXED);
    if (fn == NULL) {
        fn = ip_next(exec_names[kind]);
        __atomic_store_n(&fns[kind], fn, __ATOMIC_RELAXED);
    }
    if (fn == NULL) {
        errno = ENOSYS;
        return -1;
    }
    struct exec_call c = {kind, fn, path, argv, envp, fd, NULL, NULL, NULL};
    const struct vlcs_ip_api *a = api();
    /* copy mode: the context's environment and PATH, taken here (a child
     * of fork must take no lock), for the variants that pass on environ */
    if (a != NULL && a->env_block != NULL && (kind == EXEC_V || kind == EXEC_VP) &&
        (c.execve_fn = __atomic_load_n(&fns[EXEC_VE], __ATOMIC_RELAXED)) != NULL) {
        c.environment = a->env_block(a->ctx);
        c.search_path = a->env_get(a->ctx, "PATH");
    }
    if (a != NULL && a->exec_instead != NULL) {
        int rc = a->exec_instead(run_exec, &c);
        if (rc < 0) {
            errno = -rc;
            return -1;
        }
    }
    errno = -run_exec(&c); /* this process's exec: a child the program forked, a library's */
    return -1;
}

IP_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    return do_exec(EXEC_VE, path, -1, argv, envp);
}

IP_EXPORT int execv(const char *path, char *const argv[])
{
    return do_exec(EXEC_V, path, -1, argv, NULL);
}

IP_EXPORT int execvp(const char *file, char *const argv[])
{
    return do_exec(EXEC_VP, file, -1, argv, NULL);
}

IP_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    return do_exec(EXEC_VPE, file, -1, argv, envp);
}

IP_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    return do_exec(EXEC_FVE, NULL, fd, argv, envp);
}

/* execl, execlp, execle: their arguments gathered into an argv. */
static char **gather(const char *arg0, va_list ap, char *const **envp)
{
    va_list count;
    va_copy(count, ap);
    size_t n = 1;
    while (arg0 != NULL && va_arg(count, char *) != NULL)
        n++;
    va_end(count);
    char **argv = malloc((n + 1) * sizeof *argv);
    if (argv == NULL)
        return NULL;
    argv[0] = (char *)arg0;
    for (size_t i = 1; arg0 != NULL && i <= n; i++)
        argv[i] = va_arg(ap, char *);
    argv[arg0 != NULL ? n : 0] = NULL;
    if (envp != NULL)
        *envp = va_arg(ap, char *const *);
    return argv;
}

#define EXEC_LIST(name, kind, with_env)                                          \
    IP_EXPORT int name(const char *path, const char *arg0, ...)                  \
    {                                                                            \
        va_list ap;                                                              \
        va_start(ap, arg0);                                                      \
        char *const *envp = NULL;                                                \
        char **argv = gather(arg0, ap, with_env ? &envp : NULL);                 \
        va_end(ap);                                                              \
        if (argv == NULL) {                                                      \
            errno = ENOMEM;                                                      \
            return -1;                                                           \
        }                                                                        \
        int rc = do_exec(kind, path, -1, argv, envp);                            \
        int e = errno;                                                           \
        free(argv);                                                              \
        errno = e;                                                               \
        return rc;                                                               \
    }

EXEC_LIST(execl, EXEC_V, 0)
EXEC_LIST(execlp, EXEC_VP, 0)
EXEC_LIST(execle, EXEC_VE, 1)

/*
 * ip_exec.c - a program's copies of libc's variables, kept in step.
 *
 * A program built as gcc builds by default (-fPIE) reads stdout, optarg,
 * optind, environ, tzname... from copies in its own data, which ld.so
 * filled when it was loaded (copy relocations); the namespace's libc reads
 * and writes its own.  In a process the copies are the only ones (libc
 * binds to the executable's); a program vlcs loads into a context
 * (vlcs_ctx_exec, ../exec.c) is not the executable, so the two are brought
 * in step around the libc calls that read or write them: the program's
 * values go to libc before the call (a program resetting optind, assigning
 * environ), libc's come back after it.  With no program loaded in this
 * namespace every wrapper is its libc function, one load later.
 */
#define _GNU_SOURCE
#include "ip.h"
#include "ip_run.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <getopt.h>
#include <spawn.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/sendfile.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <time.h>

#define MAX_COPIES 64

static struct vlcs_ip_copy copies[MAX_COPIES];
static size_t ncopies;

/* Given by libvlcs when it loads a program into this namespace; n == 0
 * forgets them (the program is gone). */
IP_EXPORT void vlcs_ip_exec_copies(const struct vlcs_ip_copy *pairs, size_t n)
{
    if (n > MAX_COPIES)
        n = MAX_COPIES;
    __atomic_store_n(&ncopies, 0, __ATOMIC_RELEASE);
    memcpy(copies, pairs, n * sizeof *pairs);
    __atomic_store_n(&ncopies, n, __ATOMIC_RELEASE);
}

static size_t to_libc(void)
{
    size_t n = __atomic_load_n(&ncopies, __ATOMIC_ACQUIRE);
    for (size_t i = 0; i < n; i++)
        memcpy(copies[i].lib, copies[i].program, copies[i].size);
    return n;
}

static void from_libc(size_t n)
{
    for (size_t i = 0; i < n; i++)
        memcpy(copies[i].program, copies[i].lib, copies[i].size);
}

typedef int (*getopt_fn)(int, char *const *, const char *);
typedef int (*getopt_long_fn)(int, char *const *, const char *, const struct option *, int *);
typedef char *(*getenv_fn)(const char *);
typedef int (*setenv_fn)(const char *, const char *, int);
typedef int (*unsetenv_fn)(const char *);
typedef int (*putenv_fn)(char *);
typedef int (*clearenv_fn)(void);
typedef void (*tzset_fn)(void);
typedef struct tm *(*localtime_fn)(const time_t *);
typedef struct tm *(*localtime_r_fn)(const time_t *, struct tm *);
typedef time_t (*mktime_fn)(struct tm *);

/* The wrapped call, with the copies in step on both sides of it. */
#define IN_STEP(type, call)      \
    size_t n_ = to_libc();       \
    type r_ = call;              \
    from_libc(n_);               \
    return r_

/* In a copy-mode run, getopt's place and variables are the run's own
 * (ip_run.c): the process's libc has one place for every instance. */
IP_EXPORT int getopt(int argc, char *const argv[], const char *opts)
{
    if (ip_run_active())
        return ip_run_getopt(argc, argv, opts, NULL, NULL, false, false);
    NEXT(getopt_fn, getopt)
    IN_STEP(int, next_getopt(argc, argv, opts));
}

/* getopt for programs built for POSIX alone (POSIXLY_CORRECT's order) */
IP_EXPORT int __posix_getopt(int argc, char *const argv[], const char *opts)
{
    if (ip_run_active())
        return ip_run_getopt(argc, argv, opts, NULL, NULL, false, true);
    NEXT(getopt_fn, __posix_getopt)
    IN_STEP(int, next___posix_getopt(argc, argv, opts));
}

IP_EXPORT int getopt_long(int argc, char *const argv[], const char *opts,
                          const struct option *longopts, int *index)
{
    if (ip_run_active())
        return ip_run_getopt(argc, argv, opts, longopts, index, false, false);
    NEXT(getopt_long_fn, getopt_long)
    IN_STEP(int, next_getopt_long(argc, argv, opts, longopts, index));
}

IP_EXPORT int getopt_long_only(int argc, char *const argv[], const char *opts,
                               const struct option *longopts, int *index)
{
    if (ip_run_active())
        return ip_run_getopt(argc, argv, opts, longopts, index, true, false);
    NEXT(getopt_long_fn, getopt_long_only)
    IN_STEP(int, next_getopt_long_only(argc, argv, opts, longopts, index));
}

/* Copy mode: the context's own variables (see ../ip_abi.h). */
static const struct vlcs_ip_api *copy_mode(void)
{
    const struct vlcs_ip_api *a = __atomic_load_n(&vlcs_ip, __ATOMIC_ACQUIRE);
    return a != NULL && a->env_get != NULL ? a : NULL;
}

IP_EXPORT char *getenv(const char *name)
{
    const struct vlcs_ip_api *a = copy_mode();
    if (a)
        return a->env_get(a->ctx, name);
    NEXT(getenv_fn, getenv)
    IN_STEP(char *, next_getenv(name));
}

IP_EXPORT char *secure_getenv(const char *name)
{
    const struct vlcs_ip_api *a = copy_mode();
    if (a)
        return getauxval(AT_SECURE) ? NULL : a->env_get(a->ctx, name);
    NEXT(getenv_fn, secure_getenv)
    IN_STEP(char *, next_secure_getenv(name));
}

IP_EXPORT int setenv(const char *name, const char *value, int overwrite)
{
    const struct vlcs_ip_api *a = copy_mode();
    if (a) {
        if (*name == '\0' || strchr(name, '=') != NULL) {
            errno = EINVAL;
            return -1;
        }
        int r = a->env_set(a->ctx, name, value, overwrite);
        ip_run_environ_changed();
        return r;
    }
    NEXT(setenv_fn, setenv)
    IN_STEP(int, next_setenv(name, value, overwrite));
}

IP_EXPORT int unsetenv(const char *name)
{
    const struct vlcs_ip_api *a = copy_mode();
    if (a) {
        if (*name == '\0' || strchr(name, '=') != NULL) {
            errno = EINVAL;
            return -1;
        }
        int r = a->env_set(a->ctx, name, NULL, 1);
        ip_run_environ_changed();
        return r;
    }
    NEXT(unsetenv_fn, unsetenv)
    IN_STEP(int, next_unsetenv(name));
}

IP_EXPORT int putenv(char *string)
{
    const struct vlcs_ip_api *a = copy_mode();
    if (a) {
        int r = a->env_put(a->ctx, string);
        ip_run_environ_changed();
        return r;
    }
    NEXT(putenv_fn, putenv)
    IN_STEP(int, next_putenv(string));
}

IP_EXPORT int clearenv(void)
{
    const struct vlcs_ip_api *a = copy_mode();
    if (a) {
        int r = a->env_clear(a->ctx);
        ip_run_environ_changed();
        return r;
    }
    NEXT(clearenv_fn, clearenv)
    IN_STEP(int, next_clearenv());
}

IP_EXPORT void tzset(void)
{
    NEXT(tzset_fn, tzset)
    size_t n = to_libc();
    next_tzset();
    from_libc(n);
}

IP_EXPORT struct tm *localtime(const time_t *t)
{
    NEXT(localtime_fn, localtime)
    IN_STEP(struct tm *, next_localtime(t));
}

IP_EXPORT struct tm *localtime_r(const time_t *t, struct tm *out)
{
    NEXT(localtime_r_fn, localtime_r)
    IN_STEP(struct tm *, next_localtime_r(t, out));
}

IP_EXPORT time_t mktime(struct tm *tm)
{
    NEXT(mktime_fn, mktime)
    IN_STEP(time_t, next_mktime(tm));
}

/* The streams a program run in this namespace was given: it may close them
 * (coreutils' close_stdout at exit does), and libvlcs must then not.  They
 * are its thread's descriptors 0, 1 and 2 (the thread has a descriptor
 * table of its own), which it uses directly as a process does. */
static void **run_streams;

IP_EXPORT void vlcs_ip_exec_streams(void **three)
{
    __atomic_store_n(&run_streams, three, __ATOMIC_RELEASE);
}

FILE *ip_run_streams(int i)
{
    void **s = __atomic_load_n(&run_streams, __ATOMIC_ACQUIRE);
    return s != NULL ? (FILE *)s[i] : NULL;
}

typedef int (*fclose_fn)(FILE *);

IP_EXPORT int fclose(FILE *f)
{
    NEXT(fclose_fn, fclose)
    ip_run_closing(f);
    void **s = __atomic_load_n(&run_streams, __ATOMIC_ACQUIRE);
    if (s != NULL)
        for (int i = 0; i < 3; i++)
            if (s[i] == f)
                s[i] = NULL;
    return next_fclose(f);
}

/* system() in a program run here: its shell gets the run's streams as 0, 1
 * and 2 (glibc's own system() spawns without fork handlers, so the child
 * would write to the process's).  Signals are left as they are: the
 * process's dispositions are every instance's. */
IP_EXPORT int system(const char *command)
{
    typedef int (*system_fn)(const char *);
    NEXT(system_fn, system)
    void **s = __atomic_load_n(&run_streams, __ATOMIC_ACQUIRE);
    if (s == NULL)
        return next_system(command);
    if (command == NULL)
        return 1; /* a shell is there */
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa) != 0)
        return -1;
    for (int i = 0; i < 3; i++)
        if (s[i] != NULL && fileno((FILE *)s[i]) != i)
            posix_spawn_file_actions_adddup2(&fa, fileno((FILE *)s[i]), i);
    for (int i = 1; i < 3; i++)
        if (s[i] != NULL)
            fflush((FILE *)s[i]);
    pid_t pid;
    int rc = ip_run_shell(&pid, &fa, command);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        return 127 << 8; /* as system() when the shell cannot run */
    return ip_run_wait(pid);
}

/* ---- a program's atexit handlers ------------------------------------------
 * Registered for the program's own code while it runs (its __dso_handle
 * lies in its mapping: atexit, C++ statics first used in main), they are
 * kept here rather than by libc, for libvlcs to run at the instance's end
 * on the instance's thread, where an exit() in one can end the instance
 * (exec.c).  The range is known only once the program is loaded, so what
 * its constructors register at the load (destructors of global C++
 * objects) stays libc's, as do the libraries' own: dlclose runs those. */
struct handler {
    void (*fn)(void *);
    void *arg;
};

static pthread_mutex_t handlers_lock = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t handlers_lo, handlers_hi;
static struct handler *handlers;
static size_t nhandlers, handlers_cap;

IP_EXPORT void vlcs_ip_exec_handlers(uintptr_t lo, uintptr_t hi)
{
    pthread_mutex_lock(&handlers_lock);
    handlers_lo = lo;
    handlers_hi = hi;
    nhandlers = 0;
    if (hi == 0) {
        free(handlers);
        handlers = NULL;
        handlers_cap = 0;
    }
    pthread_mutex_unlock(&handlers_lock);
}

/* The last registered handler, taken off the list (a handler that exits
 * is not run again); 0 when none is left. */
IP_EXPORT int vlcs_ip_exec_next_handler(void (**fn)(void *), void **arg)
{
    pthread_mutex_lock(&handlers_lock);
    int found = nhandlers > 0;
    if (found) {
        *fn = handlers[nhandlers - 1].fn;
        *arg = handlers[nhandlers - 1].arg;
        nhandlers--;
    }
    pthread_mutex_unlock(&handlers_lock);
    return found;
}

typedef int (*cxa_atexit_fn)(void (*)(void *), void *, void *);
IP_EXPORT int __cxa_atexit(void (*fn)(void *), void *arg, void *dso)
{
    NEXT(cxa_atexit_fn, __cxa_atexit)
    pthread_mutex_lock(&handlers_lock);
    if ((uintptr_t)dso < handlers_lo || (uintptr_t)dso >= handlers_hi) {
        pthread_mutex_unlock(&handlers_lock);
        return next___cxa_atexit(fn, arg, dso);
    }
    if (nhandlers == handlers_cap) {
        size_t cap = handlers_cap ? 2 * handlers_cap : 32;
        struct handler *more = realloc(handlers, cap * sizeof *more);
        if (more == NULL) {
            pthread_mutex_unlock(&handlers_lock);
            return -1; /* as libc's, out of memory */
        }
        handlers = more;
        handlers_cap = cap;
    }
    handlers[nhandlers++] = (struct handler){fn, arg};
    pthread_mutex_unlock(&handlers_lock);
    return 0;
}


/* ---- children ---------------------------------------------------------------
 * A program's instance waits for its own children: libvlcs keeps those its
 * thread started (fork reaches it through ip_core.c; posix_spawn here) and
 * answers a wait for any child with one of them. */

typedef pid_t (*wait4_fn)(pid_t, int *, int, struct rusage *);

static const struct vlcs_ip_api *api(void) { return __atomic_load_n(&vlcs_ip, __ATOMIC_ACQUIRE); }

IP_EXPORT pid_t wait4(pid_t pid, int *status, int options, struct rusage *ru)
{
    const struct vlcs_ip_api *a = api();
    if (a != NULL) {
        pid_t r = a->wait4(pid, status, options, ru);
        if (r < 0) { /* errno is this libc's own */
            errno = (int)-r;
            return -1;
        }
        return r;
    }
    NEXT(wait4_fn, wait4)
    return next_wait4(pid, status, options, ru);
}

IP_EXPORT pid_t waitpid(pid_t pid, int *status, int options)
{
    return wait4(pid, status, options, NULL);
}

IP_EXPORT pid_t wait(int *status) { return wait4(-1, status, 0, NULL); }

IP_EXPORT pid_t wait3(int *status, int options, struct rusage *ru)
{
    return wait4(-1, status, options, ru);
}

typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                        const posix_spawnattr_t *, char *const[], char *const[]);

#define SPAWN(name)                                                                        \
    IP_EXPORT int name(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa, \
                       const posix_spawnattr_t *attr, char *const argv[],                  \
                       char *const envp[])                                                 \
    {                                                                                      \
        NEXT(spawn_fn, name)                                                               \
        pid_t child = 0;                                                                   \
        int rc = next_##name(&child, file, fa, attr, argv, envp);                          \
        const struct vlcs_ip_api *a = api();                                               \
        if (rc == 0 && a != NULL)                                                          \
            a->child_started(child);                                                       \
        if (rc == 0 && pid != NULL)                                                        \
            *pid = child;                                                                  \
        return rc;                                                                         \
    }

SPAWN(posix_spawn)
SPAWN(posix_spawnp)

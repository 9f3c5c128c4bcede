/* object_syms.c, compiled in: a symbol read from one object's own hash
 * table must be what dlsym finds in that object, for every kind of symbol
 * glibc exports (functions, data, several versions of one name, IFUNCs,
 * TLS) and C++'s unique symbols, in the base and in a namespace of its
 * own, and an object without a GNU hash table must still be answered. */
#define _GNU_SOURCE
#include "check.h"
#include "object_syms.h"

#include <dlfcn.h>
#include <link.h>

static struct link_map *map_of(void *h)
{
    struct link_map *lm = NULL;
    CHECK(h != NULL && dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm != NULL, "%s", dlerror());
    return lm;
}

/* libc's names of every kind: plain functions and data, default versions
 * of names with several (sched_getaffinity, pthread_cond_wait, memcpy,
 * realpath), IFUNCs (memcpy, strlen, strchr), glibc's private exports */
static const char *const names[] = {
    "getenv", "setenv", "unsetenv", "fflush", "pthread_create", "pthread_join", "sigaction",
    "signal", "sysv_signal", "kill", "raise", "setitimer", "getitimer", "alarm", "timer_create",
    "setpgid", "execve", "execv", "execvp", "execvpe", "fexecve", "dlerror", "dlopen", "abort",
    "fork", "pthread_exit", "pthread_cancel", "pthread_detach", "__environ", "environ", "stdin",
    "stdout", "stderr", "__ctype_init", "_IO_enable_locks", "sched_getaffinity",
    "pthread_cond_wait", "realpath", "memcpy", "strlen", "strchr", "optarg", "__libc_single_threaded",
};

static void compare(Lmid_t lmid, void *handle, const char *where)
{
    struct link_map *lm = map_of(handle);
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        void *want = dlsym(handle, names[i]);
        CHECK(want != NULL, "libc %s has %s", where, names[i]);
        CHECK(object_sym(lmid, lm, names[i]) == want, "%s in libc %s: %p, dlsym %p", names[i],
              where, object_sym(lmid, lm, names[i]), want);
    }
    CHECK(object_sym(lmid, lm, "vlcs_no_such_symbol") == NULL, "a name libc lacks (%s)", where);
    /* dlsym of a handle also searches its dependencies; this looks in the
     * object alone: ld.so's own functions are not libc's */
    CHECK(dlsym(handle, "__tls_get_addr") != NULL, "ld.so's, through libc's handle");
    CHECK(object_sym(lmid, lm, "__tls_get_addr") == NULL, "ld.so's are not libc's (%s)", where);
    CHECK(object_sym(lmid, NULL, "getenv") == NULL && object_sym(lmid, lm, NULL) == NULL, "NULL");
}

int main(void)
{
    void *libc = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY);
    compare(LM_ID_BASE, libc, "in the base");

    /* a namespace's own libc, loaded at another address */
    void *ns = dlmopen(LM_ID_NEWLM, "libm.so.6", RTLD_NOW);
    CHECK(ns != NULL, "%s", dlerror());
    Lmid_t lmid;
    CHECK_EQ(0, dlinfo(ns, RTLD_DI_LMID, &lmid), "its namespace");
    void *ns_libc = dlmopen(lmid, "libc.so.6", RTLD_NOLOAD | RTLD_LAZY);
    CHECK(ns_libc != NULL && map_of(ns_libc)->l_addr != map_of(libc)->l_addr, "a libc of its own");
    compare(lmid, ns_libc, "in a namespace");
    CHECK(object_sym(lmid, map_of(ns_libc), "getenv") != dlsym(libc, "getenv"), "not the base's");

    /* a unique symbol of C++'s (one definition per namespace): dlsym's */
    void *cxx = dlopen("libstdc++.so.6", RTLD_NOW);
    CHECK(cxx != NULL, "%s", dlerror());
    const char *unique = "_ZNSs4_Rep11_S_max_sizeE";
    CHECK(dlsym(cxx, unique) != NULL &&
              object_sym(LM_ID_BASE, map_of(cxx), unique) == dlsym(cxx, unique),
          "a unique symbol");

    /* without a GNU hash table: answered by dlsym */
    void *sysv = dlopen(SYSV_HASH_LIB, RTLD_NOW);
    CHECK(sysv != NULL, "%s", dlerror());
    CHECK(object_sym(LM_ID_BASE, map_of(sysv), "singleton_bump") == dlsym(sysv, "singleton_bump"),
          "a library with a SysV hash table");
    CHECK(object_sym(LM_ID_BASE, map_of(sysv), "vlcs_no_such_symbol") == NULL, "and a name it lacks");
    puts("ok");
    return 0;
}

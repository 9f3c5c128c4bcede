/* A service added while contexts exist reaches each of their namespaces,
 * whatever vlcs made before: a service's forwarder is named in ld.so's link
 * maps by its descriptor's number, and a number given back and taken again
 * by a later file would make ld.so take the new file for the old one.  A
 * namespace's first object, the interposer's copy, is named by the
 * interposer's file. */
#define _GNU_SOURCE
#include "check.h"

#include <dlfcn.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef int (*bump_fn)(void);

int main(void)
{
    CHECK_EQ(0, vlcs_init(), "init");
    /* a first service: every namespace made from now on starts from a
     * generated object that names its forwarder */
    CHECK(vlcs_service_add(DLOPENER_LIB) == 0, "a first service: %s", vlcs_error());
    vlcs_ctx *old = vlcs_ctx_create("old");
    CHECK_EQ(0, vlcs_ctx_set_mode(old, VLCS_MODE_NAMESPACE), vlcs_error());
    void *p = vlcs_ctx_load(old, PROBE_LIB);
    CHECK(p != NULL, "a namespace made with the first service: %s", vlcs_error());
    /* the namespace's first object is the interposer's copy that names the
     * service's forwarder (ns_root.c), named in the link map by the
     * interposer's file: what a debugger reads its symbols from */
    struct link_map *lm = NULL;
    CHECK_EQ(0, dlinfo(p, RTLD_DI_LINKMAP, &lm), "its link map");
    while (lm->l_prev != NULL)
        lm = lm->l_prev;
    const char *slash = strrchr(lm->l_name, '/');
    CHECK(slash != NULL && strcmp(slash + 1, "libvlcs_interpose.so") == 0,
          "the first object is the interposer: %s", lm->l_name);
    CHECK(access(lm->l_name, R_OK) == 0, "its name is a file: %s", lm->l_name);
    bool names_forwarder = false;
    for (struct link_map *o = lm->l_next; o != NULL; o = o->l_next) {
        char link[64], target[256] = "";
        int pid = 0, fd = -1;
        if (sscanf(o->l_name, "/proc/%d/fd/%d", &pid, &fd) != 2 || pid != getpid())
            continue;
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, target, sizeof target - 1);
        target[n > 0 ? n : 0] = '\0';
        names_forwarder |= strstr(target, "vlcs-forwarder") != NULL;
    }
    CHECK(names_forwarder, "the service's forwarder is loaded by its descriptor, still open");

    /* a second service, made after that namespace: its forwarder is loaded
     * into it */
    CHECK(vlcs_service_add(SINGLETON_LIB) == 0, "a second service: %s", vlcs_error());
    bump_fn base_bump = (bump_fn)dlsym(RTLD_DEFAULT, "singleton_bump");
    CHECK(base_bump != NULL, "the service is in the base");
    void *u = vlcs_ctx_load(old, USES_SINGLETON_LIB);
    CHECK(u != NULL, "a library that needs the second service: %s", vlcs_error());
    CHECK_EQ(1, base_bump(), "base");
    CHECK_EQ(2, SYM(u, bump_fn, "uses_bump")(), "the older namespace reaches the one copy");

    vlcs_ctx *young = vlcs_ctx_create("young");
    void *y = vlcs_ctx_load(young, USES_SINGLETON_LIB);
    CHECK(y != NULL, "a namespace made after both: %s", vlcs_error());
    CHECK_EQ(3, SYM(y, bump_fn, "uses_bump")(), "and a new one too");
    CHECK_EQ(1, SYM(p, bump_fn, "probe_bump")(), "the first library works");
    vlcs_ctx_destroy(young);
    vlcs_ctx_destroy(old);
    PASS("a service added later reaches older namespaces");
    return 0;
}

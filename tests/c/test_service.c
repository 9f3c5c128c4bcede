/* The Service context: a library added as a service exists once; its
 * dependants loaded in contexts bind to that one copy (functions and data),
 * where without it each context would get a copy of its own. */
#define _GNU_SOURCE
#include "check.h"

#include <dlfcn.h>

typedef int (*bump_fn)(void);
typedef int *(*addr_fn)(void);

int main(void)
{
    /* Without a service: each context has its own singleton. */
    vlcs_ctx *p = vlcs_ctx_create("private");
    void *pu = must_load(p, USES_SINGLETON_LIB);
    CHECK_EQ(1, SYM(pu, bump_fn, "uses_bump")(), "a private copy starts at 1");

    CHECK_EQ(0, vlcs_service_add(SINGLETON_LIB), "add the service");
    CHECK_EQ(0, vlcs_service_add(SINGLETON_LIB), "adding twice is fine");
    void *base = dlopen(SINGLETON_LIB, RTLD_NOW | RTLD_NOLOAD);
    CHECK(base != NULL, "the service lives in the base");
    bump_fn base_bump = (bump_fn)dlsym(base, "singleton_bump");
    int *base_value = ((addr_fn)dlsym(base, "singleton_value_addr"))();

    vlcs_ctx *a = vlcs_ctx_create("a"), *b = vlcs_ctx_create("b");
    void *ua = must_load(a, USES_SINGLETON_LIB), *ub = must_load(b, USES_SINGLETON_LIB);
    CHECK(ua != ub, "the dependant itself has a copy per context");
    CHECK_EQ(1, base_bump(), "base call 1");
    CHECK_EQ(2, SYM(ua, bump_fn, "uses_bump")(), "a's call reaches the one copy");
    CHECK_EQ(3, SYM(ub, bump_fn, "uses_bump")(), "b's call reaches the one copy");
    CHECK_EQ(4, base_bump(), "base again");
    CHECK(SYM(ua, addr_fn, "uses_value_addr")() == base_value, "data: a sees the base object");
    CHECK(SYM(ub, addr_fn, "uses_value_addr")() == base_value, "data: b sees the base object");
    CHECK_EQ(41, *SYM(ub, addr_fn, "uses_value_addr")(), "value");

    /* A library that uses the service without naming it (a plugin, a Python
     * extension module) finds it in the namespace's global scope. */
    void *pa = must_load(a, PLUGIN_SINGLETON_LIB);
    CHECK_EQ(5, SYM(pa, bump_fn, "plugin_bump")(), "the plugin reaches the one copy");

    /* A context whose namespace existed before the service was added: its
     * private copy stays, and a plugin there cannot see the service. */
    CHECK_EQ(2, SYM(pu, bump_fn, "uses_bump")(), "the earlier private copy is untouched");

    CHECK_ERR(vlcs_service_add("libno-such-service.so.1"), "libno-such-service.so.1");
    PASS("service");
    return 0;
}

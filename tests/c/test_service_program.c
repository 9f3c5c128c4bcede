/* The program as a service: a program that carries a library inside itself
 * (as a CPython linked with libpython statically does) stands in for that
 * library in every context.  This program is built with lib/singleton.c
 * compiled in and its symbols exported: dependants loaded into contexts,
 * naming the library's soname or nothing at all, bind to the program's one
 * copy, and the forwarder carries only the names asked for. */
#define _GNU_SOURCE
#include "check.h"

#include <dlfcn.h>

typedef int (*bump_fn)(void);
typedef int *(*addr_fn)(void);

int singleton_bump(void);
int *singleton_value_addr(void);
/* Exported by the program too, but not one of the library's names. */
int program_other(void) { return 7; }

int main(void)
{
    CHECK_ERR(vlcs_service_add_program("", "singleton_"), "soname must be a file name");
    CHECK_EQ(VLCS_E_INVALID, vlcs_errcode(), "empty soname");
    CHECK_ERR(vlcs_service_add_program("/lib/libvlcs_singleton.so", "singleton_"),
              "soname must be a file name");
    char long_name[300];
    memset(long_name, 'l', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    CHECK_ERR(vlcs_service_add_program(long_name, "singleton_"), "under 256 bytes");
    CHECK_ERR(vlcs_service_add_program("libvlcs_singleton.so", ",,"), "prefixes name nothing");
    CHECK_EQ(VLCS_E_INVALID, vlcs_errcode(), "prefixes");
    CHECK_ERR(vlcs_service_add_program("libvlcs_singleton.so", "no_such_prefix_"),
              "exports no symbol whose name begins with no_such_prefix_");
    CHECK_EQ(VLCS_E_NOT_FOUND, vlcs_errcode(), "nothing to forward");

    /* Base code loaded a CUDA runtime RTLD_GLOBAL (as torch's global deps
     * do): the program's handle finds its symbols, but it is not the
     * service, and entering a context with GPUs must leave it alone. */
    void *cudart = dlopen(FAKE_CUDART_LIB, RTLD_NOW | RTLD_GLOBAL);
    CHECK(cudart != NULL, "the stand-in CUDA runtime loads: %s", dlerror());
    int (*get_device)(int *) = (int (*)(int *))dlsym(cudart, "cudaGetDevice");

    CHECK_EQ(0, vlcs_service_add_program("libvlcs_singleton.so", "singleton_"), "add the program");
    CHECK_EQ(0, vlcs_service_add_program("libvlcs_singleton.so", "singleton_"), "twice is fine");
    CHECK(dlopen(SINGLETON_LIB, RTLD_NOW | RTLD_NOLOAD) == NULL,
          "the library's own file is never loaded");

    vlcs_ctx *a = vlcs_ctx_create("a"), *b = vlcs_ctx_create("b");
    void *ua = must_load(a, USES_SINGLETON_LIB), *ub = must_load(b, USES_SINGLETON_LIB);
    CHECK(ua != ub, "the dependant itself has a copy per context");
    CHECK_EQ(1, singleton_bump(), "the program's call 1");
    CHECK_EQ(2, SYM(ua, bump_fn, "uses_bump")(), "a's dependant reaches the program's copy");
    CHECK_EQ(3, SYM(ub, bump_fn, "uses_bump")(), "b's too");
    CHECK_EQ(4, singleton_bump(), "the program again");
    CHECK(SYM(ua, addr_fn, "uses_value_addr")() == singleton_value_addr(),
          "data: a sees the program's object");
    CHECK_EQ(41, *SYM(ub, addr_fn, "uses_value_addr")(), "value");

    /* Naming nothing (as extension modules name no libpython): the global scope. */
    void *pa = must_load(a, PLUGIN_SINGLETON_LIB);
    CHECK_EQ(5, SYM(pa, bump_fn, "plugin_bump")(), "a plugin reaches the program's copy");

    /* The soname in a context is the forwarder, holding the prefixed names only. */
    void *fwd = vlcs_ctx_load(b, "libvlcs_singleton.so");
    CHECK(fwd != NULL, "the soname resolves in a context");
    CHECK(vlcs_ctx_sym(fwd, "singleton_bump") == (void *)singleton_bump, "function forwarded");
    CHECK(vlcs_ctx_sym(fwd, "program_other") == NULL, "another name of the program is not");
    CHECK(vlcs_ctx_sym(fwd, "stderr") == NULL, "nor the C library's data it holds (copy-relocated)");
    CHECK_EQ(7, program_other(), "the program's own");

    int dev = -1;
    CHECK_EQ(0, vlcs_ctx_set_gpus(a, "3"), "a GPU for a");
    CHECK_EQ(0, vlcs_enter(a), "enter a");
    get_device(&dev);
    CHECK_EQ(0, vlcs_leave(), "leave a");
    CHECK_EQ(0, dev, "the base's CUDA runtime was not taken for the program service's");
    PASS("service_program");
    return 0;
}

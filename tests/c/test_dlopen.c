/* dlopen called by a library inside a context: into the context's own
 * namespace, searched through the calling library's RUNPATH, and with
 * RTLD_GLOBAL (which crashes glibc inside a dlmopen namespace) working. */
#define _GNU_SOURCE
#include "check.h"

#include <dlfcn.h>

typedef void *(*open_fn)(const char *, int);
typedef const char *(*err_fn)(void);
typedef int (*get_fn)(void);

int main(void)
{
    vlcs_ctx *a = vlcs_ctx_create("a"), *b = vlcs_ctx_create("b");
    void *oa = must_load(a, DLOPENER_LIB), *ob = must_load(b, DLOPENER_LIB);
    open_fn open_a = SYM(oa, open_fn, "dlopener_open"), open_b = SYM(ob, open_fn, "dlopener_open");

    /* Found only through the opener's RUNPATH: the caller's identity reached libc. */
    void *local = open_a("libvlcs_runpath_target.so", 0);
    CHECK(local != NULL, "RTLD_LOCAL by RUNPATH: %s", SYM(oa, err_fn, "dlopener_error")());
    void *global = open_b("libvlcs_runpath_target.so", 1);
    CHECK(global != NULL, "RTLD_GLOBAL by RUNPATH: %s", SYM(ob, err_fn, "dlopener_error")());
    CHECK(local != global, "each context opened its own copy");

    Lmid_t la = -1, lb = -1;
    void *ha = vlcs_ctx_load(a, "libc.so.6"), *hb = vlcs_ctx_load(b, "libc.so.6");
    CHECK(ha && hb, "namespace libcs");
    dlinfo(ha, RTLD_DI_LMID, &la);
    dlinfo(hb, RTLD_DI_LMID, &lb);
    Lmid_t l_local = -2, l_global = -2;
    dlinfo(local, RTLD_DI_LMID, &l_local);
    dlinfo(global, RTLD_DI_LMID, &l_global);
    CHECK_EQ(la, l_local, "the library opened in a is in a's namespace");
    CHECK_EQ(lb, l_global, "the library opened in b is in b's namespace");

    /* A missing library is an ordinary dlopen error, the context unharmed. */
    CHECK(open_a("libvlcs-no-such-lib.so", 1) == NULL, "missing library");
    CHECK(strstr(SYM(oa, err_fn, "dlopener_error")(), "libvlcs-no-such-lib.so") != NULL,
          "dlerror names it");
    CHECK(open_a("libvlcs_runpath_target.so", 1) != NULL, "the context still opens libraries");
    PASS("dlopen");
    return 0;
}

/* The table of forged files reaches every door: for each row of
 * vlcs_view_file(), a library in a context that opens the row's example
 * path through libc (the interposer) gets a forged file, and so does one
 * that opens it with raw syscalls once strict mode is on (`--strict`, a
 * process of its own: filters cannot be removed).  Base code gets the real
 * file in both.  Python's open(), the third door, is tested in
 * tests/python/test_process_view.py from the same table. */
#define _GNU_SOURCE
#define VLCS_INTERNAL_API /* vlcs_view_file */
#include "check.h"

#include <dlfcn.h>
#include <unistd.h>

typedef int (*name_fn)(const char *, char *, size_t);
typedef int (*raw_name_fn)(const char *, char *, int);

static int forged(const char *name) { return strncmp(name, "/memfd:vlcs-", 12) == 0; }

int main(int argc, char **argv)
{
    int strict = argc > 1 && strcmp(argv[1], "--strict") == 0;
    if (strict) {
        vlcs_opts o = {.size = sizeof o, .strict = 1};
        if (vlcs_init_opts(&o) != 0 && vlcs_errcode() == VLCS_E_UNSUPPORTED) {
            printf("SKIP: %s\n", vlcs_error());
            return 77;
        }
        CHECK_EQ(1, vlcs_strict_active(), "strict mode is on");
    }
    CHECK_EQ(0, vlcs_init(), "init");
    strict = vlcs_strict_active(); /* VLCS_STRICT=1 turns it on for the plain run too */
    vlcs_ctx *c = vlcs_ctx_create("forged");
    CHECK_EQ(0, vlcs_ctx_set_cpus(c, "0"), "set CPUs");
    name_fn in_ctx = SYM(must_load(c, PROBE_LIB), name_fn, "probe_open_name");
    raw_name_fn raw_in_ctx = SYM(must_load(c, RAWSYS_LIB), raw_name_fn, "raw_open_name");
    void *base_probe = dlopen(PROBE_LIB, RTLD_NOW), *base_raw = dlopen(RAWSYS_LIB, RTLD_NOW);
    CHECK(base_probe != NULL && base_raw != NULL, "the probes load in the base: %s", dlerror());
    name_fn in_base = (name_fn)dlsym(base_probe, "probe_open_name");
    raw_name_fn raw_in_base = (raw_name_fn)dlsym(base_raw, "raw_open_name");

    unsigned long rows = 0;
    const char *example = NULL, *prefix;
    while ((prefix = vlcs_view_file(rows, &example)) != NULL) {
        CHECK(example != NULL && strncmp(example, prefix, strlen(prefix)) == 0,
              "row %lu: its example %s starts with its prefix %s", rows, example, prefix);
        char name[256];
        CHECK_EQ(0, in_ctx(example, name, sizeof name), example);
        CHECK(forged(name), "libc's open of %s in the context is forged: %s", example, name);
        CHECK_EQ(0, in_base(example, name, sizeof name), example);
        CHECK(!forged(name), "the base opens the real %s: %s", example, name);
        CHECK_EQ(0, raw_in_base(example, name, (int)sizeof name), example);
        CHECK(!forged(name), "the base's raw open of %s is real: %s", example, name);
        CHECK_EQ(0, raw_in_ctx(example, name, (int)sizeof name), example);
        if (strict)
            CHECK(forged(name), "strict mode's trap forges the raw open of %s: %s", example,
                  name);
        else
            CHECK(!forged(name), "without strict mode a raw open of %s is real: %s", example,
                  name);
        rows++;
    }
    CHECK(rows >= 5, "the table has its rows (cpuinfo, status, online/present/possible): %lu",
          rows);
    CHECK(vlcs_view_file(rows, NULL) == NULL, "past the last row: NULL");
    /* Under strict mode the namespace stays (its filters cannot go): 1. */
    CHECK_EQ(strict ? 1 : 0, vlcs_ctx_destroy(c), "destroy");
    PASS(strict ? "every forged file through libc and strict mode's trap"
                : "every forged file through libc");
    return 0;
}

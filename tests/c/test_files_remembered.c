/* Copy mode remembers where it found each library and holds its file: a
 * later context loading the same library asks the file system nothing,
 * and keeps getting that file even after its path names another (as
 * Python's finders do until importlib.invalidate_caches()).  After
 * vlcs_invalidate_caches() the next load looks again and gets the new
 * file; contexts that loaded the old one keep working. */
#define _GNU_SOURCE
#include "check.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int (*int_fn)(void);

/* src's bytes as a new file at dst (a new inode, as an upgrade makes) */
static void put(const char *src, const char *dst)
{
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s.new", dst);
    FILE *in = fopen(src, "rb"), *out = fopen(tmp, "wb");
    CHECK(in != NULL && out != NULL, "copy %s", src);
    char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        CHECK(fwrite(buf, 1, n, out) == n, "write %s", tmp);
    fclose(in);
    CHECK_EQ(0, fclose(out), "close");
    CHECK_EQ(0, rename(tmp, dst), "rename over the library");
}

static void *load_copy(const char *name, const char *path)
{
    vlcs_ctx *c = vlcs_ctx_create(name);
    CHECK(c != NULL, "create %s", name);
    CHECK_EQ(0, vlcs_ctx_set_mode(c, VLCS_MODE_COPIES), vlcs_error());
    void *h = vlcs_ctx_load(c, path);
    CHECK(h != NULL, "%s loads %s: %s", name, path, vlcs_error());
    return h;
}

int main(void)
{
    CHECK_EQ(0, vlcs_init(), "init");
    char dir[] = "/tmp/vlcs-remembered-XXXXXX", path[512];
    CHECK(mkdtemp(dir) != NULL, "a folder");
    snprintf(path, sizeof path, "%s/libswap.so", dir);
    put(PROBE_LIB, path);

    void *a = load_copy("a", path);
    CHECK(vlcs_ctx_sym(a, "probe_bump") != NULL, "the first file");

    put(SINGLETON_LIB, path); /* the path now names another library */
    void *b = load_copy("b", path);
    CHECK(vlcs_ctx_sym(b, "probe_bump") != NULL, "the file held, until the caches are invalidated");
    CHECK(vlcs_ctx_sym(b, "singleton_bump") == NULL, "not the new one yet");

    CHECK_EQ(0, vlcs_invalidate_caches(), "vlcs_invalidate_caches");
    void *c = load_copy("c", path);
    CHECK(vlcs_ctx_sym(c, "singleton_bump") != NULL, "the new file: %s", vlcs_error());
    CHECK_EQ(1, SYM(c, int_fn, "singleton_bump")(), "and it runs");
    CHECK_EQ(1, SYM(a, int_fn, "probe_bump")(), "the old file's copies still run");
    CHECK_EQ(1, SYM(b, int_fn, "probe_bump")(), "each its own");

    unlink(path);
    rmdir(dir);
    PASS("copy mode remembers what it found until vlcs_invalidate_caches()");
    return 0;
}

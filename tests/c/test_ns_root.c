/* A namespace starts from vlcs's interposer itself: a copy of it that names
 * the namespace's libc by a descriptor of the base's libc file (no search
 * by name), named in the link map by the interposer's file.  An interposer
 * without the room for those names (another linker, a file whose room was
 * renamed away) starts its namespaces from a generated object instead, and
 * they work the same.
 *
 *   test_ns_root             the copy, then this program again on a
 *                            renamed interposer
 *   test_ns_root generated   (that second run) */
#define _GNU_SOURCE
#include "check.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

typedef int (*count_fn)(void);

/* The first object of the namespace holding `handle`. */
static struct link_map *first_object(void *handle)
{
    struct link_map *lm = NULL;
    CHECK_EQ(0, dlinfo(handle, RTLD_DI_LINKMAP, &lm), "a link map");
    while (lm->l_prev != NULL)
        lm = lm->l_prev;
    return lm;
}

/* The namespace's libc, by the name it has in the link map. */
static struct link_map *libc_of(struct link_map *first)
{
    for (struct link_map *o = first; o != NULL; o = o->l_next) {
        const char *slash = strrchr(o->l_name, '/');
        if (slash != NULL && strcmp(slash + 1, "libc.so.6") == 0)
            return o;
    }
    return NULL;
}

/* The target of /proc/PID/fd/N, or "" for another name. */
static void fd_target(const char *name, char *out, size_t size)
{
    int pid = 0, fd = -1;
    out[0] = '\0';
    if (sscanf(name, "/proc/%d/fd/%d", &pid, &fd) != 2 || pid != getpid())
        return;
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, out, size - 1);
    out[n > 0 ? n : 0] = '\0';
}

/* Whether one of the loaded object's DT_NEEDED names is a descriptor of
 * the file `real`. */
static bool needs_by_descriptor(const struct link_map *lm, const char *real)
{
    const char *strtab = NULL;
    for (const ElfW(Dyn) *d = lm->l_ld; d->d_tag != DT_NULL; d++)
        if (d->d_tag == DT_STRTAB)
            strtab = (const char *)d->d_un.d_ptr;
    for (const ElfW(Dyn) *d = lm->l_ld; strtab != NULL && d->d_tag != DT_NULL; d++) {
        char target[PATH_MAX];
        if (d->d_tag == DT_NEEDED)
            fd_target(strtab + d->d_un.d_val, target, sizeof target);
        if (d->d_tag == DT_NEEDED && strcmp(target, real) == 0)
            return true;
    }
    return false;
}

/* 0 when addr lies in a map of the file `path` (/proc/self/maps). */
static int mapped_from(const void *addr, const char *path)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[PATH_MAX + 128];
    int found = -1;
    while (f != NULL && found < 0 && fgets(line, sizeof line, f) != NULL) {
        unsigned long lo = 0, hi = 0;
        int name = 0;
        if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &name) < 2 || name == 0)
            continue;
        line[strcspn(line, "\n")] = '\0';
        if ((uintptr_t)addr >= lo && (uintptr_t)addr < hi)
            found = strcmp(line + name, path) == 0 ? 0 : 1;
    }
    if (f != NULL)
        fclose(f);
    return found == 0 ? 0 : -1;
}

/* A context in a namespace of its own runs the probe with its own CPU. */
static struct link_map *namespace_works(const char *name, int cpu)
{
    vlcs_ctx *c = vlcs_ctx_create(name);
    CHECK(c != NULL, "create: %s", vlcs_error());
    char cpus[16];
    snprintf(cpus, sizeof cpus, "%d", cpu);
    CHECK_EQ(0, vlcs_ctx_set_cpus(c, cpus), vlcs_error());
    CHECK_EQ(0, vlcs_ctx_set_mode(c, VLCS_MODE_NAMESPACE), vlcs_error());
    void *p = vlcs_ctx_load(c, PROBE_LIB);
    CHECK(p != NULL, "load the probe: %s", vlcs_error());
    count_fn affinity = (count_fn)dlsym(p, "probe_sched_getaffinity");
    CHECK(affinity != NULL, "probe_sched_getaffinity: %s", dlerror());
    CHECK_EQ(1, affinity(), "the context sees its one CPU");
    return first_object(p);
}

/* The interposer's file with its room's name changed: no room found. */
static void write_without_room(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb");
    CHECK(in != NULL, "open %s", from);
    struct stat st;
    CHECK_EQ(0, fstat(fileno(in), &st), "stat the interposer");
    char *img = malloc((size_t)st.st_size);
    CHECK(img != NULL && fread(img, 1, (size_t)st.st_size, in) == (size_t)st.st_size, "read it");
    fclose(in);
    const char room[] = "vlcs_ip_needed"; /* VLCS_IP_NEEDED_SYMBOL, src/ip_abi.h */
    size_t renamed = 0;
    for (char *at = img; (at = memmem(at, (size_t)(img + st.st_size - at), room,
                                      sizeof room)) != NULL; at += sizeof room) {
        at[sizeof room - 2] = '_';
        renamed++;
    }
    CHECK(renamed > 0, "the interposer names its room %s", room);
    FILE *out = fopen(to, "wb");
    CHECK(out != NULL && fwrite(img, 1, (size_t)st.st_size, out) == (size_t)st.st_size,
          "write %s", to);
    fclose(out);
    free(img);
}

int main(int argc, char **argv)
{
    bool generated = argc > 1 && strcmp(argv[1], "generated") == 0;
    CHECK_EQ(0, vlcs_init(), "init");
    void *base_libc = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY);
    struct link_map *base_lm = NULL;
    CHECK(base_libc != NULL && dlinfo(base_libc, RTLD_DI_LINKMAP, &base_lm) == 0,
          "the base's libc");

    struct link_map *first = namespace_works("a", 0);
    namespace_works("b", 1);
    struct link_map *libc = libc_of(first);
    CHECK(libc != NULL && strcmp(libc->l_name, base_lm->l_name) == 0,
          "the namespace's libc is the base's file: %s", libc ? libc->l_name : "(none)");
    char target[256];
    fd_target(first->l_name, target, sizeof target);
    if (!generated) {
        const char *slash = strrchr(first->l_name, '/');
        CHECK(slash != NULL && strcmp(slash + 1, "libvlcs_interpose.so") == 0,
              "the first object is the interposer: %s", first->l_name);
        char real[PATH_MAX];
        CHECK(realpath(base_lm->l_name, real) != NULL && needs_by_descriptor(first, real),
              "it names libc by a descriptor of the base's file (%s)", real);

        /* its code is the interposer file's own pages: what a profiler
         * reading /proc/PID/maps names */
        void *wrapper = dlsym(vlcs_ctx_load(vlcs_ctx_create("c"), PROBE_LIB), "sched_getaffinity");
        CHECK(wrapper != NULL, "the interposer's sched_getaffinity: %s", dlerror());
        CHECK(mapped_from(wrapper, real) == 0 || mapped_from(wrapper, first->l_name) == 0,
              "the interposer's code is mapped from its file");

        char dir[] = "/tmp/vlcs-ns-root-XXXXXX", path[64];
        CHECK(mkdtemp(dir) != NULL, "a folder");
        snprintf(path, sizeof path, "%s/libvlcs_interpose.so", dir);
        write_without_room(first->l_name, path);
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            setenv("VLCS_INTERPOSER", path, 1);
            execl("/proc/self/exe", argv[0], "generated", (char *)NULL);
            _exit(127);
        }
        int status = -1;
        CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "the second run");
        unlink(path);
        rmdir(dir);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "without the room, namespaces start from a generated object (status %d)", status);
    } else {
        CHECK(strstr(target, "vlcs-root") != NULL,
              "without the room the first object is generated: %s -> %s", first->l_name, target);
    }
    /* the base is untouched: its libc is the one it started with */
    CHECK(dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY) == base_libc, "the base's libc");
    PASS(generated ? "an interposer without room: a generated first object"
                   : "a namespace starts from the interposer, libc by descriptor");
    return 0;
}

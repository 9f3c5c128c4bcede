/* The process's resources that contexts use up: vlcs_room counts them as
 * the kernel does, and a load that would leave the process without memory
 * maps or descriptors is refused before anything is mapped, naming the
 * resource and the remedy, while the process and the other contexts go
 * on working. */
#define _GNU_SOURCE
#include "check.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

typedef int (*int_fn)(void);
typedef int (*int_fn2)(int);

static long lines_of_maps(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    long n = 0;
    for (int ch; (ch = fgetc(f)) != EOF;)
        n += ch == '\n';
    fclose(f);
    return n;
}

static unsigned long used_of(int resource)
{
    unsigned long used = 0, limit = 0;
    CHECK_EQ(0, vlcs_room(resource, &used, &limit), vlcs_error());
    CHECK(used <= limit, "resource %d: %lu used of %lu", resource, used, limit);
    return used;
}

static pthread_barrier_t started, stop;

static void *waiter(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&started);
    pthread_barrier_wait(&stop);
    return NULL;
}

static vlcs_ctx *copies_with_probe(const char *name, void **lib)
{
    vlcs_ctx *c = vlcs_ctx_create(name);
    CHECK(c != NULL, "create: %s", vlcs_error());
    CHECK_EQ(0, vlcs_ctx_set_mode(c, VLCS_MODE_COPIES), vlcs_error());
    *lib = vlcs_ctx_load(c, PROBE_LIB);
    return c;
}

int main(void)
{
    CHECK_EQ(0, vlcs_init(), "init");

    /* ---- counted as the kernel counts ---- */
    unsigned long used, limit;
    CHECK_EQ(0, vlcs_room(VLCS_LIMIT_MAPS, &used, &limit), vlcs_error());
    long lines = lines_of_maps();
    CHECK(labs((long)used - lines) < 16, "%lu maps counted, /proc/self/maps has %ld", used, lines);
    CHECK(limit >= 1024, "vm.max_map_count read: %lu", limit);

    unsigned long fds = used_of(VLCS_LIMIT_DESCRIPTORS);
    int extra[10];
    for (int i = 0; i < 10; i++)
        extra[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
    CHECK_EQ(fds + 10, used_of(VLCS_LIMIT_DESCRIPTORS), "ten more descriptors");
    for (int i = 0; i < 10; i++)
        close(extra[i]);

    unsigned long threads = used_of(VLCS_LIMIT_THREADS);
    pthread_t t;
    pthread_barrier_init(&started, NULL, 2);
    pthread_barrier_init(&stop, NULL, 2);
    CHECK_EQ(0, pthread_create(&t, NULL, waiter, NULL), "thread");
    pthread_barrier_wait(&started);
    CHECK_EQ(threads + 1, used_of(VLCS_LIMIT_THREADS), "a thread more");
    pthread_barrier_wait(&stop);
    pthread_join(t, NULL);

    unsigned long keys = used_of(VLCS_LIMIT_KEYS);
    vlcs_ctx *k = vlcs_ctx_create("keys");
    CHECK_EQ(0, vlcs_ctx_set_mode(k, VLCS_MODE_COPIES), vlcs_error());
    void *kl = vlcs_ctx_load(k, KEYS_LIB);
    CHECK(kl != NULL, "the keys library: %s", vlcs_error());
    CHECK_EQ(3, SYM(kl, int_fn2, "keys_make")(3), "three keys");
    CHECK_EQ(keys + 3, used_of(VLCS_LIMIT_KEYS), "its keys are counted");

    unsigned long spaces = used_of(VLCS_LIMIT_NAMESPACES);
    vlcs_ctx *ns = vlcs_ctx_create("ns");
    CHECK_EQ(0, vlcs_ctx_set_mode(ns, VLCS_MODE_NAMESPACE), vlcs_error());
    CHECK(vlcs_ctx_load(ns, PROBE_LIB) != NULL, "a namespace: %s", vlcs_error());
    CHECK_EQ(spaces + 1, used_of(VLCS_LIMIT_NAMESPACES), "a namespace more");

    CHECK_ERR(vlcs_room(VLCS_LIMIT_STATIC_TLS, &used, &limit), "none of");
    CHECK_EQ(VLCS_E_INVALID, vlcs_errcode(), "a resource it does not count");

    void *first_lib;
    vlcs_ctx *first = copies_with_probe("first", &first_lib);
    CHECK(first_lib != NULL, "a copy-mode context: %s", vlcs_error());

    /* ---- memory maps: the process fills them itself (one page in two
     * made inaccessible, so that no two merge), up to below the reserve a
     * load must leave, in an address space that grew by more pages than
     * there are maps (what makes vlcs count again) ---- */
    CHECK_EQ(0, vlcs_room(VLCS_LIMIT_MAPS, &used, &limit), vlcs_error());
    unsigned long reserve = limit / 64 < 256 ? 256 : limit / 64;
    size_t page = (size_t)sysconf(_SC_PAGESIZE), pairs = (limit - reserve - used) / 2;
    size_t span = (2 * pairs + limit) * page;
    char *fill = mmap(NULL, span, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    CHECK(fill != MAP_FAILED, "the filling");
    for (size_t i = 0; i < pairs; i++)
        CHECK_EQ(0, mprotect(fill + 2 * i * page, page, PROT_NONE), "a map more");
    void *lib;
    vlcs_ctx *full = copies_with_probe("full", &lib);
    CHECK(lib == NULL, "a load with no maps to spare succeeded");
    CHECK_EQ(VLCS_E_LIMIT, vlcs_errcode(), "a limit");
    CHECK_EQ(VLCS_LIMIT_MAPS, vlcs_errlimit(), "memory maps");
    CHECK(strstr(vlcs_error(), "vm.max_map_count") != NULL && strstr(vlcs_error(), "'full'"),
          "names the limit and the context: %s", vlcs_error());
    printf("%s\n", vlcs_error());
    CHECK_EQ(1, SYM(first_lib, int_fn, "probe_bump")(), "the other context works");
    munmap(fill, span);
    lib = vlcs_ctx_load(full, PROBE_LIB);
    CHECK(lib != NULL, "with the maps given back the same context loads: %s", vlcs_error());
    CHECK_EQ(1, SYM(lib, int_fn, "probe_bump")(), "and runs");

    /* ---- descriptors: a hard limit a few above what is open (copy mode
     * cannot raise it), then contexts until the reserve stops one ---- */
    fds = used_of(VLCS_LIMIT_DESCRIPTORS);
    struct rlimit r = {fds + 40, fds + 40};
    CHECK_EQ(0, setrlimit(RLIMIT_NOFILE, &r), "lower the limit");
    enum { MAX = 64 };
    vlcs_ctx *c[MAX];
    void *h[MAX];
    int n = 0;
    for (; n < MAX; n++) {
        char name[16];
        snprintf(name, sizeof name, "fd%d", n);
        c[n] = copies_with_probe(name, &h[n]);
        if (h[n] == NULL)
            break;
        /* what is open besides the loads (the namespaces' files above) is
         * counted too: no load takes the process into its reserve */
        unsigned long limit = fds + 40, reserve = limit / 32 < 16 ? 16 : limit / 32;
        CHECK(used_of(VLCS_LIMIT_DESCRIPTORS) <= limit - reserve,
              "context %d left %lu of %lu descriptors open, inside the reserve of %lu", n,
              used_of(VLCS_LIMIT_DESCRIPTORS), limit, reserve);
    }
    CHECK(n > 1 && n < MAX, "%d copy-mode contexts in %lu descriptors", n, fds + 40);
    CHECK_EQ(VLCS_LIMIT_DESCRIPTORS, vlcs_errlimit(), vlcs_error());
    CHECK(strstr(vlcs_error(), "ulimit -n") != NULL, "names the remedy: %s", vlcs_error());
    printf("%s\n", vlcs_error());
    int still = open("/dev/null", O_RDONLY | O_CLOEXEC);
    CHECK(still >= 0, "the process can still open a file");
    close(still);
    for (int i = 0; i < n; i++)
        CHECK_EQ(1, SYM(h[i], int_fn, "probe_bump")(), "the earlier contexts work");
    /* strict mode keeps a destroyed context's copies (its filters on their
     * code cannot be taken back), and so their descriptors; else each
     * destroyed context gives its own back, and the refused one loads once
     * enough came back (it may hold what its refused load made already) */
    unsigned long held = used_of(VLCS_LIMIT_DESCRIPTORS);
    int kept = vlcs_ctx_destroy(c[0]) + vlcs_ctx_destroy(c[1]);
    CHECK_EQ(vlcs_strict_active() ? 2 : 0, kept, "destroy");
    int gone = 2;
    if (kept == 0) {
        CHECK(used_of(VLCS_LIMIT_DESCRIPTORS) <= held - 4,
              "two contexts destroyed give their descriptors back: %lu of %lu open",
              used_of(VLCS_LIMIT_DESCRIPTORS), held);
        while ((h[n] = vlcs_ctx_load(c[n], PROBE_LIB)) == NULL && gone < n) {
            CHECK_EQ(VLCS_LIMIT_DESCRIPTORS, vlcs_errlimit(), vlcs_error());
            CHECK_EQ(0, vlcs_ctx_destroy(c[gone++]), "destroy one more");
        }
        CHECK(h[n] != NULL, "the refused context loads once descriptors came back: %s",
              vlcs_error());
        CHECK(gone <= 4, "%d contexts destroyed before it could load", gone);
        CHECK_EQ(1, SYM(h[n], int_fn, "probe_bump")(), "and the context that failed runs");
    } else {
        h[n] = vlcs_ctx_load(c[n], PROBE_LIB);
        CHECK(h[n] == NULL, "kept copies hold their descriptors");
        CHECK_EQ(VLCS_LIMIT_DESCRIPTORS, vlcs_errlimit(), vlcs_error());
    }
    for (int i = gone; i <= n; i++)
        vlcs_ctx_destroy(c[i]);
    vlcs_ctx_destroy(full);
    vlcs_ctx_destroy(first);
    vlcs_ctx_destroy(ns);
    vlcs_ctx_destroy(k);
    PASS("vlcs_room counts, and loads past the reserve are refused");
    return 0;
}

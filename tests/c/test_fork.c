/* fork() called by a context's library while other threads allocate.  A
 * context's libc forwards malloc to the base heap, so its fork must be the
 * base's: the base allocator's locks taken and released around it and every
 * handler registered with the base's pthread_atfork run, in the parent and
 * in the child (vlcs forwards a namespace's fork to the base's).  The child
 * then allocates while the other threads were mid-malloc at the fork.
 *
 * On glibc 2.36 a child of the namespace's own fork did not hang here in a
 * trial (its malloc takes the single-thread path), so the handlers are what
 * shows which fork ran. */
#define _GNU_SOURCE
#include "check.h"

#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

typedef pid_t (*fork_fn)(int);
typedef void *(*malloc_fn)(size_t);
typedef void (*free_fn)(void *);

static atomic_bool stop;
static malloc_fn ctx_malloc;
static free_fn ctx_free;

static void *allocate_in_base(void *arg)
{
    (void)arg;
    for (unsigned i = 0; !atomic_load(&stop); i++)
        free(malloc(16 + (i * 131) % 16384));
    return NULL;
}

/* malloc_info holds each arena's lock while it formats: long windows. */
static void *inspect_heap(void *arg)
{
    (void)arg;
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    CHECK(f != NULL, "open_memstream");
    while (!atomic_load(&stop)) {
        rewind(f);
        malloc_info(0, f);
    }
    fclose(f);
    free(text);
    return NULL;
}

static void *allocate_in_context(void *arg)
{
    CHECK_EQ(0, vlcs_enter(arg), "enter");
    for (unsigned i = 0; !atomic_load(&stop); i++)
        ctx_free(ctx_malloc(16 + (i * 61) % 16384));
    vlcs_leave();
    return NULL;
}

static atomic_int prepared, parented;
static int child_pipe = -1;
static void on_prepare(void) { atomic_fetch_add(&prepared, 1); }
static void on_parent(void) { atomic_fetch_add(&parented, 1); }
static void on_child(void) { CHECK_EQ(1, write(child_pipe, "c", 1), "child handler"); }

int main(void)
{
    if (vlcs_init() != 0)
        FAIL("vlcs_init");
    mallopt(M_ARENA_MAX, 1); /* one arena for all threads (ASan's allocator ignores it) */
    vlcs_ctx *a = vlcs_ctx_create("forks"), *b = vlcs_ctx_create("allocates");
    fork_fn fork_in_a = SYM(must_load(a, PROBE_LIB), fork_fn, "probe_fork_and_allocate");
    void *pb = must_load(b, PROBE_LIB);
    ctx_malloc = SYM(pb, malloc_fn, "probe_malloc");
    ctx_free = SYM(pb, free_fn, "probe_free");

    int fds[2];
    CHECK_EQ(0, pipe(fds), "pipe");
    child_pipe = fds[1];
    CHECK_EQ(0, pthread_atfork(on_prepare, on_parent, on_child), "the base's fork handlers");

    pthread_t t[4];
    pthread_create(&t[0], NULL, allocate_in_base, NULL);
    pthread_create(&t[1], NULL, inspect_heap, NULL);
    pthread_create(&t[2], NULL, allocate_in_context, b);
    pthread_create(&t[3], NULL, allocate_in_base, NULL);
    enum { ROUNDS = 300 };
    for (int round = 0; round < ROUNDS; round++) {
        pid_t pid = fork_in_a(2000);
        CHECK(pid > 0, "fork from the context's library");
        int status;
        CHECK_EQ(pid, waitpid(pid, &status, 0), "waitpid");
        CHECK(!(WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM),
              "round %d: the child hung in malloc (a heap lock held across fork)", round);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "round %d: child status %d", round,
              status);
    }
    atomic_store(&stop, true);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    CHECK(atomic_load(&prepared) == ROUNDS && atomic_load(&parented) == ROUNDS,
          "the base's prepare and parent handlers ran on every fork (%d, %d of %d)",
          atomic_load(&prepared), atomic_load(&parented), ROUNDS);
    close(fds[1]);
    char buf[ROUNDS + 1];
    ssize_t n = 0, r;
    while ((r = read(fds[0], buf + n, sizeof buf - (size_t)n)) > 0)
        n += r;
    CHECK(n == ROUNDS, "the base's child handler ran in every child (%zd of %d)", n, ROUNDS);
    PASS("fork");
    return 0;
}

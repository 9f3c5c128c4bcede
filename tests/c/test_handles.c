/* A handle is never another context: 16 threads create, enter, load into
 * and destroy contexts while they also enter each other's handles, live or
 * stale.  An enter that succeeds must be inside the very context the handle
 * was made for (its name); every other must fail with VLCS_E_DESTROYED; a
 * destroyed context's handle fails at once, before and after its memory is
 * reused.  Under ThreadSanitizer (./run test) this is the race check of
 * handles and the registry. */
#define _GNU_SOURCE
#include "check.h"

#include <malloc.h>
#include <pthread.h>
#include <stdint.h>

#define THREADS 16
#define SLOTS 64

static struct slot {
    pthread_mutex_t lock;
    vlcs_ctx *h;
    char name[32];
} slots[SLOTS];

static long rounds;
static _Atomic long wrong, entered_others, refused_others, loads, limits;

static void publish(int i, vlcs_ctx *h, const char *name)
{
    struct slot *s = &slots[i % SLOTS];
    pthread_mutex_lock(&s->lock);
    s->h = h;
    snprintf(s->name, sizeof s->name, "%s", name);
    pthread_mutex_unlock(&s->lock);
}

/* Enter a handle another thread published: inside the context it was made
 * for, or refused as destroyed. */
static void visit(unsigned *seed)
{
    struct slot *s = &slots[rand_r(seed) % SLOTS];
    pthread_mutex_lock(&s->lock);
    vlcs_ctx *h = s->h;
    char want[32];
    snprintf(want, sizeof want, "%s", s->name);
    pthread_mutex_unlock(&s->lock);
    if (h == NULL)
        return;
    if (vlcs_enter(h) == 0) {
        /* Inside, the owner's destroy is refused (busy): the name is stable. */
        const char *name = vlcs_ctx_name(h);
        if (vlcs_current() != h || name == NULL || strcmp(name, want) != 0)
            wrong++;
        vlcs_leave();
        entered_others++;
    } else if (vlcs_errcode() == VLCS_E_DESTROYED) {
        refused_others++;
    } else {
        FAIL("entering another thread's handle failed with %d: %s", vlcs_errcode(), vlcs_error());
    }
}

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    unsigned seed = (unsigned)id * 2654435761u;
    char name[32];
    for (long r = 0; r < rounds; r++) {
        snprintf(name, sizeof name, "t%02d-%ld", id, r);
        vlcs_ctx *h = vlcs_ctx_create(name);
        CHECK(h != NULL, "create");
        publish(id * 4 + (int)(r % 4), h, name);
        CHECK_EQ(0, vlcs_enter(h), "enter its own");
        CHECK(vlcs_current() == h, "inside its own");
        CHECK_EQ(0, vlcs_leave(), "leave");
        if (r % 16 == (long)id % 16) { /* now and then a library, and a namespace */
            if (vlcs_ctx_load(h, PROBE_LIB) != NULL)
                loads++;
            else if (vlcs_errcode() == VLCS_E_LIMIT)
                limits++; /* glibc's 15 namespaces, shared by 16 threads */
            else
                FAIL("load: %s", vlcs_error());
        }
        visit(&seed);
        int rc;
        while ((rc = vlcs_ctx_destroy(h)) != 0) /* busy while a visitor is inside */
            CHECK_EQ(VLCS_E_BUSY, vlcs_errcode(), vlcs_error());
        CHECK(vlcs_enter(h) != 0 && vlcs_errcode() == VLCS_E_DESTROYED,
              "a destroyed context's handle is refused at once");
        visit(&seed);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (vlcs_init() != 0)
        FAIL("vlcs_init");
    if (vlcs_strict_active()) { /* every namespace stays: 15 loads in all */
        printf("SKIP: strict mode keeps every namespace loaded\n");
        return 77;
    }
    /* Handles cost nothing per cycle: the memory and its slot are reused. */
    for (int i = 0; i < 10; i++) /* warm up: the first memory, slot and chunk */
        CHECK_EQ(0, vlcs_ctx_destroy(vlcs_ctx_create("warm")), "create and destroy");
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    size_t before = mallinfo2().uordblks;
    for (int i = 0; i < 10000; i++)
        CHECK_EQ(0, vlcs_ctx_destroy(vlcs_ctx_create("cycle")), "create and destroy");
    CHECK_EQ(0, (long)(mallinfo2().uordblks - before), "heap bytes kept by 10,000 cycles");
#endif
    const char *env = getenv("VLCS_SOAK_ROUNDS");
    rounds = argc > 1 ? atol(argv[1]) : env ? atol(env) : 300;
    for (int i = 0; i < SLOTS; i++)
        pthread_mutex_init(&slots[i].lock, NULL);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(0, pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i), "thread");
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("%d threads x %ld rounds: entered others' contexts %ld times, refused %ld stale "
           "handles, %ld loads (%ld over glibc's limit)\n",
           THREADS, rounds, (long)entered_others, (long)refused_others, (long)loads,
           (long)limits);
    CHECK_EQ(0, wrong, "an enter that succeeded was in another context than its handle's");
    CHECK(refused_others > 0, "stale handles were tried");
    PASS("handles under 16 threads");
    return 0;
}

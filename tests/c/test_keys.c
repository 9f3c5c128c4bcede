/* Thread-specific data keys past glibc's 1,024 per process (every copy of
 * a library takes its own: libgomp ended the process at about 500
 * contexts): six contexts' copies of a library take 200 keys each, 1,200
 * in all, and each works as glibc's do: values per thread and per copy,
 * destructors at thread exit, a deleted key's number taken again reading
 * NULL; the base keeps keys of its own, before and after the contexts. */
#define _GNU_SOURCE
#include "check.h"

#include <pthread.h>
#include <stdbool.h>

enum { NCTX = 6, PER = 200 };

typedef int (*int_int)(int);
typedef int (*int_void)(void);

struct lib {
    int_int make, drop, set, holding;
    int_void set_count, destroyed;
};

static vlcs_ctx *ctx[NCTX];
static struct lib lib[NCTX];

struct job {
    int i, base;
    int set_rc, holding, retaken_set;
    bool retake;
};

static void *in_context(void *arg)
{
    struct job *j = arg;
    if (vlcs_enter(ctx[j->i]) != 0)
        return NULL;
    const struct lib *l = &lib[j->i];
    j->set_rc = l->set(j->base);
    j->holding = l->holding(j->base);
    if (j->retake) {
        /* the last 100 deleted and taken again: their old values are gone */
        l->drop(100);
        l->make(100);
        j->retaken_set = l->set_count();
    }
    vlcs_leave();
    return NULL;
}

static void run(struct job *jobs, int n)
{
    pthread_t t[NCTX * 2];
    for (int k = 0; k < n; k++)
        CHECK_EQ(0, pthread_create(&t[k], NULL, in_context, &jobs[k]), "pthread_create");
    for (int k = 0; k < n; k++)
        pthread_join(t[k], NULL);
}

int main(void)
{
    for (int i = 0; i < NCTX; i++) {
        char name[16];
        snprintf(name, sizeof name, "k%d", i);
        ctx[i] = vlcs_ctx_create(name);
        CHECK(ctx[i] != NULL, "create: %s", vlcs_error());
        void *h = vlcs_ctx_load(ctx[i], KEYS_LIB);
        CHECK(h != NULL, "load: %s", vlcs_error());
        lib[i] = (struct lib){SYM(h, int_int, "keys_make"),   SYM(h, int_int, "keys_drop"),
                              SYM(h, int_int, "keys_set"),    SYM(h, int_int, "keys_holding"),
                              SYM(h, int_void, "keys_set_count"), SYM(h, int_void, "keys_destroyed")};
        int made = lib[i].make(PER);
        CHECK(made == PER, "context %d took %d keys of %d (%s)", i, made, PER,
              made < 0 ? strerror(-made) : "");
    }
    printf("%d contexts hold %d keys\n", NCTX, NCTX * PER);

    /* A thread in each context sets and reads its keys; at its exit each
     * value's destructor runs, in that context's copy. */
    struct job jobs[NCTX];
    for (int i = 0; i < NCTX; i++)
        jobs[i] = (struct job){.i = i, .base = 1000 * i, .set_rc = -1};
    run(jobs, NCTX);
    for (int i = 0; i < NCTX; i++) {
        CHECK_EQ(0, jobs[i].set_rc, "pthread_setspecific in the context");
        CHECK_EQ(PER, jobs[i].holding, "each key holds its value on the thread that set it");
        CHECK_EQ(PER, lib[i].destroyed(), "each value's destructor ran at the thread's exit");
        CHECK_EQ(0, lib[i].set_count(), "a value is the thread's: none on this one");
    }

    /* Two threads in one context at once: each sees its own values. */
    struct job two[2] = {{.i = 0, .base = 7000, .set_rc = -1}, {.i = 0, .base = 9000, .set_rc = -1}};
    run(two, 2);
    for (int k = 0; k < 2; k++)
        CHECK_EQ(PER, two[k].holding, "values are per thread");
    CHECK_EQ(3 * PER, lib[0].destroyed(), "both threads' destructors ran");

    /* Deleted keys' numbers taken again read NULL. */
    struct job retake = {.i = NCTX - 1, .base = 1, .set_rc = -1, .retake = true};
    run(&retake, 1);
    CHECK_EQ(PER - 100, retake.retaken_set, "keys deleted and taken again hold nothing");

    /* The base takes keys of glibc's as ever. */
    pthread_key_t own[64];
    for (int k = 0; k < 64; k++)
        CHECK_EQ(0, pthread_key_create(&own[k], NULL), "the base's pthread_key_create");
    for (int k = 0; k < 64; k++)
        pthread_key_delete(own[k]);

    for (int i = 0; i < NCTX; i++)
        CHECK(vlcs_ctx_destroy(ctx[i]) >= 0, "destroy: %s", vlcs_error()); /* 1 in strict mode */
    PASS("1,200 keys in six contexts, each as glibc's");
    return 0;
}

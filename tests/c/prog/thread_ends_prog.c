/* exit(), _exit() and error() called by a thread other than main's, one
 * way per instance (VLCS_INSTANCE), while main waits its way:
 * tests/python/test_exec_ends.py runs it under vlcs exec and alone. */
#include <error.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int instance;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static volatile unsigned long spins;

static void at_end(void) { printf("atexit %d\n", instance); }

static void *worker(void *arg)
{
    (void)arg;
    printf("worker %d\n", instance); /* buffered: exit flushes it, _exit not */
    switch (instance) {
    case 1:
    case 4:
    case 5:
        exit(instance + 2);
    case 2:
        error(4, 0, "worker %d failed", instance);
        break;
    case 3:
        _exit(5);
    }
    return NULL;
}

int main(void)
{
    const char *at = getenv("VLCS_INSTANCE");
    instance = at ? atoi(at) : 0;
    atexit(at_end);
    printf("start %d\n", instance);
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0)
        return 99;
    switch (instance) {
    case 4: /* waits for ever on a condition */
        pthread_mutex_lock(&lock);
        for (;;)
            pthread_cond_wait(&never, &lock);
    case 5: /* busy in its own code */
        for (;;)
            spins++;
    default: /* joins the worker */
        pthread_join(t, NULL);
    }
    printf("done %d\n", instance);
    return 0;
}

/* test_trace.c - the trace from C: 4 threads entering and leaving contexts
 * while a trace records, stopped while they still run; the file holds one
 * begin and one end per enter and leave made before the stop, and nothing
 * is written after it.  Under ThreadSanitizer this is the buffers' race
 * check. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

#define THREADS 4
#define ROUNDS 2000

static vlcs_ctx *ctx[THREADS];
static atomic_int go, done_before_stop[THREADS];
static atomic_bool stopped;

static void *work(void *arg)
{
    long i = (long)arg;
    while (!atomic_load(&go))
        ;
    for (int r = 0; r < ROUNDS * 2; r++) {
        bool before = !atomic_load(&stopped);
        CHECK(vlcs_enter(ctx[i]) == 0, "enter");
        CHECK(vlcs_leave() == 0, "leave");
        if (before && r < ROUNDS)
            atomic_fetch_add(&done_before_stop[i], 1);
    }
    return NULL;
}

static size_t count(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

int main(void)
{
    char path[] = "/tmp/vlcs-trace-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    close(fd);
    CHECK_ERRC(VLCS_E_SYSTEM, vlcs_trace_start("/nonexistent-dir/t.json"));
    /* a link planted where the trace goes is not followed */
    char link[64], target[80];
    snprintf(link, sizeof link, "%s-link", path);
    snprintf(target, sizeof target, "%s-target", path);
    CHECK(symlink(target, link) == 0, "symlink");
    CHECK_ERR(vlcs_trace_start(link), "symbolic link");
    CHECK(access(target, F_OK) != 0, "nothing written through the link");
    unlink(link);
    for (int i = 0; i < THREADS; i++) {
        char name[16];
        snprintf(name, sizeof name, "t%d", i);
        CHECK((ctx[i] = vlcs_ctx_create(name)) != NULL, "create");
    }
    CHECK(vlcs_trace_start(path) == 0, "start");
    CHECK_ERRC(VLCS_E_INVALID, vlcs_trace_start(path)); /* one at a time */
    CHECK(vlcs_trace_mark("a mark", 'i', "{\"n\":1}") == 0, "mark");
    CHECK_ERRC(VLCS_E_INVALID, vlcs_trace_mark("bad", 'x', NULL));
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        CHECK(pthread_create(&t[i], NULL, work, (void *)i) == 0, "thread");
    atomic_store(&go, 1);
    usleep(2000);
    atomic_store(&stopped, true);
    CHECK(vlcs_trace_stop() == 0, "stop while threads run");
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    CHECK(vlcs_trace_stop() == 0, "a second stop does nothing");

    FILE *f = fopen(path, "r");
    CHECK(f != NULL, "open the trace");
    static char text[64 << 20];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    CHECK(strncmp(text, "{\"displayTimeUnit\"", 18) == 0, "a JSON object");
    CHECK(strstr(text, "]}\n") != NULL, "closed");
    CHECK(count(text, "\"name\":\"a mark\"") == 1, "the mark");
    for (int i = 0; i < THREADS; i++) {
        char b[64], e[64];
        snprintf(b, sizeof b, "\"ph\":\"B\",\"cat\":\"context\",\"name\":\"inside t%d\"", i);
        snprintf(e, sizeof e, "\"ph\":\"E\",\"cat\":\"context\",\"name\":\"inside t%d\"", i);
        size_t nb = count(text, b), ne = count(text, e);
        /* at most one enter of each thread was cut by the stop */
        CHECK(nb >= ne && nb - ne <= 1, "t%d: %zu begins, %zu ends", i, nb, ne);
        CHECK(nb <= ROUNDS * 2, "t%d: %zu begins", i, nb);
    }
    for (int i = 0; i < THREADS; i++)
        CHECK(vlcs_ctx_destroy(ctx[i]) == 0, "destroy");
    unlink(path);
    puts("test_trace: ok");
    return 0;
}

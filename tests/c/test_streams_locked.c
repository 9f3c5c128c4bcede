/* A stream that a namespace's own libc opened is locked as the base's
 * are: threads of the process that write to it through the context's
 * code keep every line whole.  (A libc that believes itself
 * single-threaded skips the locks of its streams.) */
#define _GNU_SOURCE
#include "check.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef void *(*fopen_fn)(const char *, const char *);
typedef int (*fputs_fn)(const char *, void *);
typedef int (*fclose_fn)(void *);

enum { LINES = 20000, WRITERS = 2 };

struct writer {
    fputs_fn put;
    void *stream;
    int id;
    pthread_barrier_t *go;
};

static void *write_lines(void *p)
{
    struct writer *w = p;
    char line[64];
    pthread_barrier_wait(w->go);
    for (int i = 0; i < LINES; i++) {
        snprintf(line, sizeof line, "writer %d line %05d of a stream shared\n", w->id, i);
        w->put(line, w->stream);
    }
    return NULL;
}

int main(void)
{
    if (vlcs_init() != 0)
        FAIL("vlcs_init: %s", vlcs_error());
    char path[] = "/tmp/vlcs-streams-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "a file to write");
    close(fd);

    vlcs_ctx *c = vlcs_ctx_create("streams");
    CHECK_EQ(0, vlcs_ctx_set_mode(c, VLCS_MODE_NAMESPACE), vlcs_error());
    void *lib = vlcs_ctx_load(c, PROBE_LIB);
    CHECK(lib != NULL, "the probe in a namespace: %s", vlcs_error());
    void *stream = SYM(lib, fopen_fn, "probe_fopen")(path, "w");
    CHECK(stream != NULL, "the context's libc opens the file");
    /* glibc's own mark of a stream that locks (_IO_FLAGS2_NEED_LOCK): the
     * same FILE layout in every copy of one glibc */
    CHECK(((FILE *)stream)->_flags2 & 0x80, "the stream locks");

    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, WRITERS);
    pthread_t t[WRITERS];
    struct writer w[WRITERS];
    for (int i = 0; i < WRITERS; i++) {
        w[i] = (struct writer){SYM(lib, fputs_fn, "probe_fputs"), stream, i, &go};
        CHECK_EQ(0, pthread_create(&t[i], NULL, write_lines, &w[i]), "a writer");
    }
    for (int i = 0; i < WRITERS; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ(0, SYM(lib, fclose_fn, "probe_fclose")(stream), "fclose");

    FILE *f = fopen(path, "r");
    CHECK(f != NULL, "read back");
    char line[128];
    int next[WRITERS] = {0}, lines = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        int id = -1, n = -1;
        char tail[64];
        CHECK(sscanf(line, "writer %d line %d %63[^\n]", &id, &n, tail) == 3 && id >= 0 &&
                  id < WRITERS && strcmp(tail, "of a stream shared") == 0,
              "line %d is whole: %s", lines + 1, line);
        CHECK(next[id] == n, "writer %d's lines in order: %d after %d", id, n, next[id] - 1);
        next[id]++;
        lines++;
    }
    fclose(f);
    unlink(path);
    CHECK_EQ(WRITERS * LINES, lines, "every line");
    vlcs_ctx_destroy(c);
    PASS("a namespace's streams lock for the process's threads");
    return 0;
}

/*
 * exec_streams.h - a program's streams under vlcs_ctx_exec (exec_streams.c).
 */
#ifndef VLCS_EXEC_STREAMS_H
#define VLCS_EXEC_STREAMS_H

#include "common.h"
#include "context.h"

/* A run's own C streams, on descriptors 0, 1 and 2 of its thread, which has
 * a table of its own holding duplicates of the namespace's: the program may
 * close them (coreutils do at exit), which must not close the process's or
 * the context's.  They are the namespace libc's own (made and
 * closed by it, on its list of streams: a stream closed by another libc
 * copy than its maker's stays on its maker's list, freed).  The interposer
 * forgets those the program closes. */
struct run_streams {
    /* the namespace libc's stdin, stdout, stderr; in copy mode the
     * program's copies of them (or spare, where it has none) */
    FILE **slot[3];
    FILE *spare[3];
    /* copy mode: the context's streams its libraries bind to (c->cp.std),
     * the run's while it runs, and what they were */
    void **also[3];
    void *also_saved[3];
    bool copy_mode;
    FILE *saved[3];
    void *open[3]; /* the run's, NULL once closed */
    void (*tell)(void **); /* the interposer's vlcs_ip_exec_streams */
    FILE *(*fdopen)(int, const char *);
    int (*fclose)(FILE *);
    int (*setvbuf)(FILE *, char *, int, size_t);
    void (*fpurge)(FILE *);
    /* copy mode: the streams the program opened, closed with its end
     * (the interposer copy's vlcs_ip_exec_files) */
    void (*files)(int how);
};

/* The run's streams made and handed to the namespace's libc and interposer
 * (in copy mode to the program's copies, program[i], NULL where it has
 * none, and the context's interposer copy); -1 with the error set (naming
 * path) when the context lacks what it takes. */
HIDDEN int streams_give(vlcs_ctx *c, struct run_streams *s, const char *path,
                        FILE **const program[3]);
/* The namespace's streams back, the run's closed by its libc. */
HIDDEN void streams_take_back(struct run_streams *s);
/* After a fault: the namespace's streams back, the run's left as the fault
 * left them (their locks may be held), their buffers emptied unwritten,
 * their descriptors closed. */
HIDDEN void streams_abandon(struct run_streams *s);
/* As streams_take_back, what the run's streams buffered lost (an end as
 * _exit's or a signal's). */
HIDDEN void streams_discard(struct run_streams *s);
/* A context's vlcs_ctx_set_stdio streams (c->ns.stdio_file), each on a
 * duplicate of its descriptor, stdout and stderr line-buffered: 0, or -1
 * with none made, errno set and the descriptor that failed in *failed. */
HIDDEN int context_streams_open(vlcs_ctx *c, int *failed);
/* f, such a stream, let go while what is loaded may still hold it (C++'s
 * std::cout, whose destructor flushes it when libstdc++ unloads, or at the
 * process's exit where it never does): its buffer written (broken:
 * dropped, as a crashed process's, a fault having perhaps left its lock
 * held), its descriptor made /dev/null's, so that the reader sees the end
 * and nothing written later lands on a number reused since.  The FILE
 * stays, to be closed once nothing holds it. */
HIDDEN void stream_retire(FILE *f, bool broken);
/* Each of the context's streams retired; a broken context's forgotten,
 * never closed. */
HIDDEN void context_streams_retire(vlcs_ctx *c, bool broken);
/* Those left closed, once nothing holds them. */
HIDDEN void context_streams_close(vlcs_ctx *c);
/* Copy mode: the streams every copy of a context that runs programs binds
 * to (c->cp.std), made before its first program loads: its
 * vlcs_ctx_set_stdio streams, else the process's.  0, or -1 with the
 * error set. */
HIDDEN int streams_for_copies(vlcs_ctx *c);
/* Its streams' buffers written (a program's end). */
HIDDEN void streams_for_copies_flush(vlcs_ctx *c);
/* Its streams closed, once nothing of the context's is loaded (retired
 * before, as it closed: a thread the program left running keeps its
 * copies loaded). */
HIDDEN void streams_for_copies_end(vlcs_ctx *c);
/* A fault's first line on the run's stderr (its thread's descriptor 2), as
 * a shell reports a signal's end, the program named by path. */
HIDDEN void streams_say_fault(vlcs_ctx *c, const char *path);

#endif

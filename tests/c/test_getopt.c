/*
 * test_getopt: the interposer's getopt (src/interpose/ip_getopt.c, which a
 * program run in a copy-mode context parses its arguments with) against
 * glibc's, on this process's libc: for every case, each call's result,
 * optind, optarg, optopt and long index, what a long option's flag got,
 * the arguments' final order and every message are the same.  Cases:
 * written out (clusters, "--", permutation, '+', '-', ':', W;, abbreviations,
 * ambiguity, optional arguments, getopt_long_only), then 20,000 drawn from
 * the same pieces with a fixed seed.
 */
#define _GNU_SOURCE
#include "interpose/ip_getopt.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                       \
    do {                                                                  \
        if (!(cond)) {                                                    \
            fprintf(stderr, "%s:%d: FAIL: %s\n", __FILE__, __LINE__, #cond); \
            exit(1);                                                      \
        }                                                                 \
    } while (0)

#define MAX_ARGS 12
#define MAX_CALLS 40

enum api { SHORT, LONG, LONG_ONLY };

struct call {
    int r, optind, optopt, longind, flag;
    char optarg[64];
    bool has_optarg;
};

struct outcome {
    struct call calls[MAX_CALLS];
    int ncalls;
    char argv_after[MAX_ARGS][64];
    char messages[4096];
};

static int flag_var;
static const struct option longopts[] = {
    {"alpha", required_argument, NULL, 'A'},
    {"beta", no_argument, NULL, 'B'},
    {"betamax", no_argument, NULL, 'M'},
    {"gamma", optional_argument, NULL, 'G'},
    {"gam", no_argument, &flag_var, 7},
    {"delta", no_argument, NULL, 'B'}, /* the same as beta: not ambiguous with it */
    {"deltoid", no_argument, NULL, 'B'},
    {"a", no_argument, NULL, 'a'},
    {NULL, 0, NULL, 0},
};

static void read_messages(FILE *f, char *out, size_t size)
{
    fflush(f);
    rewind(f);
    size_t n = fread(out, 1, size - 1, f);
    out[n] = '\0';
}

static void run(bool ours, enum api api, const char *opts, int argc, const char *const *args,
                int opterr_value, struct outcome *o)
{
    memset(o, 0, sizeof *o);
    char storage[MAX_ARGS][64];
    char *argv[MAX_ARGS + 1];
    for (int i = 0; i < argc; i++) {
        snprintf(storage[i], sizeof storage[i], "%s", args[i]);
        argv[i] = storage[i];
    }
    argv[argc] = NULL;
    FILE *msgs = tmpfile();
    CHECK(msgs != NULL);
    int my_optind = 0, my_opterr = opterr_value, my_optopt = '?';
    char *my_optarg = NULL;
    struct ip_getopt g = {.optind = &my_optind, .opterr = &my_opterr, .optopt = &my_optopt,
                          .optarg = &my_optarg};
    FILE *saved_stderr = stderr;
    if (!ours) {
        optind = 0; /* glibc starts afresh */
        opterr = opterr_value;
        optopt = '?';
        stderr = msgs;
    }
    const struct option *lo = api == SHORT ? NULL : longopts;
    for (o->ncalls = 0; o->ncalls < MAX_CALLS; o->ncalls++) {
        struct call *c = &o->calls[o->ncalls];
        int longind = -1;
        flag_var = 0;
        char *arg;
        if (ours) {
            c->r = ip_getopt_next(&g, argc, argv, opts, lo, &longind, api == LONG_ONLY, false,
                                  msgs);
            c->optind = my_optind;
            c->optopt = my_optopt;
            arg = my_optarg;
        } else {
            c->r = api == SHORT  ? getopt(argc, argv, opts)
                   : api == LONG ? getopt_long(argc, argv, opts, lo, &longind)
                                 : getopt_long_only(argc, argv, opts, lo, &longind);
            c->optind = optind;
            c->optopt = optopt;
            arg = optarg;
        }
        c->longind = longind;
        c->flag = flag_var;
        c->has_optarg = arg != NULL;
        if (arg != NULL)
            snprintf(c->optarg, sizeof c->optarg, "%s", arg);
        if (c->r == -1) {
            o->ncalls++;
            break;
        }
    }
    stderr = saved_stderr;
    for (int i = 0; i < argc; i++)
        snprintf(o->argv_after[i], sizeof o->argv_after[i], "%s", argv[i]);
    read_messages(msgs, o->messages, sizeof o->messages);
    fclose(msgs);
}

static int cases;

static void same(enum api api, const char *opts, int argc, const char *const *args, int err)
{
    struct outcome a, b;
    run(false, api, opts, argc, args, err, &a);
    run(true, api, opts, argc, args, err, &b);
    cases++;
    bool ok = a.ncalls == b.ncalls && strcmp(a.messages, b.messages) == 0;
    for (int i = 0; ok && i < a.ncalls; i++) {
        const struct call *x = &a.calls[i], *y = &b.calls[i];
        /* optopt is defined after an error only (glibc's keeps the last
         * one from an earlier case) */
        bool error = x->r == '?' || x->r == ':';
        ok = x->r == y->r && x->optind == y->optind && (!error || x->optopt == y->optopt) &&
             x->longind == y->longind && x->flag == y->flag && x->has_optarg == y->has_optarg &&
             strcmp(x->optarg, y->optarg) == 0;
    }
    for (int i = 0; ok && i < argc; i++)
        ok = strcmp(a.argv_after[i], b.argv_after[i]) == 0;
    if (!ok) {
        fprintf(stderr, "differs: api %d, opts \"%s\", opterr %d, argv:", api, opts, err);
        for (int i = 0; i < argc; i++)
            fprintf(stderr, " [%s]", args[i]);
        fprintf(stderr, "\n glibc (%d calls):", a.ncalls);
        for (int i = 0; i < a.ncalls; i++)
            fprintf(stderr, " %d/%d/%s", a.calls[i].r, a.calls[i].optind,
                    a.calls[i].has_optarg ? a.calls[i].optarg : "-");
        fprintf(stderr, "\n ours  (%d calls):", b.ncalls);
        for (int i = 0; i < b.ncalls; i++)
            fprintf(stderr, " %d/%d/%s", b.calls[i].r, b.calls[i].optind,
                    b.calls[i].has_optarg ? b.calls[i].optarg : "-");
        fprintf(stderr, "\n glibc said: %s\n ours said:  %s\n", a.messages, b.messages);
    }
    CHECK(ok);
}

#define SAME(api, opts, ...)                                                 \
    do {                                                                     \
        const char *const args_[] = {"prog", __VA_ARGS__};                   \
        same(api, opts, (int)(sizeof args_ / sizeof *args_), args_, 1);      \
    } while (0)

static const char *const pieces[] = {
    "-a", "-b", "-ab", "-ba", "-c", "-cval", "-d", "-dopt", "x", "y", "--", "-", "--alpha",
    "--al", "--alpha=3", "--beta", "--bet", "--b", "--betamax", "--gamma", "--gamma=1", "--gam",
    "--ga", "--del", "--delta=2", "-W", "alpha", "-Walpha", "-Wbet", "--unknown", "-z", "-abc",
    "-ac9", "-alpha", "-beta", "-gam", "-g", "-:", "-;", "--a", "-Wz",
};
static const char *const optstrings[] = {
    "abc:d::W;", "+ab:c", "-ab:c::", ":ab:c", "+:a", "ab", "-:abc:W;", "abc:d::", "ac:g",
};

int main(void)
{
    /* written out */
    SAME(SHORT, "abc:", "-abc", "val", "x");
    SAME(SHORT, "abc:", "-a", "x", "-b", "y", "-cz", "w");
    SAME(SHORT, "+abc:", "-a", "x", "-b");
    SAME(SHORT, "-abc:", "-a", "x", "-b", "y");
    SAME(SHORT, ":abc:", "-q", "-c");
    SAME(SHORT, "abc:", "-q", "-c");
    SAME(SHORT, "ab::", "-bfoo", "-b", "foo");
    SAME(SHORT, "ab", "x", "--", "-a", "y");
    SAME(SHORT, "ab", "-", "-a");
    SAME(LONG, "ab", "--alpha", "1", "--beta", "x", "--gamma=2", "--gam");
    SAME(LONG, "ab", "--al=1", "--bet", "--betam", "--del", "--ga");
    SAME(LONG, "ab", "--b", "--unknown", "--beta=1", "--alpha");
    SAME(LONG, "abW;", "-W", "alpha", "4", "-Wbeta", "-W");
    SAME(LONG_ONLY, "abg", "-alpha", "1", "-beta", "-a", "-g", "-gam", "-b");
    SAME(LONG_ONLY, "ab", "-bet", "-ab", "-z", "--a");
    SAME(LONG, "ab", "x", "--alpha", "1", "y", "-ab", "--", "-b");

    /* drawn */
    unsigned long seed = 12345;
    for (int k = 0; k < 20000; k++) {
        seed = seed * 6364136223846793005ul + 1442695040888963407ul;
        unsigned long r = seed >> 17;
        int argc = 1 + (int)(r % 9);
        const char *args[MAX_ARGS];
        args[0] = "prog";
        for (int i = 1; i < argc; i++) {
            seed = seed * 6364136223846793005ul + 1442695040888963407ul;
            args[i] = pieces[(seed >> 20) % (sizeof pieces / sizeof *pieces)];
        }
        const char *opts = optstrings[(r >> 8) % (sizeof optstrings / sizeof *optstrings)];
        same((enum api)((r >> 16) % 3), opts, argc, args, (int)((r >> 20) % 4 != 0));
    }
    printf("test_getopt: %d cases, glibc's getopt and the interposer's agree\n", cases);
    return 0;
}

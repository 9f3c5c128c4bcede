/*
 * ip_getopt.h - getopt, getopt_long and getopt_long_only as glibc parses,
 * on a state of the caller's (ip_getopt.c).
 *
 * A program run in a copy-mode context shares the process's libc, whose
 * getopt keeps its place in a cluster of options ("-abc") and its
 * permutation in statics of its own: two instances parsing at once would
 * read each other's arguments.  Each context's interposer copy parses with
 * a state of its own instead.
 */
#ifndef VLCS_IP_GETOPT_H
#define VLCS_IP_GETOPT_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

struct ip_getopt {
    /* where the program reads and writes them (its copies of libc's) */
    int *optind, *opterr, *optopt;
    char **optarg;
    /* the parse: as glibc's struct _getopt_data */
    bool initialized;
    char *nextchar;   /* in the cluster being read; NULL: none */
    int ordering;     /* IP_GETOPT_PERMUTE, _REQUIRE_ORDER, _RETURN_IN_ORDER */
    int first_nonopt; /* the non-options skipped so far: [first, last) */
    int last_nonopt;
    int optopt_value; /* the last unknown or argument-less option: 0 at first */
};

enum { IP_GETOPT_REQUIRE_ORDER, IP_GETOPT_PERMUTE, IP_GETOPT_RETURN_IN_ORDER };

/* One call of getopt (longopts NULL), getopt_long or getopt_long_only
 * (long_only): the same results, permutation of argv and messages (to err,
 * in English) as glibc's.  posixly_correct: POSIXLY_CORRECT is set, or the
 * program called __posix_getopt. */
int ip_getopt_next(struct ip_getopt *g, int argc, char **argv, const char *optstring,
                   const struct option *longopts, int *longind, bool long_only,
                   bool posixly_correct, FILE *err);

#endif

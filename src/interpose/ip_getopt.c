/*
 * ip_getopt.c - GNU getopt on a state of the caller's (see ip_getopt.h).
 *
 * Written to behave as glibc's: arguments are permuted so that options
 * come first (unless the option string starts with '+' or POSIXLY_CORRECT
 * is set; '-' returns each non-option as the argument of option 1), "--"
 * ends the options, long options may be abbreviated to a unique prefix,
 * "W;" makes -W foo mean --foo, and the messages are glibc's English ones,
 * prefixed with argv[0].  tests/c/test_getopt.c compares every result,
 * every permutation and every message with glibc's on the process's own
 * libc.
 */
#define _GNU_SOURCE
#include "ip_getopt.h"

#include <stdlib.h>
#include <string.h>

static bool nonoption(char *const *argv, int i)
{
    return argv[i][0] != '-' || argv[i][1] == '\0';
}

static void reverse(char **v, int n)
{
    for (int i = 0, j = n - 1; i < j; i++, j--) {
        char *t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

/* The options read since the last non-options, [last_nonopt, optind),
 * moved before those non-options, [first_nonopt, last_nonopt), each group
 * in its order: a rotation, as three reversals. */
static void move_options_first(struct ip_getopt *g, char **argv, int optind)
{
    int first = g->first_nonopt, last = g->last_nonopt;
    reverse(argv + first, last - first);
    reverse(argv + last, optind - last);
    reverse(argv + first, optind - first);
    g->first_nonopt += optind - last;
    g->last_nonopt = optind;
}

/* A long option at g->nextchar (past its prefix "--", "-" or "-W "): its
 * result, or -1 for getopt_long_only to read it as short options. */
static int long_option(struct ip_getopt *g, int *optind, int argc, char **argv,
                       const char *optstring, const struct option *longopts, int *longind,
                       bool long_only, bool print, const char *prefix, FILE *err)
{
    char *name = g->nextchar;
    size_t len = strcspn(name, "=");
    const struct option *found = NULL;
    int index = -1, count = 0;
    for (const struct option *o = longopts; o->name != NULL; o++, count++)
        if (found == NULL && strncmp(o->name, name, len) == 0 && strlen(o->name) == len) {
            found = o;
            index = count;
        }
    if (found == NULL) {
        /* a prefix of one option, or of several that mean the same
         * (getopt_long_only: of one) */
        bool ambiguous = false;
        for (int k = 0; k < count; k++) {
            const struct option *o = &longopts[k];
            if (strncmp(o->name, name, len) != 0)
                continue;
            if (found == NULL) {
                found = o;
                index = k;
            } else if (long_only || found->has_arg != o->has_arg || found->flag != o->flag ||
                       found->val != o->val) {
                ambiguous = true;
            }
        }
        if (ambiguous) {
            if (print) {
                flockfile(err);
                fprintf(err, "%s: option '%s%s' is ambiguous; possibilities:", argv[0], prefix,
                        name);
                const struct option *first = found;
                for (int k = 0; k < count; k++) {
                    const struct option *o = &longopts[k];
                    if (strncmp(o->name, name, len) != 0)
                        continue;
                    if (o == first || long_only || first->has_arg != o->has_arg ||
                        first->flag != o->flag || first->val != o->val)
                        fprintf(err, " '%s%s'", prefix, o->name);
                }
                fprintf(err, "\n");
                funlockfile(err);
            }
            g->nextchar += strlen(g->nextchar);
            (*optind)++;
            g->optopt_value = 0;
            return '?';
        }
    }
    if (found == NULL) {
        if (!long_only || argv[*optind][1] == '-' || strchr(optstring, *name) == NULL) {
            if (print)
                fprintf(err, "%s: unrecognized option '%s%s'\n", argv[0], prefix, name);
            g->nextchar = NULL;
            (*optind)++;
            g->optopt_value = 0;
            return '?';
        }
        return -1; /* -fu, f a short option: read as short ones */
    }
    (*optind)++;
    g->nextchar = NULL;
    if (name[len] == '=') {
        if (found->has_arg == no_argument) {
            if (print)
                fprintf(err, "%s: option '%s%s' doesn't allow an argument\n", argv[0], prefix,
                        found->name);
            g->optopt_value = found->val;
            return '?';
        }
        *g->optarg = name + len + 1;
    } else if (found->has_arg == required_argument) {
        if (*optind >= argc) {
            if (print)
                fprintf(err, "%s: option '%s%s' requires an argument\n", argv[0], prefix,
                        found->name);
            g->optopt_value = found->val;
            return optstring[0] == ':' ? ':' : '?';
        }
        *g->optarg = argv[(*optind)++];
    }
    if (longind != NULL)
        *longind = index;
    if (found->flag != NULL) {
        *found->flag = found->val;
        return 0;
    }
    return found->val;
}

/* The next option character of the cluster at g->nextchar. */
static int short_option(struct ip_getopt *g, int *optind, int argc, char **argv,
                        const char *optstring, const struct option *longopts, int *longind,
                        bool print, FILE *err)
{
    char c = *g->nextchar++;
    const char *spec = strchr(optstring, c);
    bool last = *g->nextchar == '\0';
    if (last)
        (*optind)++;
    if (spec == NULL || c == ':' || c == ';') {
        if (print)
            fprintf(err, "%s: invalid option -- '%c'\n", argv[0], c);
        g->optopt_value = c;
        return '?';
    }
    bool takes = spec[1] == ':', optional = takes && spec[2] == ':';
    bool w_long = spec[0] == 'W' && spec[1] == ';' && longopts != NULL;
    if (!takes && !w_long)
        return c;
    if (optional) {
        if (!last) {
            *g->optarg = g->nextchar;
            (*optind)++;
        } else {
            *g->optarg = NULL;
        }
        g->nextchar = NULL;
        return c;
    }
    char *arg;
    if (!last) {
        arg = g->nextchar;
        if (!w_long)
            (*optind)++; /* the rest of this element is the argument */
    } else if (*optind == argc) {
        if (print)
            fprintf(err, "%s: option requires an argument -- '%c'\n", argv[0], c);
        g->optopt_value = c;
        g->nextchar = NULL;
        return optstring[0] == ':' ? ':' : '?';
    } else {
        arg = argv[w_long ? *optind : (*optind)++];
    }
    if (w_long) { /* -W foo: --foo */
        g->nextchar = arg;
        return long_option(g, optind, argc, argv, optstring, longopts, longind, false, print,
                           "-W ", err);
    }
    *g->optarg = arg;
    g->nextchar = NULL;
    return c;
}

static int next(struct ip_getopt *g, int *optind, int argc, char **argv, const char *optstring,
                const struct option *longopts, int *longind, bool long_only,
                bool posixly_correct, FILE *err)
{
    bool print = *g->opterr != 0;
    if (argc < 1)
        return -1;
    *g->optarg = NULL;
    if (*optind == 0 || !g->initialized) {
        if (*optind == 0)
            *optind = 1;
        g->first_nonopt = g->last_nonopt = *optind;
        g->nextchar = NULL;
        if (optstring[0] == '-')
            g->ordering = IP_GETOPT_RETURN_IN_ORDER;
        else if (optstring[0] == '+' || posixly_correct)
            g->ordering = IP_GETOPT_REQUIRE_ORDER;
        else
            g->ordering = IP_GETOPT_PERMUTE;
        g->initialized = true;
    }
    if (optstring[0] == '-' || optstring[0] == '+')
        optstring++;
    if (optstring[0] == ':')
        print = false;

    if (g->nextchar != NULL && *g->nextchar != '\0')
        return short_option(g, optind, argc, argv, optstring, longopts, longind, print, err);

    /* the next element; the caller may have moved optind back */
    if (g->last_nonopt > *optind)
        g->last_nonopt = *optind;
    if (g->first_nonopt > *optind)
        g->first_nonopt = *optind;
    if (g->ordering == IP_GETOPT_PERMUTE) {
        if (g->first_nonopt != g->last_nonopt && g->last_nonopt != *optind)
            move_options_first(g, argv, *optind);
        else if (g->last_nonopt != *optind)
            g->first_nonopt = *optind;
        while (*optind < argc && nonoption(argv, *optind))
            (*optind)++;
        g->last_nonopt = *optind;
    }
    if (*optind != argc && strcmp(argv[*optind], "--") == 0) {
        /* the options' end: skipped, the rest non-options */
        (*optind)++;
        if (g->first_nonopt != g->last_nonopt && g->last_nonopt != *optind)
            move_options_first(g, argv, *optind);
        else if (g->first_nonopt == g->last_nonopt)
            g->first_nonopt = *optind;
        g->last_nonopt = argc;
        *optind = argc;
    }
    if (*optind == argc) {
        if (g->first_nonopt != g->last_nonopt)
            *optind = g->first_nonopt; /* the caller reads the non-options from here */
        return -1;
    }
    if (nonoption(argv, *optind)) {
        if (g->ordering == IP_GETOPT_REQUIRE_ORDER)
            return -1;
        *g->optarg = argv[(*optind)++];
        return 1;
    }
    if (longopts != NULL) {
        if (argv[*optind][1] == '-') {
            g->nextchar = argv[*optind] + 2;
            return long_option(g, optind, argc, argv, optstring, longopts, longind, long_only,
                               print, "--", err);
        }
        /* getopt_long_only: "-fu" may be a long option; "-f", f a short
         * option, is that option */
        if (long_only && (argv[*optind][2] != '\0' || strchr(optstring, argv[*optind][1]) == NULL)) {
            g->nextchar = argv[*optind] + 1;
            int r = long_option(g, optind, argc, argv, optstring, longopts, longind, true, print,
                                "-", err);
            if (r != -1)
                return r;
        }
    }
    g->nextchar = argv[*optind] + 1;
    return short_option(g, optind, argc, argv, optstring, longopts, longind, print, err);
}

int ip_getopt_next(struct ip_getopt *g, int argc, char **argv, const char *optstring,
                   const struct option *longopts, int *longind, bool long_only,
                   bool posixly_correct, FILE *err)
{
    /* optind as the program left it (it may reset it to 0 or 1), written
     * back once: a program reads it between calls */
    int optind = *g->optind;
    int r = next(g, &optind, argc, argv, optstring, longopts, longind, long_only,
                 posixly_correct, err);
    *g->optind = optind;
    *g->optopt = g->optopt_value; /* as glibc's getopt writes it at every call */
    return r;
}

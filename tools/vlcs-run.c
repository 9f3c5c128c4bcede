/*
 * vlcs-run - start a program with the glibc tunables that many contexts need.
 *
 *   vlcs-run [--contexts N | --static-tls BYTES] [--] PROGRAM [ARGS...]
 *
 * glibc reads its tunables once, when a process starts: the number of linker
 * namespaces (glibc.rtld.nns, at most 16) and the spare static TLS that
 * libraries with initial-exec TLS (libgomp: 144 bytes) need in every
 * namespace and every renamed copy (glibc.rtld.optional_static_tls).
 * --contexts sizes the latter at 256 bytes per context, never below the
 * default 65536 (400 libgomp copies).  Tunables the user already set win.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: vlcs run [--contexts N | --static-tls BYTES] -- PROGRAM [ARGS...]\n"
               "Starts PROGRAM with GLIBC_TUNABLES raised so that 15 contexts with namespaces\n"
               "of their own, and up to 256 more in copy mode (--contexts N: N in all), each\n"
               "with libraries such as libgomp, fit in one process.\n");
}

int main(int argc, char **argv)
{
    const char *tls = "65536";
    char tls_buf[32];
    int i = 1;
    for (; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        }
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "--contexts") == 0 && i + 1 < argc) {
            char *end;
            errno = 0;
            unsigned long n = strtoul(argv[i + 1], &end, 10);
            if (errno || *end || end == argv[i + 1] || n == 0 || n > 65536) {
                fprintf(stderr, "vlcs run: --contexts wants a count from 1 to 65536, got '%s'\n",
                        argv[i + 1]);
                return 2;
            }
            snprintf(tls_buf, sizeof tls_buf, "%lu", n * 256 < 65536 ? 65536 : n * 256);
            tls = tls_buf;
            i++;
            continue;
        }
        if (strcmp(argv[i], "--static-tls") == 0 && i + 1 < argc) {
            char *end;
            errno = 0;
            unsigned long v = strtoul(argv[i + 1], &end, 10);
            if (errno || *end || end == argv[i + 1] || v > (1ul << 24)) {
                fprintf(stderr, "vlcs run: --static-tls wants a byte count up to 16777216, got "
                                "'%s'\n",
                        argv[i + 1]);
                return 2;
            }
            tls = argv[++i];
            continue;
        }
        if (argv[i][0] == '-') {
            fprintf(stderr, "vlcs run: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
        break;
    }
    if (i >= argc) {
        fprintf(stderr, "vlcs run: no program given\n");
        usage(stderr);
        return 2;
    }
    /* Sized to what it holds: the user's tunables may be of any length. */
    const char *old = getenv("GLIBC_TUNABLES");
    if (old == NULL)
        old = "";
    char nns[32] = "", stls[64] = "";
    if (strstr(old, "glibc.rtld.nns=") == NULL)
        snprintf(nns, sizeof nns, "glibc.rtld.nns=16");
    if (strstr(old, "glibc.rtld.optional_static_tls=") == NULL)
        snprintf(stls, sizeof stls, "glibc.rtld.optional_static_tls=%s", tls);
    char *merged = NULL;
    if (asprintf(&merged, "%s%s%s%s%s", old, *old && *nns ? ":" : "", nns,
                 (*old || *nns) && *stls ? ":" : "", stls) < 0) {
        fprintf(stderr, "vlcs run: out of memory\n");
        return 2;
    }
    if (setenv("GLIBC_TUNABLES", merged, 1) != 0) {
        fprintf(stderr, "vlcs run: cannot set GLIBC_TUNABLES: %s\n", strerror(errno));
        return 2;
    }
    free(merged);
    execvp(argv[i], argv + i);
    fprintf(stderr, "vlcs run: cannot run '%s': %s\n", argv[i], strerror(errno));
    return errno == ENOENT ? 127 : 126;
}

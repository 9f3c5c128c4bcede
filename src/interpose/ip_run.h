/*
 * ip_run.h - a program run in a copy-mode context (ip_run.c), for the
 * interposer's other files.
 */
#ifndef VLCS_IP_RUN_H
#define VLCS_IP_RUN_H

#include "ip.h"

#include <getopt.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>

/* A program runs in this copy-mode context: the functions of ip_run.c,
 * getopt and the ends' messages are the run's own, not libc's. */
IP_HIDDEN bool ip_run_active(void);
/* The run's end, when a signal ended it inside the process's libc. */
IP_HIDDEN void ip_run_end_if_pending(void);
/* argv[0] as program_invocation_name (brief: its last part, __progname) */
IP_HIDDEN const char *ip_run_name(bool brief);
/* the run's stdin, stdout, stderr (ip_exec.c keeps them; while the run
 * has closed one, the process's) */
IP_HIDDEN FILE *ip_run_stream(int i);
IP_HIDDEN FILE *ip_run_streams(int i); /* NULL: none, or closed */
/* a stream the run opened, one it closes (fopen's and fclose's wrappers) */
IP_HIDDEN void ip_run_opened(FILE *f);
IP_HIDDEN void ip_run_closing(FILE *f);
/* after the context's environment changed: the program's environ follows */
IP_HIDDEN void ip_run_environ_changed(void);
/* sh -c command, its descriptors as fa says, with a copy-mode context's
 * environment (the process's libc would give the base's; elsewhere
 * environ): posix_spawn's result.  system()'s and popen's shells. */
IP_HIDDEN int ip_run_shell(pid_t *pid, const posix_spawn_file_actions_t *fa, const char *command);
/* The status of a child once it ends (waits cut short by a signal
 * resumed), or -1. */
IP_HIDDEN int ip_run_wait(pid_t pid);
IP_HIDDEN int ip_run_getopt(int argc, char *const argv[], const char *opts,
                            const struct option *longopts, int *longind, bool long_only,
                            bool posix);

#endif

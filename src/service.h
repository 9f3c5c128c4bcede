/*
 * service.h - the Service context (service.c).
 */
#ifndef VLCS_SERVICE_H
#define VLCS_SERVICE_H

#include "common.h"

/* In *fd a memfd holding the first object for a new namespace: first[0]
 * (the interposer) needing the rest of `first`, the forwarders of the
 * services (but the one whose soname is `except`, or NULL), then `last`,
 * in that order (ns_root.h); -1 when that is one object.  Returns VLCS_OK,
 * or a vlcs_errcode_t with err set. */
HIDDEN int services_root(const char *const *first, size_t nfirst, const char *const *last,
                         size_t nlast, const char *except, int *fd, char *err, size_t errsize);
/* Held (read) around creating a namespace and loading into one, before the
 * context's lock: a service is added under the write lock. */
HIDDEN void services_read_lock(void);
HIDDEN void services_unlock(void);
HIDDEN bool services_held_here(void); /* this thread holds the read lock */
HIDDEN int service_add_local(const char *library); /* loaded RTLD_LOCAL */
HIDDEN int service_add_global(const char *library); /* vlcs_service_add, once vlcs_init ran */
HIDDEN int service_add_program(const char *soname, const char *prefixes); /* vlcs_service_add_program */
HIDDEN bool services_has(const char *soname); /* a library of the Service context */
HIDDEN void *services_open_forwarder(const char *soname); /* in the base namespace, or NULL */
/* The path a memfd of this process is loaded from, "/proc/PID/fd/N", in a
 * buffer of FD_PATH_SIZE. */
#define FD_PATH_SIZE 48
HIDDEN void fd_path(char *buf, size_t size, int fd);
HIDDEN void fd_path_after_fork(void); /* in a child of fork: its pid is asked again */
/* Their forwarders, but that of the service named `except` (NULL: none):
 * a context whose own global library stands in for it (its own libpython). */
HIDDEN size_t services_paths(char (*out)[FD_PATH_SIZE], size_t cap, const char *except);

#endif

/*
 * ip.h - internals shared by the files of libvlcs_interpose.so.
 *
 * One copy of this library is loaded first into each context's namespace.
 * Everything here is hidden except the interposed libc functions and
 * vlcs_ip_bind(); see ../ip_abi.h for the contract with libvlcs.
 */
#ifndef VLCS_IP_H
#define VLCS_IP_H

#include "../ip_abi.h"

#define IP_HIDDEN __attribute__((visibility("hidden")))
#define IP_EXPORT __attribute__((visibility("default")))

/* NULL until libvlcs binds this copy to its context. */
extern IP_HIDDEN const struct vlcs_ip_api *vlcs_ip;

/* Look up the next definition of a libc function in this namespace (its own
 * libc), aborting nothing: returns NULL if absent. */
IP_HIDDEN void *ip_next(const char *name);

/* Lookups made once the interposer is bound, not in a forked child
 * (ip_signal.c, ip_end.c). */
IP_HIDDEN void ip_signal_bind(void);
IP_HIDDEN void ip_end_bind(void);

/* Declares next_<name>: the namespace's own libc function, looked up once
 * (a race only looks it up twice). */
#define NEXT(type, name)                                                                 \
    static type next_##name##_cache;                                                     \
    type next_##name = __atomic_load_n(&next_##name##_cache, __ATOMIC_RELAXED);          \
    if (next_##name == NULL) {                                                           \
        next_##name = (type)ip_next(#name);                                              \
        __atomic_store_n(&next_##name##_cache, next_##name, __ATOMIC_RELAXED);           \
    }

#endif

/*
 * keys.h - thread-specific data keys of contexts' libraries (keys.c).
 */
#ifndef VLCS_KEYS_H
#define VLCS_KEYS_H

#include "common.h"
#include "context.h"

/* As pthread_key_*, past glibc's PTHREAD_KEYS_MAX for the process. */
/* The interposer's pthread_key_create and _delete for c's libraries: keys
 * recorded with their context (a key c did not create is not its to delete). */
HIDDEN int ns_key_create(vlcs_ctx *c, pthread_key_t *key, void (*dtor)(void *));
HIDDEN int ns_key_delete(vlcs_ctx *c, pthread_key_t key);
/* Unloading c: this thread's values of c's keys destroyed as at its exit;
 * then c's keys deleted (no thread's exit runs their destructors). */
HIDDEN void keys_run_destructors_here(vlcs_ctx *c);
HIDDEN void keys_delete_of(vlcs_ctx *c);
/* c's namespace is gone: the keys it deleted are no longer its (until
 * then a library of it that deletes one again is told 0). */
HIDDEN void keys_forget_retired(vlcs_ctx *c);
HIDDEN int key_create(pthread_key_t *key, void (*dtor)(void *));
HIDDEN int key_delete(pthread_key_t key);
HIDDEN void *key_get(pthread_key_t key);
HIDDEN int key_set(pthread_key_t key, const void *value);
/* Keys held for contexts' libraries, and how many they may hold. */
HIDDEN void key_room(unsigned long *used, unsigned long *limit);

#endif

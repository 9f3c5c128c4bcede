/*
 * room.h - the per-process resources that contexts use up (room.c).
 */
#ifndef VLCS_ROOM_H
#define VLCS_ROOM_H

#include "common.h"
#include "context.h"
#include <stddef.h>

struct vlcs_ctx;

/* Before a load that maps about `objects` new objects and holds
 * `descriptors` new descriptors for as long as they stay: 0 when the
 * process keeps its reserve of memory maps and descriptors after it, else
 * -1 with a VLCS_E_LIMIT error naming the resource and the remedy. */
int room_for_load(struct vlcs_ctx *c, const char *what, size_t objects, size_t descriptors);

/* A namespace made (+1) or given back (-1): vlcs_room counts them so,
 * as asking glibc with dlmopen for each would leave its loader lock held
 * where one is not in use (glibc 2.36 signals that error with the lock
 * taken). */
void room_namespaces(int change);

/* In a child of fork (runtime.c's handler): the descriptors held for the
 * parent's /proc/self files are let go. */
void room_after_fork(void);

#endif

/*
 * common.h - what every file of libvlcs starts from: feature macros, vlcs.h
 * with its internal part, the standard headers all use, HIDDEN.
 */
#ifndef VLCS_COMMON_H
#define VLCS_COMMON_H

#define _GNU_SOURCE
#define VLCS_INTERNAL_API /* vlcs_shim_register, vlcs_stack_find */
#include "ip_abi.h"
#include "vlcs.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifndef HIDDEN
#define HIDDEN __attribute__((visibility("hidden")))
#endif

#endif

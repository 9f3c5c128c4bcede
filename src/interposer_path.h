/*
 * interposer_path.h - where libvlcs_interpose.so and libvlcs are
 * (interposer_path.c).
 */
#ifndef VLCS_INTERPOSER_PATH_H
#define VLCS_INTERPOSER_PATH_H

#include "common.h"

/* libvlcs_interpose.so's path (interposer_path.c); interposer_locate finds
 * it once, at start: 0, or a VLCS_E_* code with the sentence in err. */
HIDDEN const char *interposer_path(void);
HIDDEN int interposer_locate(char *err, size_t errsize);
/* The directory libvlcs.so was loaded from (interposer_path.c): 0, or -1. */
HIDDEN int libvlcs_directory(char *dir, size_t size);

#endif

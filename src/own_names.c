/*
 * own_names.c - names of the system's objects that a library makes once
 * per process, made once per context instead.
 *
 * Intel's OpenMP (libiomp5) and LLVM's (libomp) register each runtime that
 * starts in a process under a shared-memory object named after the process
 * (/__KMP_REGISTERED_LIB_<pid>_<uid>), and a second runtime that finds the
 * first one's registration alive ends the process (OMP: Error #15,
 * "Initializing libiomp5.so, but found libiomp5.so already initialized").
 * Each context holds a runtime of its own, as a process would: a context's
 * code opens and unlinks such an object under a name of the context's
 * (the interposer's shm_open and shm_unlink ask here), so the contexts'
 * runtimes and the base's each find only their own.  Their environment
 * variable of the same name, used where shared memory is not, is a
 * context's own already.
 */
#include "common.h"
#include "own_names.h"
#include "context.h"

#include <string.h>

static const char *const per_process[] = {
    "__KMP_REGISTERED_LIB_", /* kmp_runtime.cpp, __kmp_reg_status_name */
};

const char *own_name(vlcs_ctx *c, const char *name, char *buf, size_t size)
{
    if (name == NULL)
        return name;
    const char *bare = name;
    while (*bare == '/') /* shm_open's names may start with slashes */
        bare++;
    for (size_t i = 0; i < sizeof per_process / sizeof *per_process; i++) {
        size_t n = strlen(per_process[i]);
        if (strncmp(bare, per_process[i], n) != 0)
            continue;
        int w = snprintf(buf, size, "%s_vlcs%d", name, c->id);
        return w > 0 && (size_t)w < size ? buf : name;
    }
    return name;
}

/*
 * service_auto.c - the libraries vlcs makes services on its own: those
 * that must exist once per process, which a context would otherwise load a
 * copy of by name (a CUDA runtime opens libcuda.so.1 at its first call).
 *
 * Before the first load into any context, every listed library that is on
 * this machine is loaded RTLD_LOCAL into the base (nothing of it runs: a
 * driver initialises at its first call, cuInit or hsa_init) and becomes a
 * service; one that is not on the machine costs one failed dlopen, once.
 * The list can be changed before that (vlcs_service_auto, or
 * VLCS_AUTO_SERVICES read at the first use); a library added later becomes
 * a service at the next load into any context.
 *
 * What is NOT listed is private per context on purpose: CUDA runtimes,
 * cuBLAS, cuDNN, NCCL, torch, CuPy, JAX's plugins and HIP each keep their
 * state per copy and reach the device through the driver, so two contexts
 * may carry different CUDA versions over the one driver.  Libraries a
 * driver opens itself (libcudadebugger, libnvidia-ptxjitcompiler) are opened
 * from the base's copy, into the base, without being listed.
 */
#include "common.h"
#include "service_auto.h"
#include "context.h"
#include "elf_search.h"
#include "error.h"
#include "registry.h"
#include "service.h"

#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Each row: the soname, and why it must exist once per process. */
static const struct {
    const char *name;
    const char *why;
} builtin[] = {
    {"libcuda.so.1",
     "NVIDIA's driver: a second copy in one process cannot initialise (cudaGetDeviceCount: "
     "error 304) and takes the GPU from the first; every context's CUDA runtime, of any "
     "version, runs over the one driver"},
    {"libnvidia-ml.so.1",
     "NVML, part of NVIDIA's driver and versioned with it: its nvmlInit count and device "
     "handles are per process; torch, CuPy and JAX ask it for devices and memory"},
    {"libhsa-runtime64.so.1",
     "ROCm's HSA runtime: it opens /dev/kfd, of which the kernel keeps one per address space, "
     "and owns the process's queues and memory apertures; every context's HIP runs over it"},
    {"libhsakmt.so.1",
     "ROCm's thunk under HSA (where it is a library of its own): the /dev/kfd file and its "
     "apertures, once per process"},
};
#define NBUILTIN (sizeof builtin / sizeof *builtin)

enum { MAX_AUTO = 32, AUTO_NAME = 256, AUTO_WHY = 512 };

struct entry {
    char name[AUTO_NAME];
    char why[AUTO_WHY]; /* the table's reason; a failure's sentence once FAILED */
    int state;          /* VLCS_AUTO_* */
};

static pthread_mutex_t auto_lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry entries[MAX_AUTO];
static size_t nentries;
static bool filled;
static _Atomic bool pending = true; /* some entry is VLCS_AUTO_PENDING (or not filled yet) */

static struct entry *find(const char *name)
{
    for (size_t i = 0; i < nentries; i++)
        if (strcmp(entries[i].name, name) == 0)
            return &entries[i];
    return NULL;
}

static void remove_at(struct entry *e)
{
    size_t i = (size_t)(e - entries);
    memmove(e, e + 1, (nentries - i - 1) * sizeof *e);
    nentries--;
}

static struct entry *append(const char *name, const char *why)
{
    if (nentries == MAX_AUTO || strlen(name) >= AUTO_NAME)
        return NULL;
    struct entry *e = &entries[nentries++];
    snprintf(e->name, sizeof e->name, "%s", name);
    snprintf(e->why, sizeof e->why, "%s", why);
    e->state = VLCS_AUTO_PENDING;
    atomic_store(&pending, true);
    return e;
}

/* The built-in rows, edited or replaced by VLCS_AUTO_SERVICES: names
 * separated by commas replace the list ("" empties it); "+name" and
 * "-name" items edit it.  With auto_lock held. */
static void fill(void)
{
    if (filled)
        return;
    filled = true;
    const char *env = getenv("VLCS_AUTO_SERVICES");
    bool edits = env != NULL;
    if (env != NULL) {
        for (const char *p = env; *p; p += strcspn(p, ","), p += *p == ',')
            if (*p != ',' && *p != '+' && *p != '-')
                edits = false;
        if (*env == '\0')
            edits = false;
    }
    if (env == NULL || edits)
        for (size_t i = 0; i < NBUILTIN; i++)
            append(builtin[i].name, builtin[i].why);
    if (env == NULL)
        return;
    for (const char *p = env; *p;) {
        size_t n = strcspn(p, ",");
        char item[AUTO_NAME];
        if (n > 0 && n < sizeof item) {
            memcpy(item, p, n);
            item[n] = '\0';
            const char *name = item + (item[0] == '+' || item[0] == '-');
            struct entry *e = find(name);
            if (item[0] == '-') {
                if (e != NULL)
                    remove_at(e);
            } else if (e == NULL && *name != '\0') {
                append(name, "named in VLCS_AUTO_SERVICES");
            }
        }
        p += n;
        p += *p == ',';
    }
}

/* Set while this thread adds the pending rows: a load the adding makes
 * must not wait for the lock this thread holds. */
static _Thread_local bool adding_here;

static int loaded_as(struct dl_phdr_info *info, size_t size, void *name)
{
    (void)size;
    return info->dlpi_name != NULL && strcmp(base_name(info->dlpi_name), name) == 0;
}

/* Whether dlopen would find library `name` (a file name): loaded already,
 * or where ld.so looks.  Asked first because ld.so's search for a library
 * that is not there tries some twenty folders; most machines have none of
 * the GPU drivers. */
static bool findable(const char *name)
{
    if (strchr(name, '/') != NULL)
        return true; /* a path: dlopen says what is wrong with it */
    char *real = malloc(PATH_MAX);
    bool found = real == NULL || elf_resolve(name, NULL, 0, real) == 0 ||
                 dl_iterate_phdr(loaded_as, (void *)name) != 0;
    free(real);
    return found;
}

/* Every thread's first load waits here until the pending rows are
 * services: one that went on as soon as another thread had started the
 * adding would load a private copy of the driver the other is making a
 * service. */
void services_auto_add(void)
{
    if (!atomic_load(&pending) || adding_here || services_held_here())
        return;
    struct saved_error before;
    error_save(&before);
    pthread_mutex_lock(&auto_lock);
    adding_here = true;
    fill();
    for (size_t i = 0; i < nentries; i++) {
        struct entry *e = &entries[i];
        if (e->state != VLCS_AUTO_PENDING)
            continue;
        if (!findable(e->name)) {
            e->state = VLCS_AUTO_ABSENT;
        } else if (service_add_local(e->name) == 0) {
            e->state = VLCS_AUTO_SERVICE;
        } else if (vlcs_errcode() == VLCS_E_NOT_FOUND && strstr(vlcs_error(), "No such file")) {
            e->state = VLCS_AUTO_ABSENT;
        } else {
            /* Contexts go on with private copies; vlcs.info() shows why. */
            e->state = VLCS_AUTO_FAILED;
            snprintf(e->why, sizeof e->why, "%s", vlcs_error());
        }
    }
    atomic_store(&pending, false);
    adding_here = false;
    pthread_mutex_unlock(&auto_lock);
    error_restore(&before);
}

VLCS_API int vlcs_service_auto(const char *library, int on)
{
    if (library == NULL || *library == '\0' || strchr(library, ',') != NULL ||
        strlen(library) >= AUTO_NAME) {
        set_error(VLCS_E_INVALID, "Error changing the automatic services: give one library name "
                                  "or path of under 256 bytes, without commas");
        return -1;
    }
    pthread_mutex_lock(&auto_lock);
    fill();
    struct entry *e = find(library);
    int rc = 0;
    if (on && e == NULL && append(library, "added by the program") == NULL) {
        set_error(VLCS_E_LIMIT, "Error adding %s to the automatic services: the list holds %d "
                                "libraries at most; make it a service with vlcs_service_add",
                  library, MAX_AUTO);
        rc = -1;
    } else if (!on && e != NULL && e->state == VLCS_AUTO_SERVICE) {
        set_error(VLCS_E_INVALID, "Error removing %s from the automatic services: a context "
                                  "loaded a library already, so it is a service for the life of "
                                  "the process; remove it before the first load (or set "
                                  "VLCS_AUTO_SERVICES)",
                  library);
        rc = -1;
    } else if (!on && e != NULL) {
        remove_at(e);
    }
    pthread_mutex_unlock(&auto_lock);
    return rc;
}

VLCS_API int vlcs_service_auto_get(unsigned long i, char *name, unsigned long name_size,
                                   char *why, unsigned long why_size)
{
    pthread_mutex_lock(&auto_lock);
    fill();
    int state = -1;
    size_t n = nentries;
    if (i < nentries) {
        state = entries[i].state;
        if (name != NULL && name_size > 0)
            snprintf(name, name_size, "%s", entries[i].name);
        if (why != NULL && why_size > 0)
            snprintf(why, why_size, "%s", entries[i].why);
    }
    pthread_mutex_unlock(&auto_lock);
    if (state < 0)
        set_error(VLCS_E_NOT_FOUND, "Error reading automatic service %lu: the list has %zu", i, n);
    return state;
}

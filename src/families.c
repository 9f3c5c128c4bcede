/*
 * families.c - what vlcs knows about each library family, in one table:
 * how to recognise its files, read and set its thread count (with the C
 * type of the count) and stop its pool before unload (a built-in
 * family's Service-context hooks are hooks.c's).  Built-in families are the rows
 * below; vlcs_family_register adds more at run time (the Python package's
 * vlcs.register() does, for the families users teach it), and the pools
 * that elastic contexts resize (pools.c) and destroy stops (unload.c) are
 * found through every row alike.  src/README.md says how to add one.
 */
#include "common.h"
#include "families.h"
#include "context.h"
#include "error.h"

#include <stdlib.h>
#include <string.h>

#define MAX_FAMILIES 256
#define MAX_NAMES 16 /* per list */

#define LIST(...) ((const char *const[]){__VA_ARGS__, NULL})
/* OpenBLAS: Debian's, ILP64 builds (64_), numpy's and scipy's wheels. */
#define OPENBLAS(fn) LIST(#fn, #fn "64_", "scipy_" #fn, "scipy_" #fn "64_")

const struct family builtin_families[] = {
    {{sizeof(vlcs_family), "openblas", LIST("libopenblas", "libscipy_openblas"),
      OPENBLAS(openblas_get_num_threads), OPENBLAS(openblas_set_num_threads), VLCS_COUNT_INT, 1,
      /* joins its workers; restarted on next use */
      LIST("blas_thread_shutdown_")}},
    /* Its count is the calling thread's nthreads-var, which no other thread
     * may change: elastic contexts size its teams through OMP_DYNAMIC. */
    {{sizeof(vlcs_family), "openmp", LIST("libgomp", "libiomp", "libomp"),
      LIST("omp_get_max_threads"), LIST("omp_set_num_threads"), VLCS_COUNT_INT, 0, NULL}},
    /* oneMKL: its global setting (not the thread-local _Local one). */
    {{sizeof(vlcs_family), "mkl",
      LIST("libmkl_rt", "libmkl_intel_lp64", "libmkl_intel_ilp64", "libmkl_gf_lp64",
           "libmkl_gf_ilp64"),
      LIST("MKL_Get_Max_Threads"), LIST("MKL_Set_Num_Threads"), VLCS_COUNT_INT, 1, NULL}},
    /* ATen's intra-op pool: at::get_num_threads() / at::set_num_threads(int);
     * its OpenMP teams follow elastic contexts through OMP_DYNAMIC. */
    {{sizeof(vlcs_family), "torch", LIST("libtorch_cpu"), LIST("_ZN2at15get_num_threadsEv"),
      LIST("_ZN2at15set_num_threadsEi"), VLCS_COUNT_INT, 0, NULL}},
    /* oneTBB: automatic arenas sized per context when it is a service; its
     * concurrency query takes an argument, so the Python side reads it. */
    {{sizeof(vlcs_family), "tbb", LIST("libtbb.so"), NULL, NULL, VLCS_COUNT_INT, 0, NULL}},
    /* CUDA and HIP runtimes: the context's device current on enter. */
    {{sizeof(vlcs_family), "gpu", LIST("libcudart", "libamdhip64"), NULL, NULL, VLCS_COUNT_INT, 0,
      NULL}},
    /* libpython: the module table read through its methods. */
    {{sizeof(vlcs_family), "python", LIST("libpython"), NULL, NULL, VLCS_COUNT_INT, 0, NULL}},
};

const size_t nbuiltin_families = sizeof builtin_families / sizeof *builtin_families;

/* The table: built-in rows, then registered copies.  Every copy stays
 * allocated (on `copies`), replaced or not: vlcs_family_at's pointers live
 * for good. */
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static const struct family *table[MAX_FAMILIES];
static size_t ntable;
static struct registered {
    struct registered *next;
    struct family f;
} *copies;
static _Atomic unsigned generation = 1;
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_fill(void)
{
    for (size_t i = 0; i < nbuiltin_families; i++)
        table[ntable++] = &builtin_families[i];
}

unsigned families_generation(void) { return atomic_load(&generation); }

/* fork: held across it (runtime.c's handlers), so the child's table is whole. */
void families_lock(void) { pthread_mutex_lock(&table_lock); }
void families_unlock(void) { pthread_mutex_unlock(&table_lock); }
void families_after_fork(void) { pthread_mutex_init(&table_lock, NULL); }

/* ---- registering a family ------------------------------------------------ */

static int list_check(const char *const *list, const char *what, const char *name)
{
    size_t n = 0;
    for (; list != NULL && list[n] != NULL; n++)
        if (list[n][0] == '\0') {
            set_error(VLCS_E_INVALID, "Error registering library family '%s': %s[%zu] is empty",
                      name, what, n);
            return -1;
        }
    if (n > MAX_NAMES) {
        set_error(VLCS_E_INVALID, "Error registering library family '%s': %s has %zu names, "
                  "at most %d are allowed", name, what, n, MAX_NAMES);
        return -1;
    }
    return 0;
}

/* Pointers (NULL included) and string bytes of list, added to *np and *nc. */
static void list_size(const char *const *list, size_t *np, size_t *nc)
{
    size_t i = 0;
    for (; list != NULL && list[i] != NULL; i++)
        *nc += strlen(list[i]) + 1;
    *np += i + 1;
}

/* Copies list to the pointers at *ptrs and the strings at *chars, and
 * moves both past what it used. */
static const char *const *list_copy(const char *const *list, char ***ptrs, char **chars)
{
    char **out = *ptrs;
    size_t i = 0;
    for (; list != NULL && list[i] != NULL; i++) {
        size_t len = strlen(list[i]) + 1;
        memcpy(*chars, list[i], len);
        out[i] = *chars;
        *chars += len;
    }
    out[i] = NULL;
    *ptrs += i + 1;
    return (const char *const *)out;
}

VLCS_API int vlcs_family_register(const vlcs_family *f)
{
    if (f == NULL || f->size < sizeof(vlcs_family)) {
        set_error(VLCS_E_INVALID,
                  "Error registering a library family: the descriptor is NULL or its size field "
                  "is not sizeof(vlcs_family)");
        return -1;
    }
    if (f->name == NULL || f->name[0] == '\0' || strlen(f->name) > 63) {
        set_error(VLCS_E_INVALID, "Error registering a library family: its name must have 1 to "
                  "63 characters");
        return -1;
    }
    if (f->count_type != VLCS_COUNT_INT && f->count_type != VLCS_COUNT_INT64) {
        set_error(VLCS_E_INVALID, "Error registering library family '%s': count_type %d is "
                  "neither VLCS_COUNT_INT nor VLCS_COUNT_INT64", f->name, f->count_type);
        return -1;
    }
    const char *const *lists[] = {f->prefixes, f->get_threads, f->set_threads, f->stop_pool};
    static const char *const list_names[] = {"prefixes", "get_threads", "set_threads", "stop_pool"};
    size_t np = 0, nc = strlen(f->name) + 1;
    for (size_t l = 0; l < 4; l++) {
        if (list_check(lists[l], list_names[l], f->name) != 0)
            return -1;
        list_size(lists[l], &np, &nc);
    }
    /* One block: the entry, the four pointer arrays, then the strings. */
    struct registered *r = calloc(1, sizeof *r + np * sizeof(char *) + nc);
    if (r == NULL) {
        set_error(VLCS_E_SYSTEM, "Error registering library family '%s': out of memory", f->name);
        return -1;
    }
    char **ptrs = (char **)(r + 1), *chars = (char *)(ptrs + np);
    vlcs_family *d = &r->f.d;
    d->size = sizeof *d;
    d->count_type = f->count_type;
    d->resize_when_elastic = f->resize_when_elastic ? 1 : 0;
    d->prefixes = list_copy(f->prefixes, &ptrs, &chars);
    d->get_threads = list_copy(f->get_threads, &ptrs, &chars);
    d->set_threads = list_copy(f->set_threads, &ptrs, &chars);
    d->stop_pool = list_copy(f->stop_pool, &ptrs, &chars);
    memcpy(chars, f->name, strlen(f->name) + 1);
    d->name = chars;

    pthread_once(&table_once, table_fill);
    pthread_mutex_lock(&table_lock);
    size_t i = 0;
    while (i < ntable && strcmp(table[i]->d.name, d->name) != 0)
        i++;
    if (i == MAX_FAMILIES) {
        pthread_mutex_unlock(&table_lock);
        set_error(LIMIT_CODE(VLCS_LIMIT_FAMILIES), "Error registering library family '%s': "
                  "%d families are registered already, the most vlcs holds", f->name, MAX_FAMILIES);
        free(r);
        return -1;
    }
    table[i] = &r->f;
    if (i == ntable)
        ntable++;
    r->next = copies;
    copies = r;
    atomic_fetch_add(&generation, 1);
    pthread_mutex_unlock(&table_lock);
    return 0;
}

VLCS_API const vlcs_family *vlcs_family_at(unsigned long i)
{
    pthread_once(&table_once, table_fill);
    pthread_mutex_lock(&table_lock);
    const vlcs_family *d = i < ntable ? &table[i]->d : NULL;
    pthread_mutex_unlock(&table_lock);
    return d;
}

/* ---- what the families' functions are in a loaded object ---------------- */

static bool seen(const struct family_fn *fns, size_t n, void *fn)
{
    for (size_t i = 0; i < n; i++)
        if (fns[i].fn == fn)
            return true;
    return false;
}

size_t families_find(void *handle, enum family_role role, struct family_fn *out, size_t n,
                     size_t cap)
{
    pthread_once(&table_once, table_fill);
    pthread_mutex_lock(&table_lock);
    for (size_t f = 0; f < ntable && n < cap; f++) {
        const vlcs_family *d = &table[f]->d;
        const char *const *names = role == FAMILY_RESIZE ? (d->resize_when_elastic ? d->set_threads : NULL)
                                                         : d->stop_pool;
        for (size_t s = 0; names != NULL && names[s] != NULL && n < cap; s++) {
            void *fn = dlsym(handle, names[s]);
            if (fn != NULL && !seen(out, n, fn))
                out[n++] = (struct family_fn){fn, d->count_type, d->name};
        }
    }
    pthread_mutex_unlock(&table_lock);
    return n;
}

void family_fn_set(const struct family_fn *f, int count)
{
    if (f->count_type == VLCS_COUNT_INT64)
        ((void (*)(int64_t))f->fn)(count);
    else
        ((void (*)(int))f->fn)(count);
}

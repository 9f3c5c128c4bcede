/*
 * ns_global.c - dlopen(RTLD_GLOBAL) by code inside a context's namespace.
 *
 * glibc keeps the list that RTLD_GLOBAL adds to for the base namespace
 * only: in a dlmopen namespace, add_to_global_resize dereferences the
 * missing list and ends the process (glibc 2.36), so the interposer never
 * lets the flag through to it.  Libraries rely on the flag all the same:
 * oneMKL's libmkl_rt opens libmkl_core, its threading and interface
 * libraries RTLD_GLOBAL, and the kernels it opens next need their symbols
 * (without them MKL prints "Cannot load libmkl_intel_thread" and ends the
 * process).
 *
 * A namespace has a scope that every object in it searches first all the
 * same: the search list of its first object, the root (every later
 * object's first scope points to it).  A load with RTLD_GLOBAL is made
 * here: the library loaded into the namespace without the flag, then it
 * and what it needs appended to the root's list (search_lists.c), so
 * objects loaded before and after bind to its symbols, and
 * dlsym(RTLD_DEFAULT) in the namespace finds them.  The objects appended
 * are made RTLD_NODELETE: glibc does not know they are in that list, and
 * would leave it pointing at them once unloaded.  Where the list cannot
 * be read (another libc, a glibc laid out differently), the library loads
 * without the flag, as before, and one line on stderr says so.
 */
#include "common.h"
#include "ns_global.h"
#include "context.h"
#include "dl_why.h"
#include "elf_read.h"
#include "elf_search.h"
#include "objects.h"
#include "search_lists.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool warned;

/* m made RTLD_NODELETE: it stays as long as the root's list names it. */
static bool pin(Lmid_t lmid, const struct link_map *m)
{
    void *h = dlmopen(lmid, m->l_name, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
    if (h == NULL)
        return false;
    dlclose(h); /* the flag stays; the reference was only this call's */
    return true;
}

/* search_lists_append's keep: what the root's list names stays loaded. */
static bool pin_in(struct link_map *m, void *c) { return pin(((vlcs_ctx *)c)->ns.lmid, m); }

/* Appends the objects of h's search list that the root's lacks; false
 * where the lists cannot be read. */
static bool add(vlcs_ctx *c, void *h)
{
    struct link_map *root = NULL, *map = NULL;
    if (dlinfo(c->ns.ip_handle, RTLD_DI_LINKMAP, &root) != 0 || root == NULL ||
        dlinfo(h, RTLD_DI_LINKMAP, &map) != 0 || map == NULL)
        return false;
    return search_lists_append(&root, 1, map, pin_in, c, &c->ns.global_lists);
}

/* Where ld.so would find file for the object at caller (its RUNPATH and
 * $ORIGIN, LD_LIBRARY_PATH, the cache, the system's folders), in path;
 * file itself where it names a path or is not found. */
static const char *find(const char *file, const void *caller, char *path)
{
    if (strchr(file, '/') != NULL)
        return file;
    const struct link_map *from = object_at(caller);
    if (from == NULL || from->l_name == NULL || from->l_name[0] == '\0')
        return file;
    const char *found = file;
    int fd = open(from->l_name, O_RDONLY | O_CLOEXEC);
    struct elf_names e;
    char why[256];
    if (fd >= 0 && elf_names_read(fd, from->l_name, &e, why, sizeof why) == VLCS_OK) {
        struct elf_from chain = {&e, from->l_name};
        if (elf_resolve(file, &chain, 1, path) == 0)
            found = path;
        elf_names_free(&e);
    }
    if (fd >= 0)
        close(fd);
    return found;
}

void *ns_global_dlopen(vlcs_ctx *c, const char *file, int mode, const void *caller)
{
    int local = mode & ~RTLD_GLOBAL;
    bool named = strchr(file, '/') == NULL;
    void *h = NULL;
    if (named) /* loaded under that name already: that object, as ld.so */
        h = dlmopen(c->ns.lmid, file, local | RTLD_NOLOAD);
    if (h == NULL && (!named || !(mode & RTLD_NOLOAD))) {
        char *path = malloc(PATH_MAX);
        h = dlmopen(c->ns.lmid, path != NULL ? find(file, caller, path) : file, local);
        free(path);
    }
    if (h == NULL) {
        const char *why = dlerror();
        if (why != NULL)
            dl_why_set(why);
        return NULL;
    }
    if (!add(c, h) && !__atomic_exchange_n(&warned, true, __ATOMIC_RELAXED))
        fprintf(stderr,
                "vlcs: %s was loaded into context '%s' without RTLD_GLOBAL: this C library's "
                "link maps are not laid out as vlcs reads them, so libraries loaded after it "
                "do not find its symbols\n",
                file, c->name);
    return h;
}

void ns_global_forget(vlcs_ctx *c) { search_lists_free(&c->ns.global_lists); }

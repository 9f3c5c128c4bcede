/* A library whose constructor opens itself by name, as oneTBB's tbbmalloc
 * does to stay loaded: it must get itself, the copy being loaded. */
#include <dlfcn.h>
#include <stddef.h>

static void *self;
int self_counter;

__attribute__((constructor)) static void pin(void)
{
    self = dlopen("libvlcs_self_opener.so", RTLD_NOW);
}

/* 1 when what the constructor got holds this very variable */
int self_pinned(void)
{
    int *seen = self ? (int *)dlsym(self, "self_counter") : NULL;
    return seen == &self_counter;
}

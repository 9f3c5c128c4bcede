/*
 * program_vars.c - glibc's variables that the program holds.
 *
 * A program built as gcc builds by default (-fPIE) reads environ, stdout,
 * optind... from copies of libc's variables in its own data
 * (R_X86_64_COPY): at start glibc binds every reference, libc's own
 * included, to the program's copy, and libc's storage keeps what it held
 * then (environ: NULL, as Debian's and conda's Pythons, which link
 * libpython into the program, copy it).  A copy-mode context's libraries
 * search their own tree first, where libc is, so they would find that
 * storage: LLVM's OpenMP read a NULL environ and faulted.  Its roots
 * define these names at the program's copies instead (copies_tree.c).
 * Only glibc's libraries' variables count: the context has copies of its
 * own of every other library.
 */
#include "common.h"
#include "program_vars.h"
#include "object_syms.h"
#include "registry.h"

#include <elf.h>
#include <link.h>
#include <string.h>

enum { MAX_VARS = 24 };

static struct program_var vars[MAX_VARS];
static size_t nvars;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static bool glibc_library(const struct link_map *lm)
{
    const char *base = lm->l_name != NULL ? base_name(lm->l_name) : "";
    return strncmp(base, "libc.so", 7) == 0 || strncmp(base, "libm.so", 7) == 0;
}

static void add(const char *name, void *addr, size_t size)
{
    for (size_t i = 0; i < nvars; i++)
        if (strcmp(vars[i].name, name) == 0)
            return;
    if (nvars < MAX_VARS)
        vars[nvars++] = (struct program_var){name, addr, size};
}

/* name, copied by the program to addr: under every name glibc's library
 * gives that variable. */
static void add_copied(struct link_map *main, const char *name, void *addr, size_t size)
{
    for (struct link_map *lm = main->l_next; lm != NULL; lm = lm->l_next) {
        if (!glibc_library(lm))
            continue;
        char *own = object_sym(LM_ID_BASE, lm, name);
        if (own == NULL || own == addr)
            continue;
        const char *names[8];
        size_t n = object_names_at(lm, (ElfW(Addr))(own - (char *)lm->l_addr), names, 8);
        add(name, addr, size);
        for (size_t i = 0; i < n; i++)
            add(names[i], addr, size);
        return;
    }
}

static void find(void)
{
    void *self = dlopen(NULL, RTLD_LAZY | RTLD_NOLOAD);
    struct link_map *main = NULL;
    if (self == NULL || dlinfo(self, RTLD_DI_LINKMAP, &main) != 0 || main == NULL) {
        if (self != NULL)
            dlclose(self);
        return;
    }
    const ElfW(Rela) *rela = NULL;
    size_t relasz = 0, relaent = sizeof(ElfW(Rela));
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    for (const ElfW(Dyn) *d = main->l_ld; d != NULL && d->d_tag != DT_NULL; d++)
        switch (d->d_tag) {
        case DT_RELA:
            rela = object_dyn_ptr(main, d->d_un.d_ptr);
            break;
        case DT_RELASZ:
            relasz = d->d_un.d_val;
            break;
        case DT_RELAENT:
            relaent = d->d_un.d_val;
            break;
        case DT_SYMTAB:
            symtab = object_dyn_ptr(main, d->d_un.d_ptr);
            break;
        case DT_STRTAB:
            strtab = object_dyn_ptr(main, d->d_un.d_ptr);
            break;
        }
    if (rela != NULL && symtab != NULL && strtab != NULL && relaent == sizeof(ElfW(Rela)))
        for (size_t i = 0; i < relasz / relaent; i++) {
#if defined(__x86_64__)
            if (ELF64_R_TYPE(rela[i].r_info) != R_X86_64_COPY)
                continue;
#elif defined(__aarch64__)
            if (ELF64_R_TYPE(rela[i].r_info) != R_AARCH64_COPY)
                continue;
#else
            continue;
#endif
            const ElfW(Sym) *s = &symtab[ELF64_R_SYM(rela[i].r_info)];
            add_copied(main, strtab + s->st_name, (char *)main->l_addr + rela[i].r_offset,
                       s->st_size);
        }
    dlclose(self); /* the program stays: the names point into its tables */
}

size_t program_vars(const struct program_var **out)
{
    pthread_once(&once, find);
    *out = vars;
    return nvars;
}

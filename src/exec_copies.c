/*
 * exec_copies.c - a program's copies of libraries' variables, kept in step.
 *
 * A default gcc build (-fPIE) reads stdout, optarg, optind, environ... from
 * copies of libc's variables in its own data (R_X86_64_COPY), which glibc
 * fills only for the main program; loaded into a context, the program's
 * own definitions are found first and copied onto themselves.  The pairs
 * (program's copy, library's variable) go to the namespace's interposer,
 * which brings the two in step around the calls that read or write them
 * (getopt, setenv, tzset...: ip_exec.c); constants (C++'s typeinfo and
 * vtables) are filled once.
 *
 * In copy mode the program shares the process's libc, whose variables
 * are the base's: they are never written.  The program's copies are its
 * run's own instead: its streams (exec_streams.c), getopt's variables and
 * environ, which the context's interposer copy reads and writes
 * (ip_run.c); libc's other variables (tzname, timezone...) are copied
 * once; a library's (C++'s std::cout) is the program's copy alone, as in
 * a namespace; constants are filled from the context's own copies.
 */
#include "common.h"
#include "exec_copies.h"
#include "context.h"
#include "copies.h"
#include "copies_env.h"
#include "exec_program.h"
#include "object_syms.h"
#include "registry.h"

#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>


typedef void (*copies_fn)(const struct vlcs_ip_copy *, size_t);
typedef void (*run_fn)(const struct vlcs_ip_run *);

void *exec_interposer(vlcs_ctx *c) { return c->copy_mode ? c->cp.set->ip : c->ns.ip_handle; }

void *exec_program_var(const struct link_map *lm, const struct program *p, const char *name)
{
    for (size_t k = 0; k < p->ncopies; k++)
        if (strcmp(p->copies[k].name, name) == 0)
            return (void *)(lm->l_addr + p->copies[k].vaddr);
    return NULL;
}

static void *definition_elsewhere(Lmid_t lmid, const struct link_map *prog, const char *name,
                                  bool glibc_only)
{
    const struct link_map *lm = prog;
    while (lm->l_prev)
        lm = lm->l_prev;
    for (; lm != NULL; lm = lm->l_next) {
        if (lm == prog || lm->l_name == NULL || lm->l_name[0] == '\0')
            continue;
        /* Only glibc's libc and libm write their variables through names of
         * their own (stdout, optarg, environ, signgam): other libraries
         * reach theirs through their GOT, bound to the program's copy, which
         * is then the only one (C++'s std::cout, constructed in place: a
         * copy of the library's unused storage over it would undo that). */
        const char *base = base_name(lm->l_name);
        if (glibc_only && strncmp(base, "libc.so", 7) != 0 && strncmp(base, "libm.so", 7) != 0)
            continue;
        void *h = dlmopen(lmid, lm->l_name, RTLD_NOLOAD | RTLD_LAZY);
        if (h == NULL)
            continue;
        void *a = dlsym(h, name);
        dlclose(h);
        Dl_info info;
        struct link_map *owner = NULL;
        if (a != NULL && dladdr1(a, &info, (void **)&owner, RTLD_DL_LINKMAP) != 0 && owner != prog)
            return a;
    }
    return NULL;
}

/* The interposer lets go of the program's copies (before it is unloaded:
 * a thread of the namespace calling getenv must not write where it was). */
void exec_forget_copies(vlcs_ctx *c)
{
    copies_fn give = (copies_fn)dlsym(exec_interposer(c), "vlcs_ip_exec_copies");
    if (give != NULL)
        give(NULL, 0);
    run_fn tell = c->copy_mode ? (run_fn)dlsym(exec_interposer(c), "vlcs_ip_exec_run") : NULL;
    if (tell != NULL)
        tell(NULL); /* its pending end's word too */
}
/* The namespace's interposer keeps the program's copies in step with libc's
 * variables; its program_invocation_name becomes the instance's. */
static void fill_constant(char *to, const void *from, size_t size)
{
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t lo = (uintptr_t)to & ~(uintptr_t)(page - 1);
    size_t len = (uintptr_t)to + size - lo;
    if (mprotect((void *)lo, len, PROT_READ | PROT_WRITE) != 0)
        return;
    memcpy(to, from, size);
    mprotect((void *)lo, len, PROT_READ);
}

/* The definition a copy-mode program's copy of name stands for: in the
 * context's own objects (its copies: C++'s typeinfo in its libstdc++),
 * else the process's glibc. */
static void *definition_in_context(vlcs_ctx *c, const struct link_map *prog, const char *name)
{
    struct link_map *objects[256];
    size_t n = c->backend->objects(c, objects, sizeof objects / sizeof *objects);
    for (size_t i = 0; i < n; i++) {
        if (objects[i] == prog)
            continue;
        void *a = object_sym(LM_ID_BASE, objects[i], name);
        if (a != NULL)
            return a;
    }
    return dlsym(RTLD_DEFAULT, name);
}

static bool named(const char *name, const char *const *names)
{
    for (; *names != NULL; names++)
        if (strcmp(name, *names) == 0)
            return true;
    return false;
}

/* Copy mode: see the top of this file. */
static int bind_in_copy_mode(vlcs_ctx *c, const struct link_map *lm, const struct program *p,
                             const char *argv0)
{
    run_fn tell = (run_fn)dlsym(exec_interposer(c), "vlcs_ip_exec_run");
    if (tell == NULL)
        return program_refuse(VLCS_E_NOT_FOUND, p->path,
                      "the vlcs interposer lacks vlcs_ip_exec_run (an older build)");
    static const char *const run_own[] = {
        "stdin", "stdout", "stderr", "optind", "opterr", "optopt", "optarg", "environ",
        "__environ", "_environ", "program_invocation_name", "__progname_full",
        "program_invocation_short_name", "__progname", NULL};
    for (size_t k = 0; k < p->ncopies; k++) {
        const struct copy_var *v = &p->copies[k];
        if (named(v->name, run_own))
            continue;
        bool constant = v->vaddr >= p->relro_vaddr &&
                        v->vaddr + v->size <= p->relro_vaddr + p->relro_size;
        if (constant) {
            void *lib = definition_in_context(c, lm, v->name);
            if (lib != NULL)
                fill_constant((char *)lm->l_addr + v->vaddr, lib, v->size);
            continue;
        }
        /* A library's variable is the program's copy alone (its GOT is
         * bound to it: std::cout constructed in place); glibc's own
         * (tzname, signgam) take the process's values once. */
        void *lib = dlsym(RTLD_DEFAULT, v->name);
        Dl_info info;
        if (lib != NULL && dladdr(lib, &info) != 0 && info.dli_fname != NULL &&
            (strncmp(base_name(info.dli_fname), "libc.so", 7) == 0 ||
             strncmp(base_name(info.dli_fname), "libm.so", 7) == 0))
            memcpy((char *)lm->l_addr + v->vaddr, lib, v->size);
    }
    char ***env = NULL;
    static const char *const environs[] = {"environ", "__environ", "_environ"};
    for (size_t k = 0; k < 3 && env == NULL; k++)
        env = exec_program_var(lm, p, environs[k]);
    if (env != NULL)
        *env = copy_env_block(c);
    static const char *const fulls[] = {"program_invocation_name", "__progname_full"};
    static const char *const shorts[] = {"program_invocation_short_name", "__progname"};
    for (size_t k = 0; k < 2; k++) {
        char **full = exec_program_var(lm, p, fulls[k]), **brief = exec_program_var(lm, p, shorts[k]);
        if (full)
            *full = (char *)argv0;
        if (brief)
            *brief = (char *)base_name(argv0);
    }
    struct vlcs_ip_run run = {
        .optind = exec_program_var(lm, p, "optind"),
        .opterr = exec_program_var(lm, p, "opterr"),
        .optopt = exec_program_var(lm, p, "optopt"),
        .optarg = exec_program_var(lm, p, "optarg"),
        .environ = env,
        .name = argv0,
    };
    tell(&run);
    return 0;
}

int exec_bind_copies(vlcs_ctx *c, const struct link_map *lm, const struct program *p,
                     const char *argv0)
{
    if (c->copy_mode)
        return bind_in_copy_mode(c, lm, p, argv0);
    copies_fn give = (copies_fn)dlsym(exec_interposer(c), "vlcs_ip_exec_copies");
    if (give == NULL)
        return program_refuse(VLCS_E_NOT_FOUND, p->path,
                      "the vlcs interposer lacks vlcs_ip_exec_copies (an older build)");
    void *libc = dlmopen(c->ns.lmid, "libc.so.6", RTLD_NOLOAD | RTLD_LAZY);
    if (libc != NULL) {
        /* getopt starts afresh, as in a new process (an earlier run in
         * this context left its own place) */
        int *optind = dlsym(libc, "optind"), *opterr = dlsym(libc, "opterr");
        char **optarg = dlsym(libc, "optarg");
        if (optind)
            *optind = 1;
        if (opterr)
            *opterr = 1;
        if (optarg)
            *optarg = NULL;
        static const char *const names[] = {"program_invocation_name", "__progname_full"};
        static const char *const shorts[] = {"program_invocation_short_name", "__progname"};
        for (size_t k = 0; k < 2; k++) {
            char **full = dlsym(libc, names[k]), **brief = dlsym(libc, shorts[k]);
            if (full)
                *full = (char *)argv0;
            if (brief)
                *brief = (char *)base_name(argv0);
        }
        dlclose(libc);
    }
    struct vlcs_ip_copy *pairs = calloc(p->ncopies + 1, sizeof *pairs);
    if (pairs == NULL)
        return program_refuse(VLCS_E_SYSTEM, p->path, "out of memory");
    size_t n = 0;
    for (size_t k = 0; k < p->ncopies; k++) {
        /* glibc fills a copy only in the main program: loaded here, the
         * program's own definition is found first and copied onto itself.
         * Constants (C++'s typeinfo and vtables, in what the loader made
         * read-only) are filled once from their library's. */
        if (p->copies[k].vaddr >= p->relro_vaddr &&
            p->copies[k].vaddr + p->copies[k].size <= p->relro_vaddr + p->relro_size) {
            void *lib = definition_elsewhere(c->ns.lmid, lm, p->copies[k].name, false);
            if (lib != NULL)
                fill_constant((char *)lm->l_addr + p->copies[k].vaddr, lib, p->copies[k].size);
            continue;
        }
        void *lib = definition_elsewhere(c->ns.lmid, lm, p->copies[k].name, true);
        if (lib == NULL)
            continue;
        pairs[n++] = (struct vlcs_ip_copy){(void *)(lm->l_addr + p->copies[k].vaddr), lib,
                                           p->copies[k].size};
        /* libc's value now: what the loader copied may be older */
        memcpy(pairs[n - 1].program, lib, p->copies[k].size);
    }
    give(pairs, n);
    free(pairs);
    return 0;
}

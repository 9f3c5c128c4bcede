/*
 * exec_program.c - the program file vlcs_ctx_exec runs: found on PATH,
 * mapped, its ELF read (dynamic section, the copies of libc's variables it
 * holds, its symbol table's main), refused in one sentence when it cannot
 * run in a context, copied into a memfd glibc loads, and its main found
 * once loaded.
 */
#include "common.h"
#include "exec_program.h"
#include "context.h"
#include "error.h"
#include "registry.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int program_refuse(int code, const char *path, const char *why)
{
    set_error(code, "Error running %s: %s", path, why);
    return -1;
}

/* PROGRAM, or the first PATH entry holding an executable of that name. */
static int find_program(const char *name, char *out, size_t size)
{
    if (strchr(name, '/') != NULL) {
        if ((size_t)snprintf(out, size, "%s", name) >= size)
            return program_refuse(VLCS_E_INVALID, name, "the path is too long");
        /* as execve and a shell refuse it; a missing file is said later */
        if (access(out, F_OK) == 0 && access(out, X_OK) != 0)
            return program_refuse(VLCS_E_INVALID, name,
                          "permission denied: the file is not executable (chmod +x it)");
        return 0;
    }
    const char *path = getenv("PATH");
    if (path == NULL)
        path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        size_t n = strcspn(path, ":");
        if ((size_t)snprintf(out, size, "%.*s/%s", (int)n, n ? path : ".", name) < size &&
            access(out, X_OK) == 0)
            return 0;
        path += n + (path[n] == ':');
    }
    return program_refuse(VLCS_E_NOT_FOUND, name, "no such program on PATH");
}

static bool in_file(const struct program *p, uint64_t off, uint64_t len)
{
    return off <= p->size && len <= p->size - off;
}

/* The file offset of a virtual address of the program's, or -1. */
static int64_t file_offset(const struct program *p, uint64_t vaddr)
{
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(p->map + p->eh->e_phoff);
    for (int i = 0; i < p->eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && vaddr >= ph[i].p_vaddr &&
            vaddr < ph[i].p_vaddr + ph[i].p_filesz)
            return (int64_t)(vaddr - ph[i].p_vaddr + ph[i].p_offset);
    return -1;
}

void program_close(struct program *p)
{
    if (p->map != NULL && p->map != MAP_FAILED)
        munmap((void *)p->map, p->size);
    free(p->copies);
    p->map = NULL;
    p->copies = NULL;
}

/* The dynamic section's copy relocations and DT_FLAGS_1. */
static int read_dynamic(struct program *p, const Elf64_Phdr *dyn)
{
    if (!in_file(p, dyn->p_offset, dyn->p_filesz))
        return program_refuse(VLCS_E_INVALID, p->path, "its dynamic section lies outside the file");
    const Elf64_Dyn *d = (const Elf64_Dyn *)(p->map + dyn->p_offset);
    size_t n = dyn->p_filesz / sizeof *d;
    uint64_t rela = 0, relasz = 0, symtab = 0, strtab = 0, strsz = 0;
    p->flags1_at = -1;
    for (size_t i = 0; i < n && d[i].d_tag != DT_NULL; i++) {
        switch (d[i].d_tag) {
        case DT_FLAGS_1:
            p->flags1 = d[i].d_un.d_val;
            p->flags1_at = (off_t)(dyn->p_offset + i * sizeof *d + offsetof(Elf64_Dyn, d_un));
            break;
        case DT_RELA: rela = d[i].d_un.d_ptr; break;
        case DT_RELASZ: relasz = d[i].d_un.d_val; break;
        case DT_SYMTAB: symtab = d[i].d_un.d_ptr; break;
        case DT_STRTAB: strtab = d[i].d_un.d_ptr; break;
        case DT_STRSZ: strsz = d[i].d_un.d_val; break;
        }
    }
    /* An interpreter of CPython, which links libpython or holds it (its
     * names in the dynamic string table): its runtime state cannot be made
     * per instance by loading it again. */
    int64_t names = strtab ? file_offset(p, strtab) : -1;
    if (names >= 0 && in_file(p, (uint64_t)names, strsz) &&
        (memmem(p->map + names, strsz, "\0libpython", 10) != NULL ||
         memmem(p->map + names, strsz, "\0Py_InitializeEx\0", 17) != NULL))
        return program_refuse(VLCS_E_UNSUPPORTED, p->path,
                              "it runs CPython (it links or holds libpython), whose state "
                              "cannot be made per instance; run Python code N times at once "
                              "with vlcs.ContextPoolExecutor(N, python=\"own\"), a Python of "
                              "its own per worker");
    if (rela == 0 || relasz == 0)
        return 0;
    int64_t rel_off = file_offset(p, rela), sym_off = file_offset(p, symtab),
            str_off = file_offset(p, strtab);
    if (rel_off < 0 || sym_off < 0 || str_off < 0 || !in_file(p, (uint64_t)rel_off, relasz) ||
        !in_file(p, (uint64_t)str_off, strsz))
        return program_refuse(VLCS_E_INVALID, p->path, "its relocations lie outside the file");
    const Elf64_Rela *r = (const Elf64_Rela *)(p->map + rel_off);
    const Elf64_Sym *sym = (const Elf64_Sym *)(p->map + sym_off);
    for (size_t i = 0; i < relasz / sizeof *r; i++) {
        if ((int)ELF64_R_TYPE(r[i].r_info) != R_COPY)
            continue;
        const Elf64_Sym *s = &sym[ELF64_R_SYM(r[i].r_info)];
        if (!in_file(p, (uint64_t)sym_off + (uint64_t)((const unsigned char *)s - (p->map + sym_off)),
                     sizeof *s) ||
            s->st_name >= strsz)
            return program_refuse(VLCS_E_INVALID, p->path, "a copy relocation names no symbol");
        struct copy_var *more = realloc(p->copies, (p->ncopies + 1) * sizeof *more);
        if (more == NULL)
            return program_refuse(VLCS_E_SYSTEM, p->path, "out of memory");
        p->copies = more;
        p->copies[p->ncopies++] = (struct copy_var){
            .name = (const char *)p->map + str_off + s->st_name,
            .vaddr = r[i].r_offset,
            .size = s->st_size,
        };
    }
    return 0;
}

/* main in the section-header symbol table, if the program still has one. */
static void read_symtab(struct program *p)
{
    const Elf64_Ehdr *eh = p->eh;
    if (eh->e_shoff == 0 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
        !in_file(p, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr)))
        return;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(p->map + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum)
            continue;
        const Elf64_Shdr *str = &sh[sh[i].sh_link];
        if (!in_file(p, sh[i].sh_offset, sh[i].sh_size) || !in_file(p, str->sh_offset, str->sh_size))
            return;
        const Elf64_Sym *s = (const Elf64_Sym *)(p->map + sh[i].sh_offset);
        for (size_t k = 0; k < sh[i].sh_size / sizeof *s; k++)
            if (ELF64_ST_TYPE(s[k].st_info) == STT_FUNC && s[k].st_name < str->sh_size &&
                s[k].st_value != 0 &&
                strcmp((const char *)p->map + str->sh_offset + s[k].st_name, "main") == 0) {
                p->main_vaddr = s[k].st_value;
                return;
            }
    }
}

/* Opens and checks the program; what cannot run is refused here. */
int program_open(struct program *p, const char *name)
{
    memset(p, 0, sizeof *p);
    if (find_program(name, p->path, sizeof p->path) != 0)
        return -1;
    int fd = open(p->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return program_refuse(errno == ENOENT ? VLCS_E_NOT_FOUND : VLCS_E_SYSTEM, p->path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return program_refuse(VLCS_E_INVALID, p->path, "not a regular file");
    }
    if (st.st_mode & (S_ISUID | S_ISGID)) {
        close(fd);
        return program_refuse(VLCS_E_UNSUPPORTED, p->path,
                      "it is setuid or setgid, and its privileges cannot be given to one "
                      "instance inside this process; run it as a process of its own");
    }
    p->size = (size_t)st.st_size;
    p->map = p->size >= sizeof(Elf64_Ehdr) ? mmap(NULL, p->size, PROT_READ, MAP_PRIVATE, fd, 0)
                                           : MAP_FAILED;
    close(fd);
    if (p->map == MAP_FAILED) {
        p->map = NULL;
        return program_refuse(VLCS_E_INVALID, p->path, "not an ELF program (too short to read)");
    }
    p->eh = (const Elf64_Ehdr *)p->map;
    const Elf64_Ehdr *eh = p->eh;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
        return program_refuse(VLCS_E_INVALID, p->path, "not an ELF program (a script? run its interpreter)");
    if (eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_machine != EXEC_MACHINE) {
        char why[160];
        snprintf(why, sizeof why, "it is a program for another architecture (ELF machine %u), "
                                  "and this process runs " EXEC_MACHINE_NAME " code",
                 eh->e_ident[EI_CLASS] == ELFCLASS64 ? eh->e_machine : 0u);
        return program_refuse(VLCS_E_UNSUPPORTED, p->path, why);
    }
    if (eh->e_phentsize != sizeof(Elf64_Phdr) ||
        !in_file(p, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr)))
        return program_refuse(VLCS_E_INVALID, p->path, "its program headers lie outside the file");
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(p->map + eh->e_phoff);
    const Elf64_Phdr *dyn = NULL;
    bool interp = false, stack_seen = false, stack_exec = false;
    for (int i = 0; i < eh->e_phnum; i++) {
        if (ph[i].p_type == PT_INTERP)
            interp = true;
        else if (ph[i].p_type == PT_DYNAMIC)
            dyn = &ph[i];
        else if (ph[i].p_type == PT_GNU_STACK) {
            stack_seen = true;
            stack_exec = ph[i].p_flags & PF_X;
        } else if (ph[i].p_type == PT_GNU_RELRO) {
            p->relro_vaddr = ph[i].p_vaddr;
            p->relro_size = ph[i].p_memsz;
        }
    }
    if (!interp && (dyn == NULL || eh->e_type == ET_EXEC))
        return program_refuse(VLCS_E_UNSUPPORTED, p->path,
                      "it is statically linked and brings its own libc, which cannot run "
                      "beside this process's; use a dynamically linked build");
    /* a CPython interpreter is told so first (Debian's is -no-pie too) */
    if (eh->e_type == ET_EXEC && dyn != NULL && read_dynamic(p, dyn) != 0)
        return -1;
    if (eh->e_type == ET_EXEC)
        return program_refuse(VLCS_E_UNSUPPORTED, p->path,
                      "it is not position-independent (linked with -no-pie), so one address "
                      "space holds it once; rebuild it with -fPIE -pie");
    if (eh->e_type != ET_DYN || dyn == NULL)
        return program_refuse(VLCS_E_INVALID, p->path, "not an ELF program");
    if (!stack_seen || stack_exec)
        return program_refuse(VLCS_E_UNSUPPORTED, p->path,
                      "it needs an executable stack, and loading it would make every "
                      "thread's stack executable (glibc 2.41 refuses it); relink it with "
                      "-z noexecstack");
    if (read_dynamic(p, dyn) != 0)
        return -1;
    if (!interp && !(p->flags1 & DF_1_PIE))
        return program_refuse(VLCS_E_INVALID, p->path, "it is a shared library, not a program");
    if (!interp)
        return program_refuse(VLCS_E_UNSUPPORTED, p->path,
                      "it is statically linked (static-pie) and brings its own libc, which "
                      "cannot run beside this process's; use a dynamically linked build");
    read_symtab(p);
    return 0;
}

/* A memfd holding the program with DF_1_PIE cleared, or -1. */
int loadable_copy(const struct program *p)
{
    int fd = memfd_create(base_name(p->path), MFD_CLOEXEC);
    if (fd < 0) {
        program_refuse(VLCS_E_SYSTEM, p->path, "memfd_create failed");
        return -1;
    }
    size_t done = 0;
    while (done < p->size) {
        ssize_t n = write(fd, p->map + done, p->size - done);
        if (n <= 0) {
            close(fd);
            program_refuse(VLCS_E_SYSTEM, p->path, "writing its copy failed");
            return -1;
        }
        done += (size_t)n;
    }
    uint64_t flags1 = p->flags1 & ~(uint64_t)DF_1_PIE;
    if (p->flags1_at >= 0 && pwrite(fd, &flags1, sizeof flags1, p->flags1_at) != sizeof flags1) {
        close(fd);
        program_refuse(VLCS_E_SYSTEM, p->path, "writing its copy failed");
        return -1;
    }
    return fd;
}

/* ---- finding main and libc's variables once loaded ------------------------- */

static bool in_text(const struct link_map *lm, const struct program *p, uintptr_t a)
{
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(p->map + p->eh->e_phoff);
    for (int i = 0; i < p->eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X) &&
            a >= lm->l_addr + ph[i].p_vaddr && a < lm->l_addr + ph[i].p_vaddr + ph[i].p_memsz)
            return true;
    return false;
}

main_fn find_main(void *h, const struct link_map *lm, const struct program *p)
{
    void *m = dlsym(h, "main"); /* linked with -rdynamic */
    if (m != NULL && in_text(lm, p, (uintptr_t)m))
        return (main_fn)m;
    if (p->main_vaddr != 0 && in_text(lm, p, lm->l_addr + p->main_vaddr))
        return (main_fn)(lm->l_addr + p->main_vaddr);
#if defined(__x86_64__)
    /* glibc's _start: main goes to __libc_start_main in %rdi, as
     * `lea main(%rip), %rdi` or `mov main@GOTPCREL(%rip), %rdi`. */
    const unsigned char *entry = (const unsigned char *)(lm->l_addr + p->eh->e_entry);
    if (in_text(lm, p, (uintptr_t)entry) && in_text(lm, p, (uintptr_t)entry + 63))
        for (int i = 0; i + 7 <= 64; i++) {
            if (entry[i] != 0x48 || entry[i + 2] != 0x3d || (entry[i + 1] != 0x8d && entry[i + 1] != 0x8b))
                continue;
            int32_t disp;
            memcpy(&disp, entry + i + 3, sizeof disp);
            uintptr_t at = (uintptr_t)(entry + i + 7) + (uintptr_t)(intptr_t)disp;
            uintptr_t main = entry[i + 1] == 0x8d ? at : *(const uintptr_t *)at;
            if (in_text(lm, p, main))
                return (main_fn)main;
        }
#endif
    return NULL;
}

/* Where libc (or libm...) of the namespace keeps the variable the program
 * holds a copy of: the definition in another object than the program. */

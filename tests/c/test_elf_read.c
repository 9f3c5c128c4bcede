/* The ELF reader (src/elf_read.c, compiled in), on real libraries and on
 * broken copies of one: what it reads of each, and a refusal in one
 * sentence, never a crash or a read outside the file, for each way a file
 * can be wrong.  tests/fuzz/ goes on where these cases stop. */
#define _GNU_SOURCE
#include "check.h"
#include "elf_read.h"

#include <elf.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define LIBSTDCXX "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"

static int open_file(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    CHECK(fd >= 0, "open %s", path);
    return fd;
}

/* The whole file at path, in *size bytes. */
static unsigned char *slurp(const char *path, size_t *size)
{
    int fd = open_file(path);
    struct stat st;
    CHECK(fstat(fd, &st) == 0, "fstat");
    unsigned char *buf = malloc((size_t)st.st_size);
    CHECK(buf != NULL && elf_read_at(fd, buf, (size_t)st.st_size, 0) == 0, "read %s", path);
    close(fd);
    *size = (size_t)st.st_size;
    return buf;
}

static int memfd_of(const void *data, size_t size)
{
    int fd = memfd_create("test_elf_read", MFD_CLOEXEC);
    CHECK(fd >= 0 && (size == 0 || write(fd, data, size) == (ssize_t)size), "memfd");
    return fd;
}

/* elf_names_read of size bytes of data: its code, its sentence in why. */
static int read_bytes(const void *data, size_t size, char *why, size_t whysize)
{
    int fd = memfd_of(data, size);
    struct elf_names e;
    why[0] = '\0';
    int code = elf_names_read(fd, "broken.so", &e, why, whysize);
    if (code == VLCS_OK)
        elf_names_free(&e);
    close(fd);
    return code;
}

static void real_libraries(void)
{
    struct elf_names e;
    char why[256];
    int fd = open_file(PROBE_LIB);
    CHECK_EQ(VLCS_OK, elf_names_read(fd, PROBE_LIB, &e, why, sizeof why), why);
    CHECK_STR("libvlcs_probe.so", elf_str(&e, e.soname), "its SONAME");
    CHECK_EQ(1, e.nneeded, "it needs libc alone");
    CHECK_STR("libc.so.6", elf_str(&e, e.needed[0]), "DT_NEEDED");
    CHECK(elf_str(&e, e.runpath) == NULL && elf_str(&e, e.rpath) == NULL, "no search path");
    CHECK(e.ncode > 0 && e.dynsym_off > 0 && e.ndynsym > 0, "its code and .dynsym are found");
    CHECK(elf_is_library(fd), "a library for this machine");
    CHECK(elf_lazy_ok(fd, &e), "nothing of it runs while ld.so relocates it");
    struct elf_rename *rn = NULL;
    CHECK_EQ(0, elf_unique_symbols(fd, &e, &rn), "no unique symbols in C");
    elf_names_free(&e);
    close(fd);

    fd = open_file(DLOPENER_LIB);
    CHECK_EQ(VLCS_OK, elf_names_read(fd, DLOPENER_LIB, &e, why, sizeof why), why);
    CHECK_STR("$ORIGIN/runpath", elf_str(&e, e.runpath), "DT_RUNPATH");
    elf_names_free(&e);
    close(fd);

    fd = open_file(NOSONAME_LIB);
    CHECK_EQ(VLCS_OK, elf_names_read(fd, NOSONAME_LIB, &e, why, sizeof why), why);
    CHECK(e.soname == UINT64_MAX && elf_str(&e, e.soname) == NULL, "no SONAME");
    elf_names_free(&e);
    close(fd);

    fd = open_file(USES_SINGLETON_LIB);
    CHECK_EQ(VLCS_OK, elf_names_read(fd, USES_SINGLETON_LIB, &e, why, sizeof why), why);
    CHECK(e.init != 0 && e.init_array != 0 && e.init_arraysz >= sizeof(void *),
          "DT_INIT and DT_INIT_ARRAY are found");
    elf_names_free(&e);
    close(fd);

    /* An IFUNC resolver runs inside dlopen: its code cannot come later. */
    fd = open_file(IFUNC_LIB);
    CHECK_EQ(VLCS_OK, elf_names_read(fd, IFUNC_LIB, &e, why, sizeof why), why);
    CHECK(!elf_lazy_ok(fd, &e), "an IFUNC library is never lazy");
    elf_names_free(&e);
    close(fd);

    /* C++ template statics are STB_GNU_UNIQUE: each rewrite is one of
     * them, made STB_GLOBAL of the same type. */
    fd = open_file(LIBSTDCXX);
    CHECK_EQ(VLCS_OK, elf_names_read(fd, LIBSTDCXX, &e, why, sizeof why), why);
    size_t n = elf_unique_symbols(fd, &e, &rn);
    CHECK(n > 10, "libstdc++ has unique symbols: %zu", n);
    for (size_t i = 0; i < n; i++) {
        unsigned char info;
        CHECK(rn[i].at >= e.dynsym_off + offsetof(ElfW(Sym), st_info) &&
              (rn[i].at - e.dynsym_off - offsetof(ElfW(Sym), st_info)) % sizeof(ElfW(Sym)) == 0,
              "rewrite %zu is a symbol's st_info", i);
        CHECK(elf_read_at(fd, &info, 1, (off_t)rn[i].at) == 0, "read st_info");
        unsigned char to = (unsigned char)rn[i].to[0];
        CHECK(ELF64_ST_BIND(info) == STB_GNU_UNIQUE && ELF64_ST_BIND(to) == STB_GLOBAL &&
                  ELF64_ST_TYPE(info) == ELF64_ST_TYPE(to) && rn[i].to[1] == '\0',
              "rewrite %zu: unique to global, same type", i);
    }
    free(rn);
    elf_names_free(&e);
    close(fd);
    PASS("real libraries read");
}

/* The file offset of probe's dynamic entry with tag, and its index. */
static size_t dyn_entry(const unsigned char *f, ElfW(Sxword) tag)
{
    const ElfW(Ehdr) *eh = (const void *)f;
    const ElfW(Phdr) *ph = (const void *)(f + eh->e_phoff);
    for (int i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_DYNAMIC)
            for (size_t at = ph[i].p_offset; at < ph[i].p_offset + ph[i].p_filesz;
                 at += sizeof(ElfW(Dyn))) {
                const ElfW(Dyn) *d = (const void *)(f + at);
                if (d->d_tag == tag)
                    return at;
            }
    FAIL("no dynamic entry %ld", (long)tag);
}

#define REFUSED(words, data, size)                                                       \
    do {                                                                                 \
        char why_[256];                                                                  \
        CHECK_EQ(VLCS_E_INVALID, read_bytes(data, size, why_, sizeof why_), "refused");  \
        CHECK(strstr(why_, words) != NULL && strstr(why_, "broken.so") != NULL,          \
              "the sentence names the file and says \"%s\": %s", words, why_);           \
    } while (0)

static void broken_files(void)
{
    size_t size;
    unsigned char *good = slurp(PROBE_LIB, &size);
    unsigned char *f = malloc(size);
    CHECK(f != NULL, "malloc");
    const ElfW(Ehdr) *geh = (const void *)good;
    ElfW(Ehdr) *eh = (void *)f;

    REFUSED("not an ELF file", "", 0);
    REFUSED("not an ELF file", "#!/bin/sh\necho hello\n", 21);
    REFUSED("not an ELF file", good, 10); /* cut inside the header */

    memcpy(f, good, size);
    eh->e_machine = EM_AARCH64 == geh->e_machine ? EM_X86_64 : EM_AARCH64;
    REFUSED("another machine", f, size);

    memcpy(f, good, size);
    eh->e_ident[EI_CLASS] = ELFCLASS32;
    REFUSED("another machine", f, size);

    memcpy(f, good, size);
    eh->e_type = ET_EXEC;
    REFUSED("not a shared library", f, size);

    memcpy(f, good, size);
    eh->e_phnum = 0;
    REFUSED("not a shared library", f, size);

    memcpy(f, good, size);
    eh->e_phoff = size + 4096; /* program headers past the end */
    REFUSED("cut short", f, size);

    REFUSED("cut short", good, geh->e_phoff + 8); /* inside the program headers */

    /* DT_NEEDED naming a string past the string table's end */
    memcpy(f, good, size);
    size_t strsz_at = dyn_entry(good, DT_STRSZ), needed_at = dyn_entry(good, DT_NEEDED);
    ((ElfW(Dyn) *)(f + needed_at))->d_un.d_val =
        ((const ElfW(Dyn) *)(good + strsz_at))->d_un.d_val + 10;
    REFUSED("outside its string table", f, size);

    /* a string table larger than the file */
    memcpy(f, good, size);
    ((ElfW(Dyn) *)(f + strsz_at))->d_un.d_val = size * 4;
    REFUSED("cut short", f, size);

    /* no string table */
    memcpy(f, good, size);
    ((ElfW(Dyn) *)(f + dyn_entry(good, DT_STRTAB)))->d_un.d_val = 0x7fffffff0000;
    REFUSED("no string table", f, size);

    /* the dynamic section cut off with the file */
    const ElfW(Phdr) *ph = (const void *)(good + geh->e_phoff);
    size_t dyn_off = 0;
    for (int i = 0; i < geh->e_phnum; i++)
        if (ph[i].p_type == PT_DYNAMIC)
            dyn_off = ph[i].p_offset;
    REFUSED("dynamic section cannot be read", good, dyn_off + 8);

    /* a .dynsym whose size runs past the end of the file (a case the fuzzer
     * found): left out, as are code sections that would */
    memcpy(f, good, size);
    ElfW(Shdr) *sh = (void *)(f + geh->e_shoff);
    bool lied = false;
    for (int i = 0; i < geh->e_shnum; i++)
        if (sh[i].sh_type == SHT_DYNSYM || (sh[i].sh_flags & SHF_EXECINSTR)) {
            sh[i].sh_size = (uint64_t)1 << 62;
            lied = true;
        }
    CHECK(lied, "probe has .dynsym and code sections");
    char why[256];
    int fd = memfd_of(f, size);
    struct elf_names e;
    CHECK_EQ(VLCS_OK, elf_names_read(fd, "broken.so", &e, why, sizeof why), why);
    CHECK(e.ndynsym == 0 && e.ncode == 0, "sections past the end are left out");
    struct elf_rename *rn = NULL;
    CHECK_EQ(0, elf_unique_symbols(fd, &e, &rn), "no symbols read");
    CHECK(!elf_lazy_ok(fd, &e), "never lazy without its code sections");
    elf_names_free(&e);
    close(fd);

    /* section headers that lie: read as a library without them */
    memcpy(f, good, size);
    eh->e_shoff = size * 2;
    fd = memfd_of(f, size);
    CHECK_EQ(VLCS_OK, elf_names_read(fd, "broken.so", &e, why, sizeof why), why);
    CHECK(e.ndynsym == 0 && e.ncode == 0, "no sections known");
    CHECK(!elf_lazy_ok(fd, &e), "never lazy without its code sections");
    elf_names_free(&e);
    close(fd);
    free(f);
    free(good);
    PASS("broken files refused in one sentence");
}

int main(void)
{
    real_libraries();
    broken_files();
    return 0;
}

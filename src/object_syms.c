/*
 * object_syms.c - a symbol of one loaded object, read from its own hash
 * table.
 *
 * Every namespace loads its own libc and its own interposer, and vlcs needs
 * a few dozen of their symbols each time (environ, stdio, the functions the
 * interposer calls "next").  dlsym needs a handle of the object (a
 * dlmopen by name, which compares names with every loaded object), takes
 * the loader's lock, and by RTLD_NEXT first walks every object of every
 * namespace to find its caller: a thousand copy-mode contexts made that
 * quadratic, and a child forked while another thread held the lock could
 * never look anything up.  Here the object's GNU hash table is read as ld.so
 * reads it, without a lock; what it cannot answer plainly (an IFUNC, TLS,
 * a unique symbol, an object without a GNU hash table) is left to dlsym.
 */
#define _GNU_SOURCE
#include "common.h"
#include "object_syms.h"

#include <elf.h>
#include <link.h>
#include <string.h>

struct tables {
    const ElfW(Sym) *symtab;
    const char *strtab;
    const uint32_t *gnu_hash;
    const ElfW(Half) *versym;
};

const void *object_dyn_ptr(const struct link_map *lm, ElfW(Addr) p)
{
    return (const void *)(p < lm->l_addr ? p + lm->l_addr : p);
}

static bool tables_of(const struct link_map *lm, struct tables *t)
{
    memset(t, 0, sizeof *t);
    for (const ElfW(Dyn) *d = lm->l_ld; d != NULL && d->d_tag != DT_NULL; d++)
        switch (d->d_tag) {
        case DT_SYMTAB:
            t->symtab = object_dyn_ptr(lm, d->d_un.d_ptr);
            break;
        case DT_STRTAB:
            t->strtab = object_dyn_ptr(lm, d->d_un.d_ptr);
            break;
        case DT_GNU_HASH:
            t->gnu_hash = object_dyn_ptr(lm, d->d_un.d_ptr);
            break;
        case DT_VERSYM:
            t->versym = object_dyn_ptr(lm, d->d_un.d_ptr);
            break;
        }
    return t->symtab != NULL && t->strtab != NULL && t->gnu_hash != NULL;
}

static uint32_t gnu_hash(const char *s)
{
    uint32_t h = 5381;
    for (; *s; s++)
        h = h * 33 + (unsigned char)*s;
    return h;
}

/* name's symbol defined in lm, its default version (as dlsym finds it);
 * NULL when it has none.  *plain: whether its address is its value. */
static const ElfW(Sym) *find(const struct tables *t, const char *name, bool *plain)
{
    const uint32_t nbuckets = t->gnu_hash[0], symoffset = t->gnu_hash[1];
    const uint32_t bloom_size = t->gnu_hash[2], bloom_shift = t->gnu_hash[3];
    const ElfW(Addr) *bloom = (const ElfW(Addr) *)(t->gnu_hash + 4);
    const uint32_t *buckets = (const uint32_t *)(bloom + bloom_size);
    const uint32_t *chain = buckets + nbuckets - symoffset;
    const unsigned bits = sizeof(ElfW(Addr)) * 8;
    uint32_t h = gnu_hash(name);
    if (nbuckets == 0 || bloom_size == 0)
        return NULL;
    ElfW(Addr) word = bloom[(h / bits) & (bloom_size - 1)];
    if (!((word >> (h % bits)) & (word >> ((h >> bloom_shift) % bits)) & 1))
        return NULL;
    for (uint32_t i = buckets[h % nbuckets]; i >= symoffset && i != 0; i++) {
        const ElfW(Sym) *s = &t->symtab[i];
        if ((chain[i] | 1) == (h | 1) && strcmp(t->strtab + s->st_name, name) == 0 &&
            s->st_shndx != SHN_UNDEF && ELF64_ST_BIND(s->st_info) != STB_LOCAL &&
            (t->versym == NULL || (t->versym[i] & 0x8000) == 0)) {
            unsigned type = ELF64_ST_TYPE(s->st_info);
            /* a unique symbol is the namespace's first definition, not
             * necessarily this one */
            *plain = type != STT_GNU_IFUNC && type != STT_TLS && s->st_shndx != SHN_ABS &&
                     ELF64_ST_BIND(s->st_info) != STB_GNU_UNIQUE;
            return s;
        }
        if (chain[i] & 1)
            break;
    }
    return NULL;
}

/* The tables of the object this thread asked about last: lookups come in
 * runs on one object (a namespace's libc), and finding them walks its
 * dynamic section. */
static __thread struct {
    const struct link_map *lm;
    ElfW(Addr) addr;
    const ElfW(Dyn) *ld;
    struct tables t;
    bool ok;
} last;

/* lm's tables, in `last`; false when it has no GNU hash table. */
static bool tables_cached(const struct link_map *lm)
{
    if (last.lm != lm || last.addr != lm->l_addr || last.ld != lm->l_ld) {
        last.ok = tables_of(lm, &last.t);
        last.lm = lm;
        last.addr = lm->l_addr;
        last.ld = lm->l_ld;
    }
    return last.ok;
}

size_t object_symbol_count(const struct link_map *lm)
{
    const uint32_t *sysv = NULL, *gnu = NULL;
    for (const ElfW(Dyn) *d = lm->l_ld; d != NULL && d->d_tag != DT_NULL; d++) {
        if (d->d_tag == DT_HASH)
            sysv = object_dyn_ptr(lm, d->d_un.d_ptr);
        else if (d->d_tag == DT_GNU_HASH)
            gnu = object_dyn_ptr(lm, d->d_un.d_ptr);
    }
    if (sysv != NULL)
        return sysv[1]; /* nchain */
    if (gnu == NULL)
        return 0;
    /* GNU hash: past the highest index any bucket's chain reaches */
    const uint32_t nbuckets = gnu[0], symoffset = gnu[1], bloom_size = gnu[2];
    const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)(gnu + 4) + bloom_size);
    const uint32_t *chain = buckets + nbuckets;
    uint32_t last = 0;
    for (uint32_t b = 0; b < nbuckets; b++)
        if (buckets[b] > last)
            last = buckets[b];
    if (last < symoffset)
        return symoffset;
    while ((chain[last - symoffset] & 1) == 0)
        last++;
    return (size_t)last + 1;
}

size_t object_names_at(struct link_map *lm, ElfW(Addr) value, const char **names, size_t cap)
{
    struct tables t;
    if (lm == NULL || !tables_of(lm, &t))
        return 0;
    size_t n = 0, count = object_symbol_count(lm);
    for (size_t i = 1; i < count && n < cap; i++) {
        const ElfW(Sym) *s = &t.symtab[i];
        unsigned bind = ELF64_ST_BIND(s->st_info);
        bool shown = bind == STB_GLOBAL || bind == STB_WEAK;
        bool default_version = t.versym == NULL || (t.versym[i] & 0x8000) == 0;
        if (s->st_value == value && s->st_shndx != SHN_UNDEF &&
            ELF64_ST_TYPE(s->st_info) == STT_OBJECT && shown && default_version)
            names[n++] = t.strtab + s->st_name;
    }
    return n;
}

bool object_tls_offset(struct link_map *lm, const char *name, size_t *offset)
{
    bool plain = false;
    const ElfW(Sym) *s = lm != NULL && tables_cached(lm) ? find(&last.t, name, &plain) : NULL;
    if (s == NULL || ELF64_ST_TYPE(s->st_info) != STT_TLS)
        return false;
    *offset = s->st_value;
    return true;
}

void *object_sym(Lmid_t lmid, struct link_map *lm, const char *name)
{
    if (lm == NULL || name == NULL)
        return NULL;
    bool ok = tables_cached(lm);
    struct tables t = last.t;
    bool plain = false;
    const ElfW(Sym) *s = ok ? find(&t, name, &plain) : NULL;
    if (s != NULL && plain)
        return (void *)(lm->l_addr + s->st_value);
    if (s == NULL && t.gnu_hash != NULL)
        return NULL;
    /* dlsym's answer: a handle of the object's own (one that ld.so loaded
     * as a dependency has no scope for dlsym), given back at once */
    void *o = dlmopen(lmid, lm->l_name, RTLD_NOLOAD | RTLD_LAZY);
    void *p = o != NULL ? dlsym(o, name) : NULL;
    if (o != NULL)
        dlclose(o);
    return p;
}

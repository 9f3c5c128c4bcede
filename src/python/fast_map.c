/*
 * fast_map.c - a map from an object's address to an owner's table, and what the reads
 * remember of their last decisions.
 *
 * A part of vlcs._isolation._fast, compiled as one translation unit by
 * fast.c, which holds the includes and says why: see there.
 */
/* --- a map from an object's address to an owner's table ---------------------- */
/* Keys are module globals (held, so an address is never another dict's) or
 * context handles; `modules` is the owner's table, NULL for the base. */

enum { OWNED = 1, BASE_MODULE = 2 };

struct slot {
    uintptr_t key; /* 0: empty, TOMB: deleted */
    PyObject *held; /* the key's object, or NULL */
    PyObject *modules;
    int kind;
};

struct map {
    struct slot *slots;
    size_t cap, used, filled; /* filled counts tombstones too */
};

#define TOMB UINTPTR_MAX

static size_t slot_of(uintptr_t key, size_t cap)
{
    return (size_t)((key >> 4) * UINT64_C(0x9E3779B97F4A7C15) >> 17) & (cap - 1);
}

/* The last key found in any map: a loop reads the table from one module's
 * code, so its globals are asked for again and again.  Any change of a map
 * forgets it (slots move when a map grows). */
static const struct map *last_map;
static uintptr_t last_key;
static struct slot *last_slot;

/* The last read that decide_quickly answered from its frame's module alone:
 * the same code read again by the same thread, while no thread's context
 * changed, gets the same answer (a loop's reads).  Forgotten with the maps'
 * last key; its table is borrowed from the owners' map. */
static struct {
    uintptr_t globals;
    uint64_t thread, epoch;
    PyObject *table;
} last_decision;

/* The last decision made for shared code (the script's, the standard
 * library's) by the frames below it: the chain from the reader's frame down
 * to the frame that decided, or to the bottom where the thread's context
 * did, each frame by address and globals.  The same chain read again by
 * the same thread while no thread's context changed gives the same answer,
 * which the walk would find through the same globals in the same order. */
#define CHAIN 8
static struct {
    uintptr_t globals; /* the reader's; 0: nothing kept */
    const void *top;
    uint64_t thread, epoch;
    int n; /* frames below top in the chain */
    const void *frames[CHAIN];
    uintptr_t globals_of[CHAIN];
    bool to_bottom; /* the chain ends there: the thread's context decided */
    PyObject *table; /* borrowed from the maps */
} last_chain;

static void map_changed(void)
{
    last_map = NULL;
    last_decision.globals = 0;
    last_chain.globals = 0;
}

static inline struct slot *map_find(const struct map *m, uintptr_t key)
{
    if (m == last_map && key == last_key)
        return last_slot;
    if (m->used == 0)
        return NULL;
    for (size_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        struct slot *s = &m->slots[i];
        if (s->key == key) {
            last_map = m;
            last_key = key;
            last_slot = s;
            return s;
        }
        if (s->key == 0)
            return NULL;
    }
}

static int map_grow(struct map *m)
{
    map_changed();
    size_t cap = m->cap ? m->cap : 64;
    while (m->used * 2 + 2 > cap)
        cap *= 2;
    struct slot *fresh = calloc(cap, sizeof *fresh);
    if (fresh == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        struct slot *s = &m->slots[i];
        if (s->key == 0 || s->key == TOMB)
            continue;
        size_t j = slot_of(s->key, cap);
        while (fresh[j].key != 0)
            j = (j + 1) & (cap - 1);
        fresh[j] = *s;
    }
    free(m->slots);
    m->slots = fresh;
    m->cap = cap;
    m->filled = m->used;
    return 0;
}

static void slot_clear(struct slot *s)
{
    map_changed();
    Py_CLEAR(s->held);
    Py_CLEAR(s->modules);
    s->key = TOMB;
}

/* Globals found in no entry of the owners' map: shared code (the script's,
 * the standard library's) that a read walks past to the frames below.
 * Forgotten whenever the map gains a key. */
#define NOT_OWNED 64
static uintptr_t not_owned[NOT_OWNED];

static size_t not_owned_slot(uintptr_t globals) { return (size_t)(globals >> 4) & (NOT_OWNED - 1); }

static struct map owners; /* module globals -> owner */

static int map_put(struct map *m, uintptr_t key, PyObject *held, PyObject *modules, int kind)
{
    struct slot *s = map_find(m, key);
    if (s == NULL) {
        if (m == &owners)
            memset(not_owned, 0, sizeof not_owned);
        if ((m->filled + 1) * 2 > m->cap && map_grow(m) < 0)
            return -1;
        size_t i = slot_of(key, m->cap);
        while (m->slots[i].key != 0 && m->slots[i].key != TOMB)
            i = (i + 1) & (m->cap - 1);
        s = &m->slots[i];
        if (s->key == 0)
            m->filled++;
        m->used++;
        *s = (struct slot){.key = key};
    }
    map_changed(); /* a decision may hold the table replaced */
    Py_XINCREF(held);
    Py_XINCREF(modules);
    Py_XSETREF(s->held, held);
    Py_XSETREF(s->modules, modules);
    s->kind = kind;
    return 0;
}

static void map_del(struct map *m, uintptr_t key)
{
    struct slot *s = map_find(m, key);
    if (s != NULL) {
        slot_clear(s);
        m->used--;
    }
}

/*
 * fast_table.c - vlcs._isolation._fast: the module table's reads and the
 * import statement's door, in C.
 *
 * Once a context exists, sys.modules is a dict subclass that answers each
 * owner (a context, or the base) with its own modules
 * (python/vlcs/_isolation/modtable.py, rules in owners.py).  Written in
 * Python, every read of it - `"pandas" in sys.modules`, `sys.modules["os"]`,
 * a function-level `import os` - ran Python code and walked frames, in the
 * base too: 10 to 80 times a dict lookup.  This module answers the cases
 * the rules decide from what C sees cheaply, and hands every other case to
 * the Python methods unchanged (_slow_getitem, _slow_contains, _slow_get,
 * the Python __import__):
 *
 *   1. a shared name (the standard library, vlcs.share) is the storage's;
 *      a name in no table at all is absent for everyone;
 *   2. a thread acting for an owner (a module executing for it, an import
 *      whose owner was decided) gets that owner's answer;
 *   3. a read made by Python code (the interpreter is on a subscript, `in`
 *      or .get) belongs to the nearest frame of an owned module; code of a
 *      base module run by a thread in no context is the base's;
 *   4. otherwise the thread's context, or the base.
 *
 * Reads from C code (PyImport_GetModule) once contexts have extension
 * modules, and everything else, go to Python, which may walk the native
 * stack.  Owners' tables are plain dicts: answering from one is one lookup.
 * The commonest reads take decide_quickly first (docs/design.md, the
 * table's reads in C): a known name, a known module's code, no thread
 * acting, the thread's context remembered until libvlcs says it changed.
 *
 * Frames are read as CPython lays them out (3.10's frame objects, 3.11+'s
 * _PyInterpreterFrame through the internal headers), which is why this is
 * built per Python version.  Every call here runs with the GIL held.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h> /* first, as CPython asks; its pyconfig.h defines _GNU_SOURCE */
#include <structmember.h> /* T_OBJECT, T_PYSSIZET, READONLY: 3.10 and 3.11 have them only here */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "guarded_call.h"

#if PY_VERSION_HEX >= 0x030B0000
#define Py_BUILD_CORE 1
#include <internal/pycore_frame.h>
#if PY_VERSION_HEX < 0x030C0000
#undef _PyGC_FINALIZED /* Python.h's, which the core's headers define again alike */
#include <internal/pycore_pystate.h>
#endif
#undef Py_BUILD_CORE
#else
#include <frameobject.h>
#define Py_BUILD_CORE 1
#include <internal/pycore_pystate.h>
#undef Py_BUILD_CORE
#endif

#if PY_VERSION_HEX < 0x030A0000 || PY_VERSION_HEX >= 0x030E0000
#error "vlcs's module table reads the frames of CPython 3.10 to 3.13"
#endif

/* The thread state, with the GIL held.  3.10 and 3.11 keep it in the
 * runtime, read here without a call.  3.12+ keep it in a thread-local of
 * libpython (_Py_tss_tstate, not exported), which PyThreadState_Get reads
 * through __tls_get_addr: about 20 instructions, a sixth of a read.  Where
 * libpython's thread-locals are in the static TLS block (it was loaded
 * with the program, as the python executable links it), the variable is
 * at one offset from the thread pointer in every thread: found once
 * (tstate_offset_find), it is one load. */
#if PY_VERSION_HEX >= 0x030C0000
static ptrdiff_t tstate_offset; /* from the thread pointer, or 0: unknown */
#endif

static inline PyThreadState *thread_state(void)
{
#if PY_VERSION_HEX < 0x030C0000
    return _PyThreadState_GET();
#else
    if (tstate_offset != 0)
        return *(PyThreadState **)((char *)__builtin_thread_pointer() + tstate_offset);
    return PyThreadState_Get();
#endif
}

/* --- frames: the current one, its instruction, its globals, the one below --- */
/* Inlined always: each is a load or two, and the reads' short path takes
 * them all (a call saves and restores more than they cost). */
#define FRAME_FN static inline __attribute__((always_inline))

#if PY_VERSION_HEX >= 0x030B0000
typedef _PyInterpreterFrame frame_t;

FRAME_FN frame_t *frame_top(PyThreadState *ts)
{
#if PY_VERSION_HEX >= 0x030D0000
    return ts->current_frame;
#else
    return ts->cframe->current_frame;
#endif
}

FRAME_FN bool frame_complete(frame_t *f)
{
#if PY_VERSION_HEX >= 0x030C0000
    if (f->owner == FRAME_OWNED_BY_CSTACK)
        return false;
#endif
    return !_PyFrame_IsIncomplete(f);
}

FRAME_FN frame_t *frame_below(frame_t *f) { return f->previous; }

/* The entry frame of a call from C into Python (3.12+), on the C stack. */
FRAME_FN bool frame_of_c_call(frame_t *f)
{
#if PY_VERSION_HEX >= 0x030C0000
    return f->owner == FRAME_OWNED_BY_CSTACK;
#else
    (void)f;
    return false;
#endif
}
FRAME_FN PyObject *frame_globals(frame_t *f) { return f->f_globals; }

FRAME_FN int frame_opcode(frame_t *f)
{
#if PY_VERSION_HEX >= 0x030D0000
    return f->instr_ptr->op.code;
#else
    return _Py_OPCODE(*f->prev_instr);
#endif
}
#else /* 3.10: frame objects */
typedef PyFrameObject frame_t;

FRAME_FN frame_t *frame_top(PyThreadState *ts) { return ts->frame; }
FRAME_FN bool frame_complete(frame_t *f) { return f->f_lasti >= 0; }
FRAME_FN frame_t *frame_below(frame_t *f) { return f->f_back; }
FRAME_FN bool frame_of_c_call(frame_t *f)
{
    (void)f;
    return false;
}
FRAME_FN PyObject *frame_globals(frame_t *f) { return f->f_globals; }

FRAME_FN int frame_opcode(frame_t *f)
{
    const unsigned char *code = (const unsigned char *)PyBytes_AS_STRING(f->f_code->co_code);
    return code[(size_t)f->f_lasti * sizeof(_Py_CODEUNIT)];
}
#endif

/* The innermost complete frame, or NULL (no Python code is running). */
static frame_t *frame_current(PyThreadState *ts)
{
    frame_t *f = frame_top(ts);
    while (f != NULL && !frame_complete(f))
        f = frame_below(f);
    return f;
}

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

/* --- state, set by the Python package (owners.py, modtable.py) ------------------ */

static struct map contexts; /* context handle -> its owner's table */
static PyObject *shared_names; /* set: top-level names one module for all */
static PyObject *context_names; /* set: top-level names any context ever held */
static PyObject *verdicts; /* dict: name -> SHARED / ANYWHERE / BASE_ONLY */
static PyObject *slow_import; /* the Python __import__ */
static PyObject *slow_import_module; /* the Python importlib.import_module */
static PyObject *str_slow_getitem, *str_slow_contains, *str_slow_get;
static void *(*thread_context)(void); /* vlcs_current */
static void *(*c_caller)(void); /* vlcs_python_c_caller */
#define SOME_CONTEXT ((void *)1)     /* its VLCS_PYTHON_SOME_CONTEXT */
static const uint64_t no_epoch;
static const uint64_t *owner_epoch = &no_epoch; /* libvlcs's vlcs_owner_epoch */
static bool natives; /* contexts hold extension modules: C readers need the native stack */
/* Opcodes: READ_OP, a Python-level read of the table (a subscript, `in`);
 * CALL_OP, a call (a frame on one runs: it is complete) */
enum { READ_OP = 1, CALL_OP = 2 };
static unsigned char op_kind[256];
static unsigned char import_op[256]; /* opcodes of an import statement */

/* What a thread acts for (rule 2): a stack of owners' tables, None for the
 * base; the top is kept apart, as the reads only need it. */
static _Thread_local PyObject *acting_stack; /* list of (owner, table) */
static _Thread_local PyObject *acting_table; /* the top's table (borrowed), or NULL */
static _Thread_local Py_ssize_t acting_depth;
static _Thread_local Py_ssize_t door_depth; /* acting_depth of the C door's push, or 0 */
/* How many threads act for an owner now: while none does, the reads skip
 * the thread-local lookup (a call into ld.so for a dlopen'd module). */
static Py_ssize_t threads_acting;

static void acting_enter(void)
{
    if (acting_depth++ == 0)
        threads_acting++;
}

static void acting_leave(void)
{
    if (--acting_depth == 0)
        threads_acting--;
}
static PyObject *base_owner; /* what acting_top answers for the door's pushes */

/* --- the thread's context, without a call into libvlcs per read ------------------- */

/* libvlcs moves *owner_epoch on whenever any thread's context changes, so a
 * thread's context read at count n holds while the count is n.  Entries are
 * keyed by the thread state's id, unique for the interpreter's life, so a
 * new thread never finds an ended one's entry.  Written with the GIL held. */
#define THREADS_SEEN 64
static struct {
    uint64_t id, epoch;
    void *ctx;
} threads_seen[THREADS_SEEN];

static inline __attribute__((always_inline)) void *context_of(PyThreadState *ts)
{
    uint64_t epoch = __atomic_load_n(owner_epoch, __ATOMIC_ACQUIRE);
    size_t i = (size_t)ts->id & (THREADS_SEEN - 1);
    if (threads_seen[i].id == ts->id && threads_seen[i].epoch == epoch)
        return threads_seen[i].ctx;
    /* Read after the count: a change that lands in between moves the count
     * past the one stored, and the next read asks again. */
    void *ctx = thread_context();
    threads_seen[i].id = ts->id;
    threads_seen[i].epoch = epoch;
    threads_seen[i].ctx = ctx;
    return ctx;
}

/* --- whose read it is ---------------------------------------------------------- */

enum { SHARED, ANYWHERE, BASE_ONLY }; /* the name's top-level package */

static int verdict_of(PyObject *name)
{
    PyObject *v = PyDict_GetItemWithError(verdicts, name);
    if (v != NULL)
        return (int)PyLong_AsLong(v);
    if (PyErr_Occurred())
        return -1;
    Py_ssize_t len = PyUnicode_GET_LENGTH(name);
    Py_ssize_t dot = PyUnicode_FindChar(name, '.', 0, len, 1);
    if (dot == -2)
        return -1;
    PyObject *top = dot < 0 ? Py_NewRef(name) : PyUnicode_Substring(name, 0, dot);
    if (top == NULL)
        return -1;
    int verdict = PySet_Contains(shared_names, top);
    if (verdict == 1) {
        verdict = SHARED;
    } else if (verdict == 0) {
        verdict = PySet_Contains(context_names, top);
        if (verdict >= 0)
            verdict = verdict ? ANYWHERE : BASE_ONLY;
    }
    Py_DECREF(top);
    if (verdict < 0)
        return -1;
    if (PyDict_GET_SIZE(verdicts) > 8192)
        PyDict_Clear(verdicts); /* probes of arbitrary names must not grow it for good */
    PyObject *code = PyLong_FromLong(verdict);
    int rc = code ? PyDict_SetItem(verdicts, name, code) : -1;
    Py_XDECREF(code);
    return rc < 0 ? -1 : verdict;
}

/* The names code reads are mostly the same string objects each time (the
 * constants of its code): a direct-mapped cache by address answers them
 * without hashing.  It holds the names, so an address is never another's. */
#define NAME_CACHE 1024
static struct {
    PyObject *name;
    int verdict;
} name_cache[NAME_CACHE];

static void names_forget(void)
{
    for (size_t i = 0; i < NAME_CACHE; i++)
        Py_CLEAR(name_cache[i].name);
    PyDict_Clear(verdicts);
}

static inline size_t name_slot(PyObject *name)
{
    uintptr_t a = (uintptr_t)name;
    return (size_t)((a >> 4) ^ (a >> 14)) & (NAME_CACHE - 1);
}

static int name_verdict(PyObject *name)
{
    size_t i = name_slot(name);
    if (name_cache[i].name == name)
        return name_cache[i].verdict;
    int verdict = verdict_of(name);
    if (verdict >= 0) {
        Py_XSETREF(name_cache[i].name, Py_NewRef(name));
        name_cache[i].verdict = verdict;
    }
    return verdict;
}

enum answer { ERROR = -1, STORAGE, TABLE, FOUND, SLOW };

/* Whose answer a read of name is: the storage's (the base, or a shared
 * name), an owner's table (*table, borrowed), or the Python rules'.  FOUND:
 * the storage's, which it had to look in already: *item (borrowed; NULL:
 * absent). */
static __attribute__((noinline)) enum answer decide_fully(PyObject *self, PyObject *name,
                                                          bool from_python_only, PyObject **table,
                                                          PyObject **item)
{
    if (!PyUnicode_CheckExact(name))
        return STORAGE; /* not a module name: is_shared() says shared */
    int verdict = name_verdict(name);
    if (verdict < 0)
        return ERROR;
    if (verdict == SHARED)
        return STORAGE;
    if (threads_acting > 0 && acting_depth > 0) {
        *table = acting_table;
        return acting_table ? TABLE : STORAGE;
    }
    if (verdict == BASE_ONLY) {
        PyObject *found = PyDict_GetItemWithError(self, name);
        if (found == NULL) {
            if (PyErr_Occurred())
                return ERROR;
            *item = NULL; /* in no owner's table at all */
            return FOUND;
        }
        *item = found;
    }
    PyThreadState *ts = thread_state();
    frame_t *f = frame_current(ts);
    if (f == NULL)
        return SLOW;
    if (!from_python_only && op_kind[frame_opcode(f)] != READ_OP && natives)
        return SLOW; /* C code's read: the native stack decides first */
    /* the thread's context, asked for only when a frame leaves it open */
    enum { UNASKED, NONE, SOME } asked = thread_context ? UNASKED : NONE;
    void *ctx = NULL;
    PyObject *owners_table = NULL; /* the base's */
    for (; f != NULL; f = frame_below(f)) {
        if (!frame_complete(f))
            continue;
        struct slot *s = map_find(&owners, (uintptr_t)frame_globals(f));
        if (s == NULL)
            continue;
        if (s->kind == BASE_MODULE && asked == UNASKED) {
            ctx = context_of(ts);
            asked = ctx ? SOME : NONE;
        }
        if (s->kind == OWNED || asked == NONE) {
            owners_table = s->modules;
            goto decided;
        }
    }
    if (asked == UNASKED) {
        ctx = context_of(ts);
        asked = ctx ? SOME : NONE;
    }
    if (ctx != NULL) {
        /* a context Python does not know: the base's */
        struct slot *s = map_find(&contexts, (uintptr_t)ctx);
        owners_table = s ? s->modules : NULL;
    }
decided:
    if (owners_table != NULL) {
        *table = owners_table;
        return TABLE;
    }
    return verdict == BASE_ONLY ? FOUND : STORAGE; /* BASE_ONLY: *item looked up above */
}

/* The verdict on name if it is known already (SHARED for what is not an
 * exact str: not a module name, the storage's), or -1. */
static inline int verdict_known(PyObject *name)
{
    if (!PyUnicode_CheckExact(name))
        return SHARED;
    size_t i = name_slot(name);
    return name_cache[i].name == name ? name_cache[i].verdict : -1;
}

/* The owner's entry of the nearest frame below f (whose globals are no
 * one's) that has one, or NULL.  The frames it walks are written into
 * last_chain (*walked of them; *keep: each complete, or a C call's entry
 * frame, whose globals are unset and which is kept by address alone, as no
 * Python frame lies on the C stack); decide_by_frames keeps the chain. */
static struct slot *owner_below(frame_t *f, int *walked, bool *keep)
{
    not_owned[not_owned_slot((uintptr_t)frame_globals(f))] = (uintptr_t)frame_globals(f);
    last_chain.globals = 0; /* its frames are written over */
    int n = 0;
    bool ok = true;
    struct slot *s = NULL;
    for (f = frame_below(f); f != NULL && s == NULL; f = frame_below(f)) {
        bool complete = frame_complete(f);
        if (n < CHAIN) {
            last_chain.frames[n] = f;
            last_chain.globals_of[n] = complete ? (uintptr_t)frame_globals(f) : 0;
        }
        n++;
        if (!complete) {
            ok = ok && frame_of_c_call(f);
            continue;
        }
        uintptr_t g = (uintptr_t)frame_globals(f);
        if (not_owned[not_owned_slot(g)] == g)
            continue;
        s = map_find(&owners, g);
        if (s == NULL)
            not_owned[not_owned_slot(g)] = g;
    }
    *walked = n;
    *keep = ok && n <= CHAIN;
    return s;
}

/* The reads the base makes most, answered in a few dozen instructions (the
 * goal is a dict lookup's time, plus a fifth): a name whose verdict is
 * known (not SHARED: the callers answer those), read by Python code, with
 * no thread acting for an owner, decided by the nearest frame of a module
 * whose owner is known (shared code, such as the script's or the standard
 * library's, looks further down, as in decide_fully), or by the thread's
 * context when there is none.  Gives the answer decide_fully gives, or SLOW
 * where that would ask more. */
/* What decide_by_frames is asked with. */
struct frames_ask {
    PyThreadState *ts;
    frame_t *f;
    uintptr_t g;
    uint64_t epoch;
    bool from_c, asked;
};

/* decide_quickly's answer where the last decision is not the answer: the
 * C caller noted, else the frames' (see decide_quickly).  Apart, so that
 * the reads that the last decision answers save no registers. */
static __attribute__((noinline)) enum answer decide_by_frames(PyThreadState *ts, frame_t *f,
                                                             uintptr_t g, uint64_t epoch,
                                                             bool from_c, PyObject **table)
{
    if (from_c) {
        void *h = c_caller != NULL ? c_caller() : NULL;
        if (h == SOME_CONTEXT)
            return SLOW; /* a context's code, not named: the native stack says whose */
        if (h != NULL) { /* a context's C code called the C API: its table */
            struct slot *c = map_find(&contexts, (uintptr_t)h);
            *table = c != NULL ? c->modules : NULL;
            return *table != NULL ? TABLE : STORAGE;
        }
    }
    /* shared code (the script's) known as no one's: the frames below */
    struct slot *s = not_owned[not_owned_slot(g)] == g ? NULL : map_find(&owners, g);
    int walked = 0;
    bool below = s == NULL, keep = false;
    if (below)
        s = owner_below(f, &walked, &keep);
    if (s == NULL) { /* no module of a known owner on the stack: the thread's context */
        if (thread_context == NULL)
            return SLOW;
        void *ctx = context_of(ts);
        struct slot *c = ctx != NULL ? map_find(&contexts, (uintptr_t)ctx) : NULL;
        *table = c != NULL ? c->modules : NULL; /* a context Python does not know: the base's */
    } else {
        if (s->kind == BASE_MODULE && (thread_context == NULL || context_of(ts) != NULL))
            return SLOW; /* a base module's code on a context's thread: the frames below decide */
        if (!below) { /* decided by the reading code's own module */
            last_decision.globals = g;
            last_decision.thread = (uint64_t)ts->id;
            last_decision.epoch = epoch;
            last_decision.table = s->modules;
        }
        *table = s->modules;
    }
    /* The frames say a context's, and C code reads without a context's
     * call noted: the base's C code, called from the context's code, may
     * be the reader; the native stack decides (the Python half). */
    if (*table != NULL && from_c)
        return SLOW;
    if (below && keep && !from_c) { /* decided by the frames below: keep the chain */
        last_chain.top = f;
        last_chain.thread = (uint64_t)ts->id;
        last_chain.epoch = epoch;
        last_chain.n = walked;
        last_chain.to_bottom = s == NULL;
        last_chain.table = *table;
        last_chain.globals = g;
    }
    return *table != NULL ? TABLE : STORAGE;
}

/* decide_quickly's answer, or SLOW when it would call decide_by_frames
 * (in_frames set) or ask more (in_frames clear). */
static inline __attribute__((always_inline)) enum answer decide_cached(bool from_python_only,
                                                                       PyObject **table,
                                                                       struct frames_ask *in_frames)
{
    if (threads_acting > 0)
        return SLOW;
    PyThreadState *ts = thread_state();
    frame_t *f = frame_top(ts);
    if (f == NULL)
        return SLOW;
#if PY_VERSION_HEX >= 0x030D0000
    /* 3.13 points an incomplete frame at its first instruction, never a
     * read or a call: a frame on one is complete */
    int op = frame_opcode(f);
    if (op_kind[op] == 0 && !frame_complete(f))
        return SLOW;
#else
    /* before, an incomplete frame points before its code */
    if (!frame_complete(f))
        return SLOW;
    int op = frame_opcode(f);
#endif
    /* C code's read (CPython's import, an extension module's C API call) */
    bool from_c = !from_python_only && natives && op_kind[op] != READ_OP;
    uintptr_t g = (uintptr_t)frame_globals(f);
    /* read before the context is, as context_of does: a change in between
     * leaves an older count with the decision, which the next read redoes */
    uint64_t epoch = __atomic_load_n(owner_epoch, __ATOMIC_ACQUIRE);
    if (!from_c && g == last_decision.globals && (uint64_t)ts->id == last_decision.thread &&
        epoch == last_decision.epoch) {
        *table = last_decision.table;
        return *table != NULL ? TABLE : STORAGE;
    }
    if (!from_c && g == last_chain.globals && (const void *)f == last_chain.top &&
        (uint64_t)ts->id == last_chain.thread && epoch == last_chain.epoch) {
        frame_t *b = f;
        int k = 0;
        while (k < last_chain.n) {
            b = frame_below(b);
            if ((const void *)b != last_chain.frames[k] ||
                (last_chain.globals_of[k] != 0 &&
                 (uintptr_t)frame_globals(b) != last_chain.globals_of[k]))
                break;
            k++;
        }
        if (k == last_chain.n && (!last_chain.to_bottom || frame_below(b) == NULL)) {
            *table = last_chain.table;
            return *table != NULL ? TABLE : STORAGE;
        }
    }
    *in_frames = (struct frames_ask){ts, f, g, epoch, from_c, true};
    return SLOW;
}

static inline __attribute__((always_inline)) enum answer decide_quickly(bool from_python_only,
                                                                        PyObject **table)
{
    struct frames_ask ask = {.asked = false};
    enum answer quick = decide_cached(from_python_only, table, &ask);
    if (quick != SLOW || !ask.asked)
        return quick;
    return decide_by_frames(ask.ts, ask.f, ask.g, ask.epoch, ask.from_c, table);
}

/* Whose answer a read of name is (see decide_fully); verdict is
 * verdict_known(name), which the reads look at first themselves. */
static inline __attribute__((always_inline)) enum answer decide(PyObject *self, PyObject *name, int verdict, bool from_python_only,
                                 PyObject **table, PyObject **item)
{
    if (verdict == SHARED)
        return STORAGE;
    enum answer quick = verdict < 0 ? SLOW : decide_quickly(from_python_only, table);
    return quick != SLOW ? quick : decide_fully(self, name, from_python_only, table, item);
}

/* --- the table type: the hot methods ------------------------------------------- */

/* Each read is in three parts, so that the commonest costs least:
 *
 *   - the front answers a name whose verdict is SHARED (or that is no str)
 *     from the storage with a tail call: it saves no registers and builds
 *     no frame, so `sys.modules["os"]`, or a C import's lookup of a
 *     standard module, costs a dict lookup and about fifteen instructions;
 *   - the middle (noinline: its prologue is paid only here) takes
 *     decide_quickly's answer, one dict to read.  A BASE_ONLY name is
 *     looked up in the storage first: absent there, it is absent for all
 *     (the common probe for an optional package, "polars" in sys.modules),
 *     and it is in no context's table;
 *   - the rest (noinline) is every other case, through decide(). */

static binaryfunc dict_subscript; /* PyDict_Type's own slots, read once */
static objobjproc dict_contains;

/* dict.get's own C function (found at import), so that a read answered
 * from a dict costs what dict.get costs, argument checks included. */
typedef PyObject *(*fastcall_fn)(PyObject *, PyObject *const *, Py_ssize_t);
static fastcall_fn dict_get;

static __attribute__((noinline)) PyObject *subscript_rest(PyObject *self, PyObject *name,
                                                          int verdict)
{
    PyObject *table = NULL, *module = NULL, *found = NULL;
    if (verdict == BASE_ONLY) {
        found = dict_subscript(self, name);
        if (found == NULL)
            return NULL; /* KeyError: in no owner's table */
    }
    enum answer answer = decide(self, name, verdict, false, &table, &module);
    if (found != NULL) {
        if (answer == STORAGE)
            return found;
        Py_DECREF(found);
    }
    switch (answer) {
    case STORAGE:
        return dict_subscript(self, name);
    case TABLE:
        return dict_subscript(table, name);
    case FOUND:
        if (module != NULL)
            return Py_NewRef(module);
        PyErr_SetObject(PyExc_KeyError, name);
        return NULL;
    case SLOW:
        return PyObject_CallMethodOneArg(self, str_slow_getitem, name);
    default:
        return NULL;
    }
}

static __attribute__((noinline)) PyObject *subscript_owned(PyObject *self, PyObject *name,
                                                           int verdict)
{
    PyObject *table;
    struct frames_ask ask;
    switch (verdict >= 0 ? decide_cached(false, &table, &ask) : SLOW) {
    case STORAGE:
        return dict_subscript(self, name);
    case TABLE:
        if (verdict != BASE_ONLY)
            return dict_subscript(table, name);
        PyErr_SetObject(PyExc_KeyError, name); /* in no context's table */
        return NULL;
    default:
        return subscript_rest(self, name, verdict);
    }
}

static PyObject *table_subscript(PyObject *self, PyObject *name)
{
    int verdict = verdict_known(name);
    if (verdict == SHARED)
        return dict_subscript(self, name);
    return subscript_owned(self, name, verdict);
}

static __attribute__((noinline)) int contains_rest(PyObject *self, PyObject *name, int verdict)
{
    PyObject *table = NULL, *module = NULL;
    int in_storage = -1;
    if (verdict == BASE_ONLY) {
        in_storage = dict_contains(self, name);
        if (in_storage <= 0)
            return in_storage;
    }
    switch (decide(self, name, verdict, false, &table, &module)) {
    case STORAGE:
        return in_storage >= 0 ? in_storage : dict_contains(self, name);
    case TABLE:
        return verdict == BASE_ONLY ? 0 : PyDict_Contains(table, name);
    case FOUND:
        return module != NULL;
    case SLOW: {
        PyObject *r = PyObject_CallMethodOneArg(self, str_slow_contains, name);
        if (r == NULL)
            return -1;
        int truth = PyObject_IsTrue(r);
        Py_DECREF(r);
        return truth;
    }
    default:
        return -1;
    }
}

static __attribute__((noinline)) int contains_owned(PyObject *self, PyObject *name, int verdict)
{
    PyObject *table;
    struct frames_ask ask;
    switch (verdict >= 0 ? decide_cached(false, &table, &ask) : SLOW) {
    case STORAGE:
        return dict_contains(self, name);
    case TABLE:
        return verdict == BASE_ONLY ? 0 : dict_contains(table, name);
    default:
        return contains_rest(self, name, verdict);
    }
}

static int table_contains(PyObject *self, PyObject *name)
{
    int verdict = verdict_known(name);
    if (verdict == SHARED)
        return dict_contains(self, name);
    return contains_owned(self, name, verdict);
}

static __attribute__((noinline)) PyObject *get_rest(PyObject *self, PyObject *const *args,
                                                    Py_ssize_t nargs, int verdict)
{
    PyObject *name = args[0], *fallback = nargs == 2 ? args[1] : Py_None;
    PyObject *table = NULL, *module = NULL, *found = NULL;
    if (verdict == BASE_ONLY) {
        /* fallback: absent for everyone, or the base's module is fallback
         * itself, which is every owner's answer then */
        found = dict_get(self, args, nargs);
        if (found == NULL || found == fallback)
            return found;
    }
    enum answer answer = decide(self, name, verdict, true, &table, &module);
    if (found != NULL) {
        if (answer == STORAGE)
            return found;
        Py_DECREF(found);
    }
    switch (answer) {
    case STORAGE:
        return dict_get(self, args, nargs);
    case TABLE:
        return dict_get(table, args, nargs);
    case FOUND:
        return Py_NewRef(module ? module : fallback);
    case SLOW:
        return PyObject_CallMethodObjArgs(self, str_slow_get, name, fallback, NULL);
    default:
        return NULL;
    }
}

static __attribute__((noinline)) PyObject *get_owned(PyObject *self, PyObject *const *args,
                                                     Py_ssize_t nargs, int verdict)
{
    PyObject *table;
    struct frames_ask ask;
    switch (verdict >= 0 ? decide_cached(true, &table, &ask) : SLOW) {
    case STORAGE:
        return dict_get(self, args, nargs);
    case TABLE:
        if (verdict == BASE_ONLY) /* in no context's table */
            return Py_NewRef(nargs == 2 ? args[1] : Py_None);
        return dict_get(table, args, nargs);
    default:
        return get_rest(self, args, nargs, verdict);
    }
}

static PyObject *table_get(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || nargs > 2)
        return dict_get(self, args, nargs); /* its TypeError */
    int verdict = verdict_known(args[0]);
    if (verdict == SHARED)
        return dict_get(self, args, nargs);
    return get_owned(self, args, nargs, verdict);
}

static getiterfunc dict_iter;
static lenfunc dict_length;
static PyObject *str_slow_iter, *str_slow_len;

/* Iteration and len(): the base's code gets the storage's, as from a dict;
 * the rest goes to the owner rules (modtable.py's _slow_iter, _slow_len),
 * which answer with the owner's view. */
static PyObject *table_iter(PyObject *self)
{
    PyObject *table = NULL;
    if (decide_quickly(true, &table) == STORAGE)
        return dict_iter(self);
    return PyObject_CallMethodNoArgs(self, str_slow_iter);
}

static Py_ssize_t table_length(PyObject *self)
{
    PyObject *table = NULL;
    if (decide_quickly(true, &table) == STORAGE)
        return dict_length(self);
    PyObject *n = PyObject_CallMethodNoArgs(self, str_slow_len);
    if (n == NULL)
        return -1;
    Py_ssize_t len = PyLong_AsSsize_t(n);
    Py_DECREF(n);
    return len;
}

static PyMethodDef table_methods[] = {
    {"get", (PyCFunction)(void (*)(void))table_get, METH_FASTCALL,
     "D.get(name, default=None): the caller's owner's module, or default."},
    {NULL, NULL, 0, NULL},
};

/* A heap type, so that the Python half's methods can be set on it
 * (modtable.py): the table is then exactly this type, and the interpreter
 * specialises calls of its C methods (a subclass's instances miss that). */
static PyType_Slot table_slots[] = {
    {Py_mp_subscript, (void *)table_subscript},
    {Py_sq_contains, (void *)table_contains},
    {Py_tp_iter, (void *)table_iter},
    {Py_mp_length, (void *)table_length},
    {Py_tp_methods, table_methods},
    {Py_tp_doc, "sys.modules per owner: the reads in C, the rest set by modtable.py."},
    {0, NULL},
};

static PyType_Spec table_spec = {
    .name = "vlcs._isolation._fast.Table",
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .slots = table_slots,
};

/* --- the import statement's door ------------------------------------------------- */

static PyObject *import_for_base(PyObject *name, PyObject *globals, PyObject *locals,
                                 PyObject *fromlist, int level)
{
    /* Imports CPython runs for the base read the storage (rule 2), even
     * where C code of another owner is on the native stack. */
    PyObject *saved = acting_table;
    Py_ssize_t saved_door = door_depth;
    acting_enter();
    door_depth = acting_depth;
    acting_table = NULL;
    PyObject *module = PyImport_ImportModuleLevelObject(name, globals, locals, fromlist, level);
    acting_table = saved;
    door_depth = saved_door;
    acting_leave();
    return module;
}

static PyObject *long_zero;
static PyObject *str_package, *str_path, *str_dot;

/* The absolute name of an import of name at level from the module with
 * globals, as importlib resolves it from __package__, or NULL (no error
 * set) where that needs more (no __package__, a level past the top). */
static PyObject *absolute_name(PyObject *name, PyObject *globals, int level)
{
    if (level == 0)
        return Py_NewRef(name);
    PyObject *package = PyDict_GetItemWithError(globals, str_package); /* borrowed */
    if (package == NULL || !PyUnicode_CheckExact(package)) {
        PyErr_Clear();
        return NULL;
    }
    Py_ssize_t end = PyUnicode_GET_LENGTH(package);
    for (int i = 1; i < level && end > 0; i++) {
        Py_ssize_t dot = PyUnicode_FindChar(package, '.', 0, end, -1);
        if (dot < 0) {
            end = 0;
            break;
        }
        end = dot;
    }
    if (end <= 0) {
        PyErr_Clear();
        return NULL;
    }
    PyObject *base = PyUnicode_Substring(package, 0, end);
    if (base == NULL || PyUnicode_GET_LENGTH(name) == 0)
        return base;
    PyObject *dotted = PyUnicode_Concat(base, str_dot);
    Py_DECREF(base);
    if (dotted == NULL)
        return NULL;
    PyObject *full = PyUnicode_Concat(dotted, name);
    Py_DECREF(dotted);
    return full;
}

/* obj's attribute name in *value: 1, 0 (absent, no error), or -1. */
static int optional_attr(PyObject *obj, PyObject *name, PyObject **value)
{
#if PY_VERSION_HEX >= 0x030D0000
    return PyObject_GetOptionalAttr(obj, name, value);
#else
    return _PyObject_LookupAttr(obj, name, value);
#endif
}

/* Whether obj has attribute name: 1, 0, or -1 with an error set. */
static int has_attr(PyObject *obj, PyObject *name)
{
    PyObject *value;
    int found = optional_attr(obj, name, &value);
    Py_XDECREF(value);
    return found;
}

static PyObject *str_spec, *str_initializing;

/* Whether module is being imported (its spec says so), as CPython's import
 * asks before it hands a module out; an error counts as so (CPython's
 * import then says what). */
static bool initializing(PyObject *module)
{
    PyObject *spec, *flag;
    int found = optional_attr(module, str_spec, &spec);
    if (found <= 0)
        return found < 0;
    found = optional_attr(spec, str_initializing, &flag);
    Py_DECREF(spec);
    if (found <= 0)
        return found < 0;
    int truth = PyObject_IsTrue(flag);
    Py_DECREF(flag);
    return truth != 0;
}

/* An import statement of a context's module, answered from the context's
 * table where every module it names is there already (a function-level
 * import, after the first): what the Python door answers then, without
 * running it.  NULL with no error set: the door decides. */
static PyObject *import_from_table(PyObject *table, PyObject *name, PyObject *globals,
                                   PyObject *fromlist, int level, bool base)
{
    PyObject *absname = absolute_name(name, globals, level);
    if (absname == NULL)
        return NULL;
    PyObject *module = NULL;
    int verdict = level == 0 ? ANYWHERE : name_verdict(absname);
    if (verdict == SHARED || verdict < 0) /* a shared module: the door's */
        goto done;
    module = PyDict_GetItemWithError(table, absname); /* borrowed; the storage's for the base */
    if (module == NULL)
        goto done;
    if (base && initializing(module)) { /* CPython waits for the thread importing it */
        module = NULL;
        goto done;
    }
    int from = fromlist != NULL && fromlist != Py_None ? PyObject_IsTrue(fromlist) : 0;
    if (from < 0) {
        module = NULL;
        goto done;
    }
    if (from) {
        /* from module import x, ...: each x already an attribute (or module
         * not a package), as _fromlist leaves them */
        if (!PyTuple_CheckExact(fromlist)) {
            module = NULL;
            goto done;
        }
        int package = has_attr(module, str_path);
        if (package < 0) {
            module = NULL;
            goto done;
        }
        for (Py_ssize_t i = 0; package && i < PyTuple_GET_SIZE(fromlist); i++) {
            PyObject *x = PyTuple_GET_ITEM(fromlist, i);
            int has = PyUnicode_CheckExact(x) && PyUnicode_CompareWithASCIIString(x, "*") != 0
                          ? has_attr(module, x)
                          : 0;
            if (has <= 0) {
                module = NULL;
                goto done;
            }
        }
        Py_INCREF(module);
        goto done;
    }
    /* import a.b.c gives a; from . import-less forms give the package of
     * name's first part */
    if (level > 0 && PyUnicode_GET_LENGTH(name) == 0) {
        Py_INCREF(module);
        goto done;
    }
    Py_ssize_t first = PyUnicode_FindChar(name, '.', 0, PyUnicode_GET_LENGTH(name), 1);
    if (first == -2) {
        module = NULL;
        goto done;
    }
    if (first < 0) {
        Py_INCREF(module);
        goto done;
    }
    Py_ssize_t cut = PyUnicode_GET_LENGTH(name) - first;
    PyObject *head = PyUnicode_Substring(absname, 0, PyUnicode_GET_LENGTH(absname) - cut);
    module = head ? PyDict_GetItemWithError(table, head) : NULL;
    Py_XDECREF(head);
    if (module != NULL && base && initializing(module))
        module = NULL; /* import a.b of a being imported: CPython waits for a too */
    Py_XINCREF(module);
done:
    Py_DECREF(absname);
    if (module == NULL)
        PyErr_Clear(); /* the door decides, and says what is wrong */
    return module;
}

/* builtins.__import__: shared names, and the base's import statements, go
 * straight to CPython's import; the rest to the Python door. */
static PyObject *door_import(PyObject *mod, PyObject *const *args, Py_ssize_t nargs,
                             PyObject *kwnames)
{
    (void)mod;
    /* While a thread acts for a context, the Python door decides. */
    if (kwnames != NULL || nargs < 1 || nargs > 5 || !PyUnicode_CheckExact(args[0]) ||
        (threads_acting > 0 && acting_depth > 0 && acting_table != NULL))
        goto slow;
    PyObject *name = args[0];
    PyObject *globals = nargs > 1 ? args[1] : NULL;
    PyObject *locals = nargs > 2 ? args[2] : NULL;
    PyObject *fromlist = nargs > 3 ? args[3] : NULL;
    int level = 0;
    if (nargs > 4 && args[4] != long_zero) { /* the import statement's 0 is the small int */
        long lv = PyLong_AsLong(args[4]);
        if (lv == -1 && PyErr_Occurred())
            return NULL;
        if (lv < 0 || lv > INT32_MAX)
            goto slow; /* CPython's own message for a bad level */
        level = (int)lv;
    }
    if (level == 0) {
        int verdict = verdict_known(name);
        if (verdict < 0)
            verdict = name_verdict(name);
        if (verdict < 0)
            return NULL;
        if (verdict == SHARED)
            return PyImport_ImportModuleLevelObject(name, globals, locals, fromlist, 0);
    }
    /* An import statement: the importing module decides. */
    PyThreadState *ts = thread_state();
    frame_t *f = frame_current(ts);
    if (globals == NULL && level != 0)
        goto slow; /* CPython's error */
    if (f == NULL || globals == NULL || frame_globals(f) != globals ||
        !import_op[frame_opcode(f)]) {
        /* C code's import (Cython's, PyImport_Import) with the globals of
         * the module that asks: the base's module's is the base's, unless a
         * context's C code is noted calling (src/service_python.c) */
        struct slot *s = natives && globals ? map_find(&owners, (uintptr_t)globals) : NULL;
        if (s != NULL && s->kind == OWNED && s->modules == NULL &&
            (c_caller == NULL || c_caller() == NULL))
            return import_for_base(name, globals, locals, fromlist, level);
        /* __import__ called as a function, pickle's PyImport_Import: whose
         * it is, as the reads decide for C code; the base's, as above */
        PyObject *table = NULL;
        if (f == NULL || decide_quickly(false, &table) != STORAGE)
            goto slow;
        PyObject *module = import_from_table(PyImport_GetModuleDict(), name, globals, fromlist,
                                             level, true);
        if (module != NULL)
            return module;
        return import_for_base(name, globals, locals, fromlist, level);
    }
    struct slot *s = map_find(&owners, (uintptr_t)globals);
    if (s != NULL && s->modules == NULL &&
        (s->kind == OWNED || thread_context == NULL || context_of(ts) == NULL)) {
        /* the base's: what CPython's import answers, from the storage where
         * it holds every module named, complete; else CPython's import */
        PyObject *module = import_from_table(PyImport_GetModuleDict(), name, globals, fromlist,
                                             level, true);
        if (module != NULL)
            return module;
        return import_for_base(name, globals, locals, fromlist, level);
    }
    if (s != NULL && s->kind == OWNED && s->modules != NULL) {
        /* a context's module: its table, where it has all it names */
        PyObject *module = import_from_table(s->modules, name, globals, fromlist, level, false);
        if (module != NULL)
            return module;
    }
slow:
    return PyObject_Vectorcall(slow_import, args, (size_t)nargs, kwnames);
}

/* importlib.import_module: an absolute name the base's code imports (or a
 * shared one), already in the storage and complete, is what CPython's
 * import_module answers; one a context's module imports, already in its
 * table, is what the Python door answers.  Both without a frame of the
 * door (python/vlcs/_isolation/imports.py); it decides the rest. */
static PyObject *door_import_module(PyObject *mod, PyObject *const *args, Py_ssize_t nargs,
                                    PyObject *kwnames)
{
    (void)mod;
    if (kwnames != NULL || nargs < 1 || nargs > 2 || !PyUnicode_CheckExact(args[0]) ||
        PyUnicode_GET_LENGTH(args[0]) == 0 || PyUnicode_READ_CHAR(args[0], 0) == '.')
        goto slow; /* relative names and the errors: the door's */
    PyObject *name = args[0];
    int verdict = verdict_known(name);
    if (verdict < 0)
        verdict = name_verdict(name);
    if (verdict < 0)
        return NULL;
    if (verdict != SHARED) {
        PyObject *table = NULL;
        enum answer answer = decide_quickly(true, &table);
        if (answer == TABLE) {
            /* A context's module asks: what the door's load() answers, the
             * module in its table.  Other callers (the script's code in a
             * `with`, a base module's) are the door's to decide. */
            frame_t *f = frame_current(thread_state());
            struct slot *s = f ? map_find(&owners, (uintptr_t)frame_globals(f)) : NULL;
            if (s == NULL || s->kind != OWNED || s->modules != table)
                goto slow;
            PyObject *module = PyDict_GetItemWithError(table, name); /* borrowed */
            if (module == NULL && PyErr_Occurred())
                return NULL;
            if (module == NULL || module == Py_None)
                goto slow;
            return Py_NewRef(module);
        }
        if (answer != STORAGE)
            goto slow; /* one the frames alone do not decide */
    }
    PyObject *module = PyDict_GetItemWithError(PyImport_GetModuleDict(), name); /* borrowed */
    if (module == NULL) {
        if (PyErr_Occurred())
            return NULL;
        goto slow;
    }
    if (module == Py_None || initializing(module))
        goto slow; /* CPython's error; CPython waits for the thread importing it */
    return Py_NewRef(module);
slow:
    return PyObject_Vectorcall(slow_import_module, args, (size_t)nargs, kwnames);
}

/* decided(): whose code called the caller, where the frames alone decide
 * it as owners.resolve(frame, native=False) would: the base's owner, or a
 * context's table; None: ask the owner rules.  The views' and the table's
 * Python methods ask it first, so that they pay a C call, not a walk of the
 * frames in Python. */
static PyObject *fast_decided(PyObject *mod, PyObject *unused)
{
    (void)mod;
    (void)unused;
    PyObject *table = NULL;
    switch (base_owner != NULL ? decide_quickly(true, &table) : SLOW) {
    case STORAGE:
        return Py_NewRef(base_owner);
    case TABLE:
        return Py_NewRef(table);
    default:
        Py_RETURN_NONE;
    }
}

/* --- functions the views replace: the base's code calls the real one ----------- */

/* Routed(base, view): a callable that calls base where the frames alone say
 * the caller is the base's code, and view for every other caller (a
 * context's code, or one the owner rules must decide).  os.cpu_count,
 * os.environ's methods and the other views are Routed: the base's code pays
 * a C call and a decision, not a Python function.  Routed stands in for a
 * builtin function: as a class attribute it does not bind (3.10's pathlib
 * keeps io.open so); RoutedMethod stands in for a Python function, and
 * binds as one does. */
typedef struct {
    PyObject_HEAD
    PyObject *base, *view;
    vectorcallfunc vectorcall;
} routed_t;

static PyObject *routed_call(PyObject *self, PyObject *const *args, size_t nargsf,
                             PyObject *kwnames)
{
    routed_t *r = (routed_t *)self;
    PyObject *table = NULL;
    bool base = base_owner != NULL && decide_quickly(true, &table) == STORAGE;
    return PyObject_Vectorcall(base ? r->base : r->view, args, nargsf, kwnames);
}

static PyObject *routed_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *base, *view;
    static char *names[] = {"base", "view", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO:Routed", names, &base, &view))
        return NULL;
    if (!PyCallable_Check(base) || !PyCallable_Check(view)) {
        PyErr_SetString(PyExc_TypeError, "Routed(base, view) takes two callables");
        return NULL;
    }
    routed_t *r = (routed_t *)type->tp_alloc(type, 0);
    if (r == NULL)
        return NULL;
    r->base = Py_NewRef(base);
    r->view = Py_NewRef(view);
    r->vectorcall = routed_call;
    return (PyObject *)r;
}

static int routed_traverse(PyObject *self, visitproc visit, void *arg)
{
    routed_t *r = (routed_t *)self;
    Py_VISIT(r->base);
    Py_VISIT(r->view);
    Py_VISIT(Py_TYPE(self));
    return 0;
}

static int routed_clear(PyObject *self)
{
    routed_t *r = (routed_t *)self;
    Py_CLEAR(r->base);
    Py_CLEAR(r->view);
    return 0;
}

static void routed_dealloc(PyObject *self)
{
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    routed_clear(self);
    type->tp_free(self);
    Py_DECREF(type);
}

static PyObject *routed_get(PyObject *self, PyObject *obj, PyObject *type)
{
    (void)type;
    if (obj == NULL || obj == Py_None)
        return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

/* Its name, doc and signature are the real function's (help(), inspect). */
static PyObject *routed_getattro(PyObject *self, PyObject *name)
{
    PyObject *found = PyObject_GenericGetAttr(self, name);
    if (found != NULL || !PyErr_ExceptionMatches(PyExc_AttributeError))
        return found;
    PyErr_Clear();
    return PyObject_GetAttr(((routed_t *)self)->base, name);
}

static PyMemberDef routed_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(routed_t, vectorcall), READONLY, NULL},
    {"base", T_OBJECT, offsetof(routed_t, base), READONLY, "What the base's code calls."},
    {"view", T_OBJECT, offsetof(routed_t, view), READONLY, "What every other caller calls."},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot routed_slots[] = {
    {Py_tp_new, (void *)routed_new},
    {Py_tp_call, (void *)PyVectorcall_Call},
    {Py_tp_getattro, (void *)routed_getattro},
    {Py_tp_traverse, (void *)routed_traverse},
    {Py_tp_clear, (void *)routed_clear},
    {Py_tp_dealloc, (void *)routed_dealloc},
    {Py_tp_members, routed_members},
    {Py_tp_doc, "Routed(base, view): base for the base's code, view for every other caller."},
    {0, NULL},
};

static PyType_Spec routed_spec = {
    .name = "vlcs._isolation._fast.Routed",
    .basicsize = sizeof(routed_t),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .slots = routed_slots,
};

static PyType_Slot routed_method_slots[] = {
    {Py_tp_new, (void *)routed_new},
    {Py_tp_call, (void *)PyVectorcall_Call},
    {Py_tp_descr_get, (void *)routed_get},
    {Py_tp_getattro, (void *)routed_getattro},
    {Py_tp_traverse, (void *)routed_traverse},
    {Py_tp_clear, (void *)routed_clear},
    {Py_tp_dealloc, (void *)routed_dealloc},
    {Py_tp_members, routed_members},
    {Py_tp_doc, "RoutedMethod(base, view): Routed, binding as a function does."},
    {0, NULL},
};

static PyType_Spec routed_method_spec = {
    .name = "vlcs._isolation._fast.RoutedMethod",
    .basicsize = sizeof(routed_t),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
             Py_TPFLAGS_METHOD_DESCRIPTOR,
    .slots = routed_method_slots,
};

/* --- where libpython keeps the thread state (3.12+) --------------------------- */

#if PY_VERSION_HEX >= 0x030C0000
struct tls_of {
    uintptr_t code; /* an address in the object that holds the C API */
    void *data;     /* this thread's copy of its TLS segment, or NULL */
    size_t size;
};

/* The object is found by an address in it, not by its base: dladdr's base
 * of a non-PIE executable (a python that links libpython statically) is
 * where it is mapped, dl_iterate_phdr's is 0. */
static int tls_find(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct tls_of *t = arg;
    bool holds = false;
    for (int i = 0; i < info->dlpi_phnum && !holds; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        holds = ph->p_type == PT_LOAD && t->code >= lo && t->code - lo < ph->p_memsz;
    }
    if (!holds)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_TLS)
            t->size = info->dlpi_phdr[i].p_memsz;
    t->data = info->dlpi_tls_data;
    return 1;
}

/* The C API's object's TLS segment in the calling thread (libpython's, or
 * the executable's), as dl_iterate_phdr sees it. */
static struct tls_of tls_here(uintptr_t code)
{
    struct tls_of t = {.code = code};
    dl_iterate_phdr(tls_find, &t);
    return t;
}

static void *tls_other_thread(void *code)
{
    struct tls_of t = tls_here((uintptr_t)code);
    /* where this thread's copy lies from its thread pointer, or 0 */
    return t.data ? (void *)(intptr_t)((char *)t.data - (char *)__builtin_thread_pointer()) : NULL;
}

/* Finds tstate_offset, or leaves it 0 (then PyThreadState_Get is called):
 * the one word of libpython's TLS segment that holds this thread's state,
 * where the segment lies at the same distance from the thread pointer in a
 * new thread too (static TLS; a libpython loaded later, as an own-Python
 * runtime's copy is, has its segment allocated per thread on first use,
 * and a new thread has none yet). */
static void tstate_offset_find(void)
{
    uintptr_t code = (uintptr_t)(void *)PyThreadState_Get;
    struct tls_of t = tls_here(code);
    if (t.data == NULL || t.size < sizeof(void *))
        return;
    PyThreadState *ts = PyThreadState_Get();
    ptrdiff_t at = -1;
    for (size_t off = 0; off + sizeof(void *) <= t.size; off += sizeof(void *)) {
        PyThreadState *word;
        memcpy(&word, (char *)t.data + off, sizeof word);
        if (word == ts) {
            if (at >= 0)
                return; /* two words hold it: which one is ambiguous */
            at = (ptrdiff_t)off;
        }
    }
    if (at < 0)
        return;
    ptrdiff_t here = (char *)t.data - (char *)__builtin_thread_pointer();
    pthread_t other;
    void *there = NULL;
    if (pthread_create(&other, NULL, tls_other_thread, (void *)code) != 0)
        return;
    if (pthread_join(other, &there) != 0 || (ptrdiff_t)(intptr_t)there != here || here == 0)
        return;
    tstate_offset = here + at;
    if (*(PyThreadState **)((char *)__builtin_thread_pointer() + tstate_offset) != ts)
        tstate_offset = 0;
}
#endif

/* --- what the Python package tells this module ------------------------------- */

static PyObject *fast_configure(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *shared, *in_contexts, *base, *door, *door_module, *current, *epoch, *caller;
    Py_buffer reads, imports;
    if (!PyArg_ParseTuple(args, "O!O!OOOOOOy*y*", &PySet_Type, &shared, &PySet_Type,
                          &in_contexts, &base, &door, &door_module, &current, &epoch, &caller,
                          &reads, &imports))
        return NULL;
    bool ok = reads.len == 256 && imports.len == 256;
    if (ok) {
        memcpy(op_kind, reads.buf, 256);
        memcpy(import_op, imports.buf, 256);
    }
    PyBuffer_Release(&reads);
    PyBuffer_Release(&imports);
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "configure: the opcode tables hold 256 bytes each");
        return NULL;
    }
    void *fn = current == Py_None ? NULL : PyLong_AsVoidPtr(current);
    if (fn == NULL && PyErr_Occurred())
        return NULL;
    void *count = epoch == Py_None ? NULL : PyLong_AsVoidPtr(epoch);
    if (count == NULL && PyErr_Occurred())
        return NULL;
    void *caller_fn = caller == Py_None ? NULL : PyLong_AsVoidPtr(caller);
    if (caller_fn == NULL && PyErr_Occurred())
        return NULL;
    if ((fn == NULL) != (count == NULL)) {
        PyErr_SetString(PyExc_ValueError,
                        "configure: vlcs_current and vlcs_owner_epoch go together");
        return NULL;
    }
    owner_epoch = count != NULL ? count : &no_epoch;
    memset(threads_seen, 0, sizeof threads_seen);
    Py_XSETREF(shared_names, Py_NewRef(shared));
    Py_XSETREF(context_names, Py_NewRef(in_contexts));
    Py_XSETREF(slow_import, Py_NewRef(door));
    Py_XSETREF(slow_import_module, Py_NewRef(door_module));
    Py_XSETREF(base_owner, Py_NewRef(base));
    *(void **)&thread_context = fn;
    *(void **)&c_caller = caller_fn;
    names_forget();
    Py_RETURN_NONE;
}

static PyObject *fast_names_changed(PyObject *mod, PyObject *unused)
{
    (void)mod;
    (void)unused;
    names_forget();
    Py_RETURN_NONE;
}

static PyObject *table_or_none(PyObject *table)
{
    if (table != Py_None && !PyDict_CheckExact(table)) {
        PyErr_SetString(PyExc_TypeError, "an owner's table is a dict, or None for the base");
        return NULL;
    }
    return table == Py_None ? NULL : table;
}

static PyObject *fast_own(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *globals, *table;
    if (!PyArg_ParseTuple(args, "O!O", &PyDict_Type, &globals, &table))
        return NULL;
    PyObject *t = table_or_none(table);
    if (t == NULL && PyErr_Occurred())
        return NULL;
    if (map_put(&owners, (uintptr_t)globals, globals, t, OWNED) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *fast_base_module(PyObject *mod, PyObject *globals)
{
    (void)mod;
    if (!PyDict_Check(globals)) {
        PyErr_SetString(PyExc_TypeError, "base_module takes a module's globals");
        return NULL;
    }
    struct slot *s = map_find(&owners, (uintptr_t)globals);
    if (s == NULL && map_put(&owners, (uintptr_t)globals, globals, NULL, BASE_MODULE) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *fast_disown(PyObject *mod, PyObject *globals)
{
    (void)mod;
    map_del(&owners, (uintptr_t)globals);
    Py_RETURN_NONE;
}

static PyObject *fast_context(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *handle, *table;
    if (!PyArg_ParseTuple(args, "OO", &handle, &table))
        return NULL;
    void *h = PyLong_AsVoidPtr(handle);
    if (h == NULL && PyErr_Occurred())
        return NULL;
    if (table == Py_None) {
        map_del(&contexts, (uintptr_t)h);
        Py_RETURN_NONE;
    }
    PyObject *t = table_or_none(table);
    if (t == NULL)
        return NULL;
    if (map_put(&contexts, (uintptr_t)h, NULL, t, OWNED) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *fast_set_natives(PyObject *mod, PyObject *flag)
{
    (void)mod;
    int truth = PyObject_IsTrue(flag);
    if (truth < 0)
        return NULL;
    natives = truth;
    Py_RETURN_NONE;
}

static PyObject *fast_acting_push(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *owner, *table;
    if (!PyArg_ParseTuple(args, "OO", &owner, &table))
        return NULL;
    PyObject *t = table_or_none(table);
    if (t == NULL && PyErr_Occurred())
        return NULL;
    if (acting_stack == NULL && (acting_stack = PyList_New(0)) == NULL)
        return NULL;
    PyObject *entry = PyTuple_Pack(2, owner, table);
    if (entry == NULL)
        return NULL;
    int rc = PyList_Append(acting_stack, entry);
    Py_DECREF(entry);
    if (rc < 0)
        return NULL;
    acting_table = t;
    acting_enter();
    Py_RETURN_NONE;
}

static PyObject *fast_acting_pop(PyObject *mod, PyObject *unused)
{
    (void)mod;
    (void)unused;
    Py_ssize_t n = acting_stack ? PyList_GET_SIZE(acting_stack) : 0;
    if (n == 0) {
        PyErr_SetString(PyExc_RuntimeError, "acting_pop without acting_push");
        return NULL;
    }
    if (PyList_SetSlice(acting_stack, n - 1, n, NULL) < 0)
        return NULL;
    acting_leave();
    acting_table = NULL;
    if (n > 1) {
        PyObject *t = PyTuple_GET_ITEM(PyList_GET_ITEM(acting_stack, n - 2), 1);
        acting_table = t == Py_None ? NULL : t;
    } else {
        Py_CLEAR(acting_stack); /* a thread that ends frees nothing else */
    }
    Py_RETURN_NONE;
}

/* The owner the thread acts for, or None.  The C door's pushes (an import
 * run for the base) are not on the list; it holds only the Python pushes. */
static PyObject *fast_acting_top(PyObject *mod, PyObject *unused)
{
    (void)mod;
    (void)unused;
    if (acting_depth > 0 && door_depth == acting_depth)
        return Py_NewRef(base_owner);
    Py_ssize_t n = acting_stack ? PyList_GET_SIZE(acting_stack) : 0;
    if (n == 0)
        Py_RETURN_NONE;
    return Py_NewRef(PyTuple_GET_ITEM(PyList_GET_ITEM(acting_stack, n - 1), 0));
}

static PyMethodDef fast_functions[] = {
    {"import_", (PyCFunction)(void (*)(void))door_import, METH_FASTCALL | METH_KEYWORDS,
     "__import__(name, globals=None, locals=None, fromlist=(), level=0)"},
    {"import_module", (PyCFunction)(void (*)(void))door_import_module,
     METH_FASTCALL | METH_KEYWORDS,
     "import_module($module, /, name, package=None)\n--\n\n"
     "importlib.import_module, with the caller's owner's modules."},
    {"configure", fast_configure, METH_VARARGS,
     "configure(shared, in_contexts, base, python_import, python_import_module, vlcs_current_address, vlcs_owner_epoch_address, vlcs_python_c_caller_address, op_kinds, import_ops)"},
    {"names_changed", fast_names_changed, METH_NOARGS,
     "The shared names or the contexts' names grew: forget the verdicts."},
    {"own", fast_own, METH_VARARGS, "own(globals, table): code with these globals is table's owner's (None: the base's)."},
    {"base_module", fast_base_module, METH_O, "base_module(globals): a module of the base."},
    {"disown", fast_disown, METH_O, "disown(globals): no longer an owner's or the base's."},
    {"context", fast_context, METH_VARARGS, "context(handle, table): threads in the context read table (None: forget)."},
    {"set_natives", fast_set_natives, METH_O, "Whether C readers must be asked about on the native stack."},
    {"acting_push", fast_acting_push, METH_VARARGS, "acting_push(owner, table): the thread acts for owner."},
    {"acting_pop", fast_acting_pop, METH_NOARGS, "The thread stops acting for the last owner pushed."},
    {"acting_top", fast_acting_top, METH_NOARGS, "The owner the thread acts for, or None."},
    {"decided", fast_decided, METH_NOARGS,
     "Whose code called the caller, where the frames alone decide: the base's owner, or a "
     "context's table; None: ask the owner rules."},
    {"call_guarded", fast_call_guarded, METH_VARARGS,
     "call_guarded(vlcs_ctx_call_address, ctx, callable): (True, result), or (False, rc) when "
     "vlcs_ctx_call failed (a fault: the thread state is put back as before the call)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef fast_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "vlcs._isolation._fast",
    .m_doc = "The module table's reads and the import statement's door, in C.",
    .m_size = -1,
    .m_methods = fast_functions,
};

PyMODINIT_FUNC PyInit__fast(void)
{
#if PY_VERSION_HEX >= 0x030C0000
    tstate_offset_find();
#endif
    verdicts = PyDict_New();
    shared_names = PySet_New(NULL);
    context_names = PySet_New(NULL);
    str_slow_getitem = PyUnicode_InternFromString("_slow_getitem");
    str_slow_contains = PyUnicode_InternFromString("_slow_contains");
    str_slow_get = PyUnicode_InternFromString("_slow_get");
    str_slow_iter = PyUnicode_InternFromString("_slow_iter");
    str_slow_len = PyUnicode_InternFromString("_slow_len");
    if (!verdicts || !shared_names || !context_names || !str_slow_getitem || !str_slow_contains ||
        !str_slow_get || !str_slow_iter || !str_slow_len)
        return NULL;
    for (PyMethodDef *d = PyDict_Type.tp_methods; d != NULL && d->ml_name != NULL; d++)
        if (strcmp(d->ml_name, "get") == 0 && (d->ml_flags & ~METH_COEXIST) == METH_FASTCALL)
            dict_get = (fastcall_fn)(void (*)(void))d->ml_meth;
    long_zero = PyLong_FromLong(0);
    str_package = PyUnicode_InternFromString("__package__");
    str_path = PyUnicode_InternFromString("__path__");
    str_dot = PyUnicode_InternFromString(".");
    str_spec = PyUnicode_InternFromString("__spec__");
    str_initializing = PyUnicode_InternFromString("_initializing");
    if (long_zero == NULL || str_package == NULL || str_path == NULL || str_dot == NULL ||
        str_spec == NULL || str_initializing == NULL)
        return NULL;
    dict_subscript = PyDict_Type.tp_as_mapping->mp_subscript;
    dict_contains = PyDict_Type.tp_as_sequence->sq_contains;
    dict_iter = PyDict_Type.tp_iter;
    dict_length = PyDict_Type.tp_as_mapping->mp_length;
    if (dict_get == NULL) {
        PyErr_SetString(PyExc_ImportError, "vlcs._isolation._fast: this Python's dict.get is not a "
                                           "fast call; vlcs supports CPython 3.10 to 3.13");
        return NULL;
    }
    PyObject *m = PyModule_Create(&fast_module);
    if (m == NULL)
        return NULL;
    PyObject *table_type = PyType_FromSpecWithBases(&table_spec, (PyObject *)&PyDict_Type);
    if (table_type == NULL || PyModule_AddObject(m, "Table", table_type) < 0) {
        Py_XDECREF(table_type);
        Py_DECREF(m);
        return NULL;
    }
    PyType_Spec *routed_specs[] = {&routed_spec, &routed_method_spec};
    for (size_t i = 0; i < 2; i++) {
        PyObject *type = PyType_FromSpec(routed_specs[i]);
        const char *name = strrchr(routed_specs[i]->name, '.') + 1;
        if (type == NULL || PyModule_AddObject(m, name, type) < 0) {
            Py_XDECREF(type);
            Py_DECREF(m);
            return NULL;
        }
    }
    return m;
}

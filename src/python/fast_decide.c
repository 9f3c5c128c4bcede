/*
 * fast_decide.c - the state the Python package sets, the thread's context, and whose read
 * it is (decide_quickly, decide_fully).
 *
 * A part of vlcs._isolation._fast, compiled as one translation unit by
 * fast.c, which holds the includes and says why: see there.
 */
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

/*
 * fast_table.c - the table type: sys.modules's reads, iteration and length.
 *
 * A part of vlcs._isolation._fast, compiled as one translation unit by
 * fast.c, which holds the includes and says why: see there.
 */
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

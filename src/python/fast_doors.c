/*
 * fast_doors.c - the doors into the import system (the import statement's,
 * importlib.import_module) and the functions the views replace (Routed).
 *
 * A part of vlcs._isolation._fast, compiled as one translation unit by
 * fast.c, which holds the includes and says why: see there.
 */
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

/* An import statement answered from an owner's table (the storage for the
 * base) where every module it names is there already and complete (a
 * function-level import, after the first): what the door answers then,
 * without running it.  NULL with no error set: the door decides, and
 * waits for a module another thread is executing. */
static PyObject *import_from_table(PyObject *table, PyObject *name, PyObject *globals,
                                   PyObject *fromlist, int level)
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
    if (initializing(module)) { /* CPython waits for the thread importing it */
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
    if (module != NULL && initializing(module))
        module = NULL; /* import a.b of a being imported: CPython waits for a too */
    Py_XINCREF(module);
done:
    Py_DECREF(absname);
    if (module == NULL)
        PyErr_Clear(); /* the door decides, and says what is wrong */
    return module;
}

/* An import the base makes: what CPython's import answers, from the storage
 * where it holds every module named, complete; else CPython's import. */
static PyObject *import_as_base(PyObject *name, PyObject *globals, PyObject *locals,
                                PyObject *fromlist, int level)
{
    PyObject *module =
        import_from_table(PyImport_GetModuleDict(), name, globals, fromlist, level);
    return module != NULL ? module : import_for_base(name, globals, locals, fromlist, level);
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
        return import_as_base(name, globals, locals, fromlist, level);
    }
    struct slot *s = map_find(&owners, (uintptr_t)globals);
    if (s != NULL && s->modules == NULL &&
        (s->kind == OWNED || thread_context == NULL || context_of(ts) == NULL))
        return import_as_base(name, globals, locals, fromlist, level); /* a base module's */
    if (s != NULL && s->kind == OWNED && s->modules != NULL) {
        /* a context's module: its table, where it has all it names */
        PyObject *module = import_from_table(s->modules, name, globals, fromlist, level);
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
            if (module == NULL || module == Py_None || initializing(module))
                goto slow; /* the door waits for a module another thread executes */
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

/* The slots both types share; RoutedMethod adds binding. */
#define ROUTED_SLOTS                                                                               \
    {Py_tp_new, (void *)routed_new}, {Py_tp_call, (void *)PyVectorcall_Call},                      \
        {Py_tp_getattro, (void *)routed_getattro}, {Py_tp_traverse, (void *)routed_traverse},      \
        {Py_tp_clear, (void *)routed_clear}, {Py_tp_dealloc, (void *)routed_dealloc},              \
        {Py_tp_members, routed_members}

static PyType_Slot routed_slots[] = {
    ROUTED_SLOTS,
    {Py_tp_doc, "Routed(base, view): base for the base's code, view for every other caller."},
    {0, NULL},
};

static PyType_Slot routed_method_slots[] = {
    ROUTED_SLOTS,
    {Py_tp_descr_get, (void *)routed_get},
    {Py_tp_doc, "RoutedMethod(base, view): Routed, binding as a function does."},
    {0, NULL},
};

#define ROUTED_FLAGS (Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL)

static PyType_Spec routed_spec = {
    .name = "vlcs._isolation._fast.Routed",
    .basicsize = sizeof(routed_t),
    .flags = ROUTED_FLAGS,
    .slots = routed_slots,
};

static PyType_Spec routed_method_spec = {
    .name = "vlcs._isolation._fast.RoutedMethod",
    .basicsize = sizeof(routed_t),
    .flags = ROUTED_FLAGS | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .slots = routed_method_slots,
};

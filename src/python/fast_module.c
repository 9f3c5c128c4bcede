/*
 * fast_module.c - where libpython keeps the thread state (3.12+), what the Python package
 * tells the module, and the module itself.
 *
 * A part of vlcs._isolation._fast, compiled as one translation unit by
 * fast.c, which holds the includes and says why: see there.
 */
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

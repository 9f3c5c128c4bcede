/*
 * service_python.c - libpython as a service: a context's extension modules
 * read and write the module table through its methods.
 *
 * Once a context exists, the Python package stands a dict subclass (the
 * module table, python/vlcs/_isolation/modtable.py) in place of the interpreter's
 * module dict.  CPython reads a dict subclass through PyObject_GetItem and
 * friends, which the table answers per owner; but C code that calls
 * PyDict_GetItem*, PyDict_Contains*, PyDict_SetItem* or PyDict_DelItem* on
 * PyImport_GetModuleDict() reads and writes the dict's own storage, the
 * base's modules.  mypyc's native imports do so on every import of a
 * compiled module (tomli and chardet crashed in a context on the NULL), and
 * Cython's single-phase modules register themselves so.
 *
 * A context's forwarder for libpython points those entries here.  Called on
 * the table they do what the same call does on any mapping: the table's
 * methods decide whose module it is.  On any other dict they are the real
 * functions, one compare later.  The base's extension modules bind to
 * libpython itself and never come here.  All of them run with the GIL held,
 * as the C API requires of their callers.
 *
 * The entries that read or write the module table from C - PyImport_*,
 * and PyObject_GetItem and the mapping calls on the table - note, for as
 * long as they run, which context's code called them (found by the address
 * the call returns to).  The table's C half asks for it
 * (vlcs_python_c_caller) before it looks at Python frames: a context's C
 * code is answered from its own table without a walk of the native stack.
 * The base's C code never comes here, and its reads cost nothing more.
 *
 * PyInterpreterState_GetDict is replaced too: binding libraries keep their
 * registry of C++ types there (pybind11 3, nanobind), and a second copy of
 * a module must not find the first copy's.  A context's modules get their
 * context's own dict, registered by the Python package, so each context has
 * its registries without any of them ever being swapped in and out of the
 * interpreter's (which another thread, running a module of another owner
 * meanwhile, would see: pybind11 3 freed a context's call-once storage
 * under it so).
 */
#include "common.h"
#include "caller.h"
#include "context.h"
#include "copy_owners.h"
#include "error.h"
#include "families.h"
#include "forwarder.h"
#include "hooks.h"
#include "namespace.h"
#include "objects.h"
#include "registry.h"

typedef void *obj; /* PyObject *: vlcs is built without Python's headers */

/* The module table, or NULL: set by the Python package. */
static obj _Atomic module_table;

VLCS_API void vlcs_python_module_table(void *table)
{
    atomic_store(&module_table, table);
}

static bool is_table(obj d)
{
    return d != NULL && d == atomic_load_explicit(&module_table, memory_order_relaxed);
}

/* Each namespace's stand-in for the interpreter's dict, by ns_slot, or
 * NULL: set by the Python package, which keeps the dicts alive. */
static obj _Atomic state_dicts[NS_SLOTS];

VLCS_API int vlcs_python_state_dict(vlcs_ctx *h, void *dict)
{
    vlcs_ctx *c = ctx_get(h, "giving a context its interpreter dict");
    if (c == NULL)
        return -1;
    pthread_mutex_lock(&c->lock);
    bool has_ns = c->has_ns, copies = c->copy_mode;
    Lmid_t lmid = c->ns.lmid;
    if (copies) /* its copies are found by address (copies_owner) */
        atomic_store(&c->cp.py_state_dict, dict);
    pthread_mutex_unlock(&c->lock);
    if (copies)
        return 0;
    if (!has_ns) {
        set_error(VLCS_E_INVALID,
                  "Error giving context '%s' its interpreter dict: it has no namespace yet (load "
                  "a library into it first)",
                  c->name);
        return -1;
    }
    atomic_store(&state_dicts[ns_slot(lmid)], dict);
    return 0;
}

/* c's namespace is being given back: its interpreter dict goes with it. */
static void python_ns_gone(vlcs_ctx *c) { atomic_store(&state_dicts[ns_slot(c->ns.lmid)], NULL); }

/* libpython's own functions: the ones replaced, and the ones that read a
 * mapping.  Filled before any context binds to the forwarder. */
static struct {
    obj (*get_item)(obj, obj);
    obj (*get_item_with_error)(obj, obj);
    obj (*get_item_string)(obj, const char *);
    int (*get_item_ref)(obj, obj, obj *);             /* 3.13 */
    int (*get_item_string_ref)(obj, const char *, obj *); /* 3.13 */
    int (*contains)(obj, obj);
    int (*contains_string)(obj, const char *); /* 3.13 */
    int (*set_item)(obj, obj, obj);
    int (*set_item_string)(obj, const char *, obj);
    int (*del_item)(obj, obj);
    int (*del_item_string)(obj, const char *);
    obj (*state_dict)(obj); /* PyInterpreterState_GetDict */
    /* the C API's reads and writes of the module table, and its imports */
    obj (*object_get_item)(obj, obj);
    int (*object_set_item)(obj, obj, obj);
    int (*object_del_item)(obj, obj);
    int (*sequence_contains)(obj, obj);
    obj (*mapping_get_item_string)(obj, const char *);
    int (*mapping_has_key)(obj, obj);
    int (*mapping_has_key_string)(obj, const char *);
    int (*mapping_get_optional_item)(obj, obj, obj *);              /* 3.13 */
    int (*mapping_get_optional_item_string)(obj, const char *, obj *); /* 3.13 */
    int (*mapping_has_key_with_error)(obj, obj);                    /* 3.13 */
    int (*mapping_has_key_string_with_error)(obj, const char *);    /* 3.13 */
    obj (*get_module)(obj);
    obj (*add_module_object)(obj);
    obj (*add_module)(const char *);
    obj (*add_module_ref)(const char *); /* 3.13 */
    obj (*import_module)(const char *);
    obj (*import_module_no_block)(const char *);
    obj (*import_module_level)(const char *, obj, obj, obj, int);
    obj (*import_module_level_object)(obj, obj, obj, obj, int);
    obj (*import)(obj);
    obj (*reload_module)(obj);
} real;

/* --- whose C code calls ---------------------------------------------------------- */

/* The handle of the context whose code made the innermost hooked call that
 * this thread is in; NULL: none.  Only a context's code calls the hooks
 * (the base's binds to libpython itself), so a caller that is no live
 * context's is still a context's: VLCS_PYTHON_SOME_CONTEXT (a tail call
 * hid it, or its context was destroyed and its namespace kept). */
static _Thread_local vlcs_ctx *c_caller;

VLCS_API void *vlcs_python_c_caller(void) { return c_caller; }

static vlcs_ctx *caller_handle(const void *ret)
{
    /* A return address points after the call; -1 stays inside the caller. */
    vlcs_ctx *c = ctx_of_address((const char *)ret - 1);
    return c != NULL ? c->handle : (vlcs_ctx *)VLCS_PYTHON_SOME_CONTEXT;
}

/* return call, with the hook's caller noted meanwhile.  Used in the hooks
 * themselves (noinline), whose return address is the caller's. */
#define AS_CALLER(type, call)                                                                      \
    do {                                                                                           \
        vlcs_ctx *saved_ = c_caller;                                                               \
        c_caller = caller_handle(__builtin_return_address(0));                                     \
        type r_ = call;                                                                            \
        c_caller = saved_;                                                                         \
        return r_;                                                                                 \
    } while (0)
#define HOOK static __attribute__((noinline))

/* return call: on the module table (d) with the hook's caller noted, on
 * any other object as it is. */
#define ON_TABLE_AS_CALLER(type, call)                                                             \
    do {                                                                                           \
        if (!is_table(d))                                                                          \
            return call;                                                                           \
        AS_CALLER(type, call);                                                                     \
    } while (0)

static struct py_api {
    obj (*get)(obj, obj);          /* PyObject_GetItem */
    int (*set)(obj, obj, obj);     /* PyObject_SetItem */
    int (*del)(obj, obj);          /* PyObject_DelItem */
    int (*contains)(obj, obj);     /* PySequence_Contains: the table's __contains__ */
    obj (*str)(const char *);      /* PyUnicode_FromString */
    void (*decref)(obj);           /* Py_DecRef */
    obj (*occurred)(void);         /* PyErr_Occurred */
    int (*matches)(obj);           /* PyErr_ExceptionMatches */
    void (*clear)(void);           /* PyErr_Clear */
    void (*fetch)(obj *, obj *, obj *);
    void (*restore)(obj, obj, obj);
    obj *key_error; /* &PyExc_KeyError */
} py;

/* The table's entry for key as a new reference; NULL with no exception set
 * when the caller's owner has no such module. */
static obj table_get(obj d, obj key)
{
    obj v = py.get(d, key);
    if (v == NULL && py.matches(*py.key_error))
        py.clear();
    return v;
}

/* Borrowed, as a dict lends it: the owner's table holds the module. */
static obj borrowed(obj v)
{
    if (v != NULL)
        py.decref(v);
    return v;
}

/* PyDict_GetItem and PyDict_GetItemString swallow every error of their own
 * and keep the one already raised. */
static obj get_quietly(obj d, obj key, const char *name)
{
    obj t, v, tb;
    py.fetch(&t, &v, &tb);
    obj k = key != NULL ? key : py.str(name);
    obj r = k != NULL ? py.get(d, k) : NULL;
    if (r == NULL)
        py.clear();
    if (k != NULL && k != key)
        py.decref(k);
    py.restore(t, v, tb);
    return borrowed(r);
}

HOOK obj hook_get_item(obj d, obj key)
{
    if (!is_table(d))
        return real.get_item(d, key);
    AS_CALLER(obj, get_quietly(d, key, NULL));
}

HOOK obj hook_get_item_with_error(obj d, obj key)
{
    if (!is_table(d))
        return real.get_item_with_error(d, key);
    AS_CALLER(obj, borrowed(table_get(d, key)));
}

HOOK obj hook_get_item_string(obj d, const char *key)
{
    if (!is_table(d))
        return real.get_item_string(d, key);
    AS_CALLER(obj, get_quietly(d, NULL, key));
}

static int get_ref(obj d, obj key, obj *result)
{
    *result = key ? table_get(d, key) : NULL;
    return *result != NULL ? 1 : py.occurred() != NULL ? -1 : 0;
}

HOOK int hook_get_item_ref(obj d, obj key, obj *result)
{
    if (!is_table(d))
        return real.get_item_ref(d, key, result);
    AS_CALLER(int, get_ref(d, key, result));
}

static int get_string_ref(obj d, const char *key, obj *result)
{
    obj k = py.str(key);
    int r = get_ref(d, k, result);
    if (k != NULL)
        py.decref(k);
    return r;
}

HOOK int hook_get_item_string_ref(obj d, const char *key, obj *result)
{
    if (!is_table(d))
        return real.get_item_string_ref(d, key, result);
    AS_CALLER(int, get_string_ref(d, key, result));
}

HOOK int hook_contains(obj d, obj key)
{
    if (!is_table(d))
        return real.contains(d, key);
    AS_CALLER(int, py.contains(d, key));
}

/* op(d, key) with key made a str for the call. */
static int with_str_key(int (*op)(obj, obj), obj d, const char *key)
{
    obj k = py.str(key);
    if (k == NULL)
        return -1;
    int r = op(d, k);
    py.decref(k);
    return r;
}

HOOK int hook_contains_string(obj d, const char *key)
{
    if (!is_table(d))
        return real.contains_string(d, key);
    AS_CALLER(int, with_str_key(py.contains, d, key));
}

HOOK int hook_set_item(obj d, obj key, obj item)
{
    if (!is_table(d))
        return real.set_item(d, key, item);
    AS_CALLER(int, py.set(d, key, item));
}

static int set_string(obj d, const char *key, obj item)
{
    obj k = py.str(key);
    if (k == NULL)
        return -1;
    int r = py.set(d, k, item);
    py.decref(k);
    return r;
}

HOOK int hook_set_item_string(obj d, const char *key, obj item)
{
    if (!is_table(d))
        return real.set_item_string(d, key, item);
    AS_CALLER(int, set_string(d, key, item));
}

HOOK int hook_del_item(obj d, obj key)
{
    if (!is_table(d))
        return real.del_item(d, key);
    AS_CALLER(int, py.del(d, key));
}

HOOK int hook_del_item_string(obj d, const char *key)
{
    if (!is_table(d))
        return real.del_item_string(d, key);
    AS_CALLER(int, with_str_key(py.del, d, key));
}

/* The generic calls, on the table (on anything else: the real ones). */
HOOK obj hook_object_get_item(obj d, obj key)
{
    ON_TABLE_AS_CALLER(obj, real.object_get_item(d, key));
}

HOOK int hook_object_set_item(obj d, obj key, obj item)
{
    ON_TABLE_AS_CALLER(int, real.object_set_item(d, key, item));
}

HOOK int hook_object_del_item(obj d, obj key)
{
    ON_TABLE_AS_CALLER(int, real.object_del_item(d, key));
}

HOOK int hook_sequence_contains(obj d, obj key)
{
    ON_TABLE_AS_CALLER(int, real.sequence_contains(d, key));
}

HOOK obj hook_mapping_get_item_string(obj d, const char *key)
{
    ON_TABLE_AS_CALLER(obj, real.mapping_get_item_string(d, key));
}

HOOK int hook_mapping_has_key(obj d, obj key)
{
    ON_TABLE_AS_CALLER(int, real.mapping_has_key(d, key));
}

HOOK int hook_mapping_has_key_string(obj d, const char *key)
{
    ON_TABLE_AS_CALLER(int, real.mapping_has_key_string(d, key));
}

HOOK int hook_mapping_get_optional_item(obj d, obj key, obj *result)
{
    ON_TABLE_AS_CALLER(int, real.mapping_get_optional_item(d, key, result));
}

HOOK int hook_mapping_get_optional_item_string(obj d, const char *key, obj *result)
{
    ON_TABLE_AS_CALLER(int, real.mapping_get_optional_item_string(d, key, result));
}

HOOK int hook_mapping_has_key_with_error(obj d, obj key)
{
    ON_TABLE_AS_CALLER(int, real.mapping_has_key_with_error(d, key));
}

HOOK int hook_mapping_has_key_string_with_error(obj d, const char *key)
{
    ON_TABLE_AS_CALLER(int, real.mapping_has_key_string_with_error(d, key));
}

/* Imports, and the module table's reads inside CPython's import functions. */
HOOK obj hook_get_module(obj name) { AS_CALLER(obj, real.get_module(name)); }
HOOK obj hook_add_module_object(obj name) { AS_CALLER(obj, real.add_module_object(name)); }
HOOK obj hook_add_module(const char *name) { AS_CALLER(obj, real.add_module(name)); }
HOOK obj hook_add_module_ref(const char *name) { AS_CALLER(obj, real.add_module_ref(name)); }
HOOK obj hook_import_module(const char *name) { AS_CALLER(obj, real.import_module(name)); }
HOOK obj hook_import_module_no_block(const char *name)
{
    AS_CALLER(obj, real.import_module_no_block(name));
}
HOOK obj hook_import_module_level(const char *name, obj globals, obj locals, obj fromlist,
                                  int level)
{
    AS_CALLER(obj, real.import_module_level(name, globals, locals, fromlist, level));
}
HOOK obj hook_import_module_level_object(obj name, obj globals, obj locals, obj fromlist,
                                         int level)
{
    AS_CALLER(obj, real.import_module_level_object(name, globals, locals, fromlist, level));
}
HOOK obj hook_import(obj name) { AS_CALLER(obj, real.import(name)); }
HOOK obj hook_reload_module(obj module) { AS_CALLER(obj, real.reload_module(module)); }

/* The dict of the caller's namespace (or copy-mode context), found by the
 * address the call returns to (the extension module that asked); the
 * interpreter's own for the base and for contexts without one. */
__attribute__((noinline)) static obj hook_state_dict(obj interp)
{
    struct link_map *m = object_at(__builtin_return_address(0));
    Lmid_t lmid = LM_ID_BASE;
    if (m != NULL && dlinfo(m, RTLD_DI_LMID, &lmid) == 0 && lmid != LM_ID_BASE) {
        obj d = atomic_load(&state_dicts[ns_slot(lmid)]);
        if (d != NULL)
            return d;
    } else if (m != NULL) { /* a copy-mode context's copy, in the base namespace */
        vlcs_ctx *c = copies_owner(m);
        obj d = c != NULL ? atomic_load(&c->cp.py_state_dict) : NULL;
        if (d != NULL)
            return d;
    }
    return real.state_dict(interp);
}

/* Each replaced entry: its name, where libpython's own is kept, the hook. */
#define ENTRY(sym, field, hook) {sym, (void **)&real.field, (void *)hook}
static const struct {
    const char *name;
    void **real;
    void *hook;
} entries[] = {
    ENTRY("PyDict_GetItem", get_item, hook_get_item),
    ENTRY("PyDict_GetItemWithError", get_item_with_error, hook_get_item_with_error),
    ENTRY("PyDict_GetItemString", get_item_string, hook_get_item_string),
    ENTRY("PyDict_GetItemRef", get_item_ref, hook_get_item_ref),
    ENTRY("PyDict_GetItemStringRef", get_item_string_ref, hook_get_item_string_ref),
    ENTRY("PyDict_Contains", contains, hook_contains),
    ENTRY("PyDict_ContainsString", contains_string, hook_contains_string),
    ENTRY("PyDict_SetItem", set_item, hook_set_item),
    ENTRY("PyDict_SetItemString", set_item_string, hook_set_item_string),
    ENTRY("PyDict_DelItem", del_item, hook_del_item),
    ENTRY("PyDict_DelItemString", del_item_string, hook_del_item_string),
    ENTRY("PyInterpreterState_GetDict", state_dict, hook_state_dict),
    ENTRY("PyObject_GetItem", object_get_item, hook_object_get_item),
    ENTRY("PyObject_SetItem", object_set_item, hook_object_set_item),
    ENTRY("PyObject_DelItem", object_del_item, hook_object_del_item),
    ENTRY("PySequence_Contains", sequence_contains, hook_sequence_contains),
    ENTRY("PyMapping_GetItemString", mapping_get_item_string, hook_mapping_get_item_string),
    ENTRY("PyMapping_HasKey", mapping_has_key, hook_mapping_has_key),
    ENTRY("PyMapping_HasKeyString", mapping_has_key_string, hook_mapping_has_key_string),
    ENTRY("PyMapping_GetOptionalItem", mapping_get_optional_item, hook_mapping_get_optional_item),
    ENTRY("PyMapping_GetOptionalItemString", mapping_get_optional_item_string,
          hook_mapping_get_optional_item_string),
    ENTRY("PyMapping_HasKeyWithError", mapping_has_key_with_error,
          hook_mapping_has_key_with_error),
    ENTRY("PyMapping_HasKeyStringWithError", mapping_has_key_string_with_error,
          hook_mapping_has_key_string_with_error),
    ENTRY("PyImport_GetModule", get_module, hook_get_module),
    ENTRY("PyImport_AddModuleObject", add_module_object, hook_add_module_object),
    ENTRY("PyImport_AddModule", add_module, hook_add_module),
    ENTRY("PyImport_AddModuleRef", add_module_ref, hook_add_module_ref),
    ENTRY("PyImport_ImportModule", import_module, hook_import_module),
    ENTRY("PyImport_ImportModuleNoBlock", import_module_no_block, hook_import_module_no_block),
    ENTRY("PyImport_ImportModuleLevel", import_module_level, hook_import_module_level),
    ENTRY("PyImport_ImportModuleLevelObject", import_module_level_object,
          hook_import_module_level_object),
    ENTRY("PyImport_Import", import, hook_import),
    ENTRY("PyImport_ReloadModule", reload_module, hook_reload_module),
};
#define NENTRIES (sizeof entries / sizeof entries[0])

/* Whether handle is a libpython with everything the hooks call (in *api). */
static bool resolve_python(void *handle, struct py_api *api)
{
#define SYM(field, name) (*(void **)&api->field = dlsym(handle, name)) != NULL
    return dlsym(handle, "Py_IsInitialized") != NULL && SYM(get, "PyObject_GetItem") &&
           SYM(set, "PyObject_SetItem") && SYM(del, "PyObject_DelItem") &&
           SYM(contains, "PySequence_Contains") && SYM(str, "PyUnicode_FromString") &&
           SYM(decref, "Py_DecRef") && SYM(occurred, "PyErr_Occurred") &&
           SYM(matches, "PyErr_ExceptionMatches") && SYM(clear, "PyErr_Clear") &&
           SYM(fetch, "PyErr_Fetch") && SYM(restore, "PyErr_Restore") &&
           SYM(key_error, "PyExc_KeyError");
#undef SYM
}

static size_t python_overrides(void *handle, struct fwd_override *ov, size_t cap)
{
    struct py_api api;
    if (!resolve_python(handle, &api))
        return 0;
    size_t n = 0;
    for (size_t i = 0; i < NENTRIES && n < cap; i++)
        if (dlsym(handle, entries[i].name) != NULL) /* else newer than this Python */
            ov[n++] = (struct fwd_override){entries[i].name, entries[i].hook};
    return n;
}

/* Before any context binds to the forwarder: what the hooks call. */
static void python_note_service(void *handle)
{
    if (!resolve_python(handle, &py))
        return;
    for (size_t i = 0; i < NENTRIES; i++)
        *entries[i].real = dlsym(handle, entries[i].name);
}

const struct service_hooks python_hooks = {
    .family = "CPython",
    .overrides = python_overrides,
    .note_service = python_note_service,
    .ns_gone = python_ns_gone,
};

"""Reads of sys.modules once a context exists: every way of reading gives
the reader's owner's module, the C half answers Python code's reads without
running Python (so the base keeps its speed), and what it caches follows
vlcs.share() and the packages contexts import later.  One fresh interpreter
per case; each reports facts as JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

# Packages written to a temporary folder: vt_both is imported by the base and
# the context, vt_base by the base only, vt_ctx by the context only.  A
# reader module reports, for each name, whose module each form of read gave
# ("base", "ctx", None for absent, "shared" for the standard library's) and
# whether the three forms agreed.
PRELUDE = r'''
import json, os, sys, tempfile, threading
folder = tempfile.mkdtemp()
READER = """
import sys
NAMES = ("vt_both", "vt_base", "vt_ctx", "os", "vt_missing")
def read(n):
    try:
        item = sys.modules[n]
    except KeyError:
        item = None
    return item, n in sys.modules, sys.modules.get(n)
def reads(rounds=1):
    for _ in range(rounds):
        out = {n: read(n) for n in NAMES}
    return out
def call(fn):
    return fn()
def imports():
    import vt_both
    from vt_both import X
    return vt_both, X
def whole(rounds=1):
    for _ in range(rounds):
        names = list(sys.modules)
        forms = [len(sys.modules) == len(names), list(sys.modules.keys()) == names,
                 list(sys.modules.copy()) == names, [k for k, _ in sys.modules.items()] == names,
                 [k for k in sys.modules] == names, len(sys.modules.values()) == len(names)]
    return [n for n in ("vt_both", "vt_base", "vt_ctx") if n in names], all(forms)
"""
for name, src in {
    "vt_both": "X = object()\n",
    "vt_base": "",
    "vt_ctx": "",
    "vt_reader": READER,
    "vt_base_reader": READER,
    "vt_init_reader": READER + "AT_IMPORT = reads()\n",
}.items():
    with open(os.path.join(folder, name + ".py"), "w") as f:
        f.write(src)
sys.path.insert(0, folder)
import vt_both, vt_base, vt_reader, vt_base_reader
import vlcs
from vlcs._isolation.modtable import ModuleTable

ctx = vlcs.VLC(name="reads")
with ctx:
    import vt_both as c_both, vt_ctx as c_ctx, vt_reader as c_reader
    import numpy  # an extension module: C readers are asked about on the native stack
assert c_reader is not vt_reader and c_both is not vt_both

WHO = {id(vt_both): "base", id(vt_base): "base", id(c_both): "ctx", id(c_ctx): "ctx",
       id(os): "shared"}

def whose(report):
    """{name: owner the reads answered, or "disagree: ..."}"""
    out = {}
    for n, (item, present, got) in report.items():
        forms = (WHO.get(id(item)) if item is not None else None,
                 WHO.get(id(got)) if got is not None else None)
        if forms[0] != forms[1] or present != (item is not None):
            out[n] = f"disagree: {forms} in={present}"
        else:
            out[n] = forms[0]
    return out

slow = {"n": 0}
def count_slow(name):
    orig = getattr(ModuleTable, name)
    def counted(self, *a):
        slow["n"] += 1
        return orig(self, *a)
    setattr(ModuleTable, name, counted)
for m in ("_slow_getitem", "_slow_contains", "_slow_get"):
    count_slow(m)
'''

BASE = {"vt_both": "base", "vt_base": "base", "vt_ctx": None, "os": "shared", "vt_missing": None}
CTX = {"vt_both": "ctx", "vt_base": None, "vt_ctx": "ctx", "os": "shared", "vt_missing": None}


def run(body: str) -> dict:
    code = PRELUDE + textwrap.dedent(body)
    p = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=os.environ
    )
    assert p.returncode == 0, p.stderr[-4000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_each_reader_gets_its_owners_modules_by_every_form_of_read():
    r = run(
        """
        def script_read(n):  # the script's own reads (__main__ is shared code)
            try:
                item = sys.modules[n]
            except KeyError:
                item = None
            return item, n in sys.modules, sys.modules.get(n)
        out = {}
        out["base module"] = whose(vt_reader.reads())
        out["context module, base thread"] = whose(c_reader.reads())
        with ctx:
            out["context module, in the context"] = whose(c_reader.reads())
            # a base module of a package the context imported too stays the base's
            out["base module of a package both have, in the context"] = whose(vt_reader.reads())
            # a base module no context imported acts for the thread's context
            out["base-only module, in the context"] = whose(vt_base_reader.reads())
            out["script, in the context"] = whose({n: script_read(n) for n in vt_reader.NAMES})
        out["script, base"] = whose({n: script_read(n) for n in vt_reader.NAMES})
        # the script's code (shared) called back by a module: the module's owner
        script_reads = lambda: whose({n: script_read(n) for n in vt_reader.NAMES})
        for _ in range(50):  # past specialisation
            out["script called by a context's module"] = c_reader.call(script_reads)
            out["script called by a base module"] = vt_reader.call(script_reads)
        # the same code, specialised, before, inside and after: what the C half
        # remembers of a thread's context follows its enter and leave
        out["base-only module, before"] = whose(vt_base_reader.reads(50))
        with ctx:
            out["base-only module, in the context again"] = whose(vt_base_reader.reads(50))
        out["base-only module, after"] = whose(vt_base_reader.reads(50))
        box = {}
        t = threading.Thread(target=lambda: box.update(whose(c_reader.reads())))
        vlcs.base_thread(t)
        t.start(); t.join()
        out["context module, another base thread"] = box
        with ctx:
            import vt_init_reader as c_init
        out["context module while it executes"] = whose(c_init.AT_IMPORT)
        print(json.dumps(out))
        """
    )
    want = {
        "base module": BASE,
        "context module, base thread": CTX,
        "context module, in the context": CTX,
        "base module of a package both have, in the context": BASE,
        "base-only module, in the context": CTX,
        "script, in the context": CTX,
        "script, base": BASE,
        "script called by a context's module": CTX,
        "script called by a base module": BASE,
        "base-only module, before": BASE,
        "base-only module, in the context again": CTX,
        "base-only module, after": BASE,
        "context module, another base thread": CTX,
        "context module while it executes": CTX,
    }
    wrong = {k: (r.get(k), v) for k, v in want.items() if r.get(k) != v}
    assert not wrong, f"(got, wanted) per reader: {wrong}"


def test_the_whole_table_is_each_readers_owners_by_every_form_of_iteration():
    # iter() and len() of the table are answered in C for the base's code;
    # keys(), items(), values() and copy() ask first whether the caller is
    # the base's.  Every form must give the reader's owner's modules, in
    # loops (what the C half remembers), inside a block and after it.
    r = run(
        """
        def script_whole(rounds=1):
            for _ in range(rounds):
                names = list(sys.modules)
                forms = [len(sys.modules) == len(names), list(sys.modules.keys()) == names,
                         [k for k in sys.modules] == names]
            return [n for n in ("vt_both", "vt_base", "vt_ctx") if n in names], all(forms)
        out = {
            "base module": vt_reader.whole(50),
            "context module, base thread": c_reader.whole(50),
            "script, base": script_whole(50),
        }
        with ctx:
            out["context module, in the context"] = c_reader.whole(50)
            out["base module of a package both have, in the context"] = vt_reader.whole(50)
            out["base-only module, in the context"] = vt_base_reader.whole(50)
            out["script, in the context"] = script_whole(50)
        out["script, base, after"] = script_whole(50)
        out["base-only module, after"] = vt_base_reader.whole(50)
        print(json.dumps(out))
        """
    )
    base, in_ctx = [["vt_both", "vt_base"], True], [["vt_both", "vt_ctx"], True]
    want = {
        "base module": base,
        "context module, base thread": in_ctx,
        "script, base": base,
        "context module, in the context": in_ctx,
        "base module of a package both have, in the context": base,
        "base-only module, in the context": in_ctx,
        "script, in the context": in_ctx,
        "script, base, after": base,
        "base-only module, after": base,
    }
    wrong = {k: (r.get(k), v) for k, v in want.items() if r.get(k) != v}
    assert not wrong, f"(got, wanted) per reader: {wrong}"


def test_python_reads_of_owned_code_never_run_python_once_specialised():
    # 2,000 rounds of 5 names x 3 forms each: the interpreter specialises the
    # reads after a few; none of them may reach the Python half
    r = run(
        """
        vt_reader.reads(50); c_reader.reads(50)  # warm up, specialise
        out = {}
        for label, fn in (("base", vt_reader.reads), ("context", c_reader.reads)):
            slow["n"] = 0
            got = whose(fn(2000))
            out[label] = [slow["n"], got]
        with ctx:
            slow["n"] = 0
            out["context, in it"] = [slow["n"], whose(c_reader.reads(2000))]
        print(json.dumps(out))
        """
    )
    assert r["base"] == [0, BASE], r
    assert r["context"] == [0, CTX], r
    assert r["context, in it"] == [0, CTX], r


def test_function_level_imports_and_c_api_reads_follow_the_owner():
    r = run(
        """
        import ctypes
        get = ctypes.pythonapi.PyImport_GetModule
        get.restype = ctypes.py_object
        get.argtypes = [ctypes.py_object]
        out = {}
        for _ in range(20):  # past specialisation
            b, bx = vt_reader.imports()
            c, cx = c_reader.imports()
        out["base import"] = [WHO.get(id(b)), bx is vt_both.X]
        out["context import"] = [WHO.get(id(c)), cx is c_both.X]
        out["C API, base"] = WHO.get(id(get("vt_both")))
        with ctx:
            out["C API, in the context"] = WHO.get(id(get("vt_both")))
        print(json.dumps(out))
        """
    )
    assert r["base import"] == ["base", True], r
    assert r["context import"] == ["ctx", True], r
    assert r["C API, base"] == "base", r
    assert r["C API, in the context"] == "ctx", r


def test_what_the_c_half_remembers_follows_share_and_later_imports():
    r = run(
        """
        out = {}
        # a package the base imported before any context asked for it
        with open(os.path.join(folder, "vt_late.py"), "w") as f:
            f.write("")
        import vt_late as b_late
        out["before"] = [c_reader.read("vt_late")[1], vt_reader.read("vt_late")[1]]
        with ctx:
            import vt_late as c_late
        item, present, got = c_reader.read("vt_late")
        out["after the context imported it"] = [item is c_late, present, got is c_late]
        item, present, got = vt_reader.read("vt_late")
        out["base after"] = [item is b_late, present, got is b_late]
        # a name read as absent, then shared: one module for everyone
        with open(os.path.join(folder, "vt_shared.py"), "w") as f:
            f.write("")
        out["absent"] = [c_reader.read("vt_shared")[1], vt_reader.read("vt_shared")[1]]
        vlcs.share("vt_shared")
        import vt_shared
        with ctx:
            import vt_shared as c_shared
        out["shared"] = [c_shared is vt_shared, c_reader.read("vt_shared")[0] is vt_shared]
        ctx.close()
        out["base after close"] = whose(vt_reader.reads())
        print(json.dumps(out))
        """
    )
    assert r["before"] == [False, True], r
    assert r["after the context imported it"] == [True, True, True], r
    assert r["base after"] == [True, True, True], r
    assert r["absent"] == [False, False], r
    assert r["shared"] == [True, True], r
    assert r["base after close"] == BASE, r


# An extension module that reads the module table and imports from C, the
# ways Cython's, pybind11's and numpy's helpers do.  Built without sibling
# calls: a tail call would hide which module called (then the Python frames
# decide, as for CPython's own C code).
C_READER = r"""
#include <Python.h>
static PyObject *none_if_null(PyObject *m)
{
    if (m == NULL && !PyErr_Occurred())
        Py_RETURN_NONE;
    return m;
}
static PyObject *get(PyObject *self, PyObject *name)
{
    PyObject *m = PyImport_GetModule(name);
    return none_if_null(m);
}
static PyObject *dict_get(PyObject *self, PyObject *name)
{
    PyObject *m = PyDict_GetItemWithError(PyImport_GetModuleDict(), name);
    Py_XINCREF(m);
    return none_if_null(m);
}
static PyObject *item(PyObject *self, PyObject *name)
{
    PyObject *m = PyObject_GetItem(PyImport_GetModuleDict(), name);
    if (m == NULL && PyErr_ExceptionMatches(PyExc_KeyError))
        PyErr_Clear();
    return none_if_null(m);
}
static PyObject *import(PyObject *self, PyObject *name)
{
    PyObject *m = PyImport_ImportModuleLevelObject(name, NULL, NULL, NULL, 0);
    return none_if_null(m);
}
static PyMethodDef methods[] = {
    {"get", get, METH_O, NULL}, {"dict_get", dict_get, METH_O, NULL},
    {"item", item, METH_O, NULL}, {"import_", import, METH_O, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "vt_creader", NULL, -1, methods};
PyMODINIT_FUNC PyInit_vt_creader(void) { return PyModule_Create(&def); }
"""


def test_c_code_reads_its_owners_modules_and_the_base_never_walks_the_stack():
    r = run(
        f"""
        import sysconfig
        src = os.path.join(folder, "vt_creader.c")
        with open(src, "w") as f:
            f.write({C_READER!r})
        so = os.path.join(folder, "vt_creader" + sysconfig.get_config_var("EXT_SUFFIX"))
        subprocess_args = ["cc", "-shared", "-fPIC", "-O2", "-fno-optimize-sibling-calls",
                           "-I" + sysconfig.get_paths()["include"], src, "-o", so]
        import subprocess
        subprocess.run(subprocess_args, check=True)
        import vt_creader as base_c
        with ctx:
            import vt_creader as ctx_c
        assert ctx_c is not base_c
        from vlcs._isolation import owners
        walks = {{"n": 0}}
        walk = owners._native_owner
        def counted():
            walks["n"] += 1
            return walk()
        owners._native_owner = counted
        def reads(mod):
            walks["n"] = 0
            got = {{f: WHO.get(id(getattr(mod, f)("vt_both")), "absent")
                   for f in ("get", "dict_get", "item", "import_")}}
            got["vt_ctx"] = WHO.get(id(mod.get("vt_ctx")), "absent")
            got["vt_base"] = WHO.get(id(mod.get("vt_base")), "absent")
            return got, walks["n"]
        out = {{}}
        out["base's C code, from the base"] = reads(base_c)
        out["context's C code, from the base"] = reads(ctx_c)
        with ctx:
            out["context's C code, in the context"] = reads(ctx_c)
            # the base's C code called by the context's thread: still the base's
            got, _ = reads(base_c)
            out["base's C code, in the context"] = [got, "any"]
        out["base's C code, after"] = reads(base_c)
        print(json.dumps(out))
        """
    )
    base = {"get": "base", "dict_get": "base", "item": "base", "import_": "base",
            "vt_ctx": "absent", "vt_base": "base"}  # fmt: skip
    ctx = {"get": "ctx", "dict_get": "ctx", "item": "ctx", "import_": "ctx",
           "vt_ctx": "ctx", "vt_base": "absent"}  # fmt: skip
    want = {
        "base's C code, from the base": [base, 0],
        "context's C code, from the base": [ctx, 0],
        "context's C code, in the context": [ctx, 0],
        "base's C code, in the context": [base, "any"],
        "base's C code, after": [base, 0],
    }
    wrong = {k: (r.get(k), v) for k, v in want.items() if r.get(k) != v}
    assert not wrong, f"(got, wanted) per caller: {wrong}"


def test_function_level_imports_of_a_package_are_answered_in_c_for_base_and_context():
    # a package whose functions import from it again, absolutely and
    # relatively, as scikit-learn's do on every call: after the first call
    # they never reach the Python door, in the base or in a context, and
    # each gets its owner's modules
    r = run(
        """
        pkg = os.path.join(folder, "vt_pkg")
        os.makedirs(pkg)
        files = {
            "__init__.py": "from . import helpers\\n",
            "helpers.py": "Y = object()\\n",
            "deep/__init__.py": "",
            "deep/leaf.py": "Z = object()\\n",
            "user.py": (
                "def imports():\\n"
                "    import vt_pkg\\n"
                "    import vt_pkg.deep.leaf\\n"
                "    from vt_pkg import helpers\\n"
                "    from vt_pkg.helpers import Y\\n"
                "    from . import helpers as h2\\n"
                "    from .deep import leaf\\n"
                "    from .deep.leaf import Z\\n"
                "    return [vt_pkg, vt_pkg.deep.leaf, helpers, Y, h2, leaf, Z]\\n"
            ),
        }
        os.makedirs(os.path.join(pkg, "deep"))
        for rel, text in files.items():
            with open(os.path.join(pkg, rel), "w") as f:
                f.write(text)
        import vt_pkg.user, vt_pkg.deep.leaf
        import vt_pkg as b_pkg, vt_pkg.deep.leaf as b_leaf
        with ctx:
            import vt_pkg.user as c_user
            import vt_pkg as c_pkg, vt_pkg.deep.leaf as c_leaf
        assert c_pkg is not b_pkg and c_leaf is not b_leaf
        from vlcs._isolation import imports as door
        doors = {"n": 0}
        load = door.load
        def counted(owner, name):
            doors["n"] += 1
            return load(owner, name)
        door.load = counted
        def expected(p):
            leaf = b_leaf if p is b_pkg else c_leaf
            return [p, leaf, p.helpers, p.helpers.Y, p.helpers, leaf, leaf.Z]
        out = {}
        for label, user, p in (("base", vt_pkg.user, b_pkg), ("context", c_user, c_pkg)):
            user.imports()  # the first call may import
            doors["n"] = 0
            got = [user.imports() for _ in range(50)][-1]
            out[label] = [all(a is b for a, b in zip(got, expected(p))), doors["n"]]
        with ctx:
            doors["n"] = 0
            got = c_user.imports()
            out["context, in it"] = [all(a is b for a, b in zip(got, expected(c_pkg))), doors["n"]]
        print(json.dumps(out))
        """
    )
    assert r == {"base": [True, 0], "context": [True, 0], "context, in it": [True, 0]}, r


def test_a_base_import_of_a_module_another_thread_is_importing_waits_for_it():
    # CPython's import hands out a module another thread is still executing
    # only once it is complete; the C door's answers from the storage must
    # too (a function-level import in a base module, contexts alive)
    r = run(
        """
        for name, lines in {
            "vt_gate": ["import threading", "started = threading.Event()",
                        "release = threading.Event()"],
            "vt_slow": ["import vt_gate", "vt_gate.started.set()", "vt_gate.release.wait()",
                        "DONE = True"],
            "vt_user": ["def get():", "    import vt_slow", "    return vt_slow.DONE"],
        }.items():
            text = "\\n".join(lines) + "\\n"
            with open(os.path.join(folder, name + ".py"), "w") as f:
                f.write(text)
        import time, vt_gate, vt_user  # vt_user: a base module, imported with a context alive
        importer = threading.Thread(target=lambda: __import__("vt_slow"))
        importer.start()
        vt_gate.started.wait()
        box = {}
        def reader():
            try:
                box["got"] = vt_user.get()
            except Exception as e:
                box["got"] = repr(e)
        t = threading.Thread(target=reader)
        t.start()
        # until the reader waits in importlib's module lock, or has answered
        deadline = time.monotonic() + 60
        waiting = False
        while t.is_alive() and time.monotonic() < deadline and not waiting:
            f = sys._current_frames().get(t.ident)
            while f is not None and not waiting:
                waiting = "importlib" in f.f_code.co_filename  # <frozen importlib._bootstrap>
                f = f.f_back
        vt_gate.release.set()
        importer.join(); t.join()
        print(json.dumps({"waited": waiting, "got": box.get("got")}))
        """
    )
    assert r == {"waited": True, "got": True}, r

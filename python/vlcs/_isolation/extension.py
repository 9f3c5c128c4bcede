"""Loading a CPython extension module into a context's namespace.

CPython's own loader would dlopen the module into the base namespace.  Here
libvlcs loads it (and the libraries it depends on: numpy's OpenBLAS, scipy's
Fortran runtime, ...) into the context's namespace, and this module does what
CPython's ``_imp.create_dynamic`` / ``exec_dynamic`` do with the result:
call ``PyInit_<name>`` with the GIL held, then either take the module it made
(single-phase init) or create and execute one from the ``PyModuleDef`` it
returned (multi-phase init, PEP 489).  The module's references to the C API
resolve to the base's libpython through the libpython service (see
``_python_service``), so there is one interpreter and one object model.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
from collections.abc import Iterator
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

from vlcs import libraries
from vlcs._interpreter import C_API_PREFIXES, c_api
from vlcs._lib import check, lib
from vlcs._lib import pythonapi as _api

_api.PyModule_FromDefAndSpec2.restype = ctypes.py_object
_api.PyModule_FromDefAndSpec2.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.c_int]
_api.PyModule_ExecDef.restype = ctypes.c_int
_api.PyModule_ExecDef.argtypes = [ctypes.py_object, ctypes.c_void_p]
_MODULEDEF_TYPE = ctypes.addressof(ctypes.c_char.in_dll(_api, "PyModuleDef_Type"))
# Where single-phase modules find their package (CPython sets it around
# PyInit); a plain global up to 3.11, runtime state afterwards.
try:
    _PACKAGE_CONTEXT: Any = ctypes.c_char_p.in_dll(_api, "_Py_PackageContext")
except ValueError:
    _PACKAGE_CONTEXT = None

# Binding libraries keep one registry of C++ types per interpreter, found by
# key in the interpreter's dict (pybind11 3, nanobind) or in builtins
# (pybind11 2): each owner has its own.  A context's extension modules get
# the context's own interpreter dict from libvlcs (Owner.state_dict, given
# to the namespace by the loader); builtins, one dict that every thread
# reads, has the keys of vlcs.libraries.bindings swapped around the
# module's initialisation, when pybind11 2 looks them up (it keeps what it
# found for good).

_service_ready = False


@contextlib.contextmanager
def own_registries(saved: dict[str, Any]) -> Iterator[None]:
    """Run with the owner's binding registries in builtins (saved) in place
    of the current ones."""
    import builtins

    d = builtins.__dict__
    keys = libraries.registry_keys()

    def take() -> dict[str, Any]:
        return {k: d.pop(k) for k in [k for k in d if isinstance(k, str) and k.startswith(keys)]}

    outer = take()
    d.update(saved)
    try:
        yield
    finally:
        saved.clear()
        saved.update(take())
        d.update(outer)


def python_service() -> None:
    """Make the interpreter's C API a service, once: extension modules in
    contexts bind to it.

    Called before a context's namespace exists, so the forwarder is in the
    namespace's global scope, where extension modules (which carry no
    DT_NEEDED on libpython) look for the C API.  Where libpython is linked
    into the executable the forwarder points into the executable: a second
    libpython is never loaded (it would be a second runtime).
    """
    global _service_ready
    if _service_ready:
        return
    api = c_api()
    if api.linkage == "static":
        check(lib().vlcs_service_add_program(api.soname.encode(), C_API_PREFIXES.encode()))
    else:
        check(lib().vlcs_service_add(os.fsencode(api.path)))
    _service_ready = True


_api.PyModule_GetDef.restype = ctypes.c_void_p
_api.PyModule_GetDef.argtypes = [ctypes.py_object]
_api.PyState_FindModule.restype = ctypes.c_void_p  # borrowed: compared as an address
_api.PyState_FindModule.argtypes = [ctypes.c_void_p]
_api.PyState_AddModule.restype = ctypes.c_int
_api.PyState_AddModule.argtypes = [ctypes.py_object, ctypes.c_void_p]


def module_def(module: Any) -> int | None:
    """The address of the PyModuleDef module was made from, or None."""
    d = _api.PyModule_GetDef(module) if isinstance(module, ModuleType) else None
    if not d:
        _api.PyErr_Clear()
        return None
    return int(d)


def _register_single_phase(module: ModuleType) -> None:
    """What CPython's import does after a single-phase PyInit: register the
    module under its definition, so that PyState_FindModule(def) in the
    module's C code finds it (protobuf's upb does so on every call)."""
    d = module_def(module)
    if d is None:
        return
    if _api.PyState_FindModule(d) != id(module):
        _api.PyState_AddModule(module, d)


def _init_symbol(name: str) -> str:
    short = name.rpartition(".")[2]
    try:
        short.encode("ascii")
        return "PyInit_" + short
    except UnicodeEncodeError:
        return "PyInitU_" + short.encode("punycode").decode().replace("-", "_")


class ContextExtensionLoader:
    """Loader for an extension module that lives in a context's namespace."""

    def __init__(self, load: Any, path: str, registries: dict[str, Any]) -> None:
        # load(path) -> ctypes.CDLL of the copy in the context
        self._load = load
        self.path = path
        self._registries = registries
        self._defs: dict[int, int] = {}

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        with own_registries(self._registries):
            return self._create(spec)

    def _create(self, spec: ModuleSpec) -> ModuleType:
        try:
            dll = self._load(self.path)
        except OSError as e:
            raise ImportError(str(e), name=spec.name, path=self.path) from None
        symbol = _init_symbol(spec.name)
        try:
            init = ctypes.PYFUNCTYPE(ctypes.c_void_p)((symbol, dll))
        except AttributeError:
            raise ImportError(
                f"dynamic module does not define module export function ({symbol})",
                name=spec.name,
                path=self.path,
            ) from None
        saved = None
        if _PACKAGE_CONTEXT is not None:
            saved = _PACKAGE_CONTEXT.value
            _PACKAGE_CONTEXT.value = spec.name.encode()
        try:
            result = init()  # PYFUNCTYPE: GIL held; a set exception is raised here
        finally:
            if _PACKAGE_CONTEXT is not None:
                _PACKAGE_CONTEXT.value = saved
        if not result:
            raise SystemError(f"initialization of {spec.name} failed without raising an exception")
        if ctypes.c_void_p.from_address(result + ctypes.sizeof(ctypes.c_ssize_t)).value == (
            _MODULEDEF_TYPE
        ):
            module = _api.PyModule_FromDefAndSpec2(result, spec, sys.api_version)
            self._defs[id(module)] = result
            return module
        # Single-phase: PyInit returned a new reference to the module; the
        # cast borrows it, so the module keeps one extra reference for good
        # (extension modules are never unloaded anyway).
        module = ctypes.cast(result, ctypes.py_object).value
        _register_single_phase(module)
        return module

    def exec_module(self, module: ModuleType) -> None:
        d = self._defs.pop(id(module), None)
        if d is not None:
            with own_registries(self._registries):
                _api.PyModule_ExecDef(module, d)

    def __repr__(self) -> str:
        return f"<vlcs.ContextExtensionLoader {self.path!r}>"

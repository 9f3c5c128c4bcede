"""Python binding generators: the registries they keep per interpreter.

A second copy of an extension module built with them (torch, scipy's fft,
matplotlib) would find the first copy's registry of C++ types through the
interpreter and fail ('type "..." is already registered'), so vlcs keeps
one registry per owner.  pybind11 3 and nanobind keep theirs in the
interpreter's dict: a context's modules get the context's own from
PyInterpreterState_GetDict (src/service_python.c).  pybind11 2 keeps its
in builtins: the keys below are swapped in and out there around the
module's initialisation (see vlcs._isolation.extension).
"""

from __future__ import annotations

from vlcs.libraries._base import LibraryController


class Pybind11(LibraryController):
    name = "pybind11"
    user_api = "bindings"
    # 2.x: in builtins; 3.x: in the interpreter's state dict, beside a cache
    # of imported modules keyed by name (one owner's numpy handed to another
    # owner's scipy.fft: "incompatible function arguments") and the
    # internals of module_local types
    registry_keys = ("__pybind11_internals", "__pybind11_module_cache", "__pybind11_module_local")


class Nanobind(LibraryController):
    name = "nanobind"
    user_api = "bindings"
    registry_keys = ("__nb_internals",)


class Cython(LibraryController):
    name = "cython"
    user_api = "bindings"
    # Cython 3 shares its types through a module it makes with
    # PyImport_AddModule ("_cython_3_0_12"); the module table gives each
    # owner its own (see vlcs._isolation.modtable).
    sharing = "shared types live in the '_cython_<version>' module, one per owner"

"""The module table: ``sys.modules`` that answers each owner with its own modules.

Once the first context exists, one :class:`ModuleTable` stands as
``sys.modules`` *and* as the interpreter's own module dict (the pointer
``PyImport_GetModuleDict()`` returns, which ``PyImport_GetModule``,
``PyImport_ImportModuleLevelObject``, ``PyImport_AddModule`` and so Cython's
and pybind11's import helpers read).  CPython reads that dict with
``PyDict_*`` calls only when it is an exact dict; a subclass is read through
``PyObject_GetItem``/``PyObject_SetItem``, and a context's extension
modules' own ``PyDict_*`` calls on it are sent there too
(src/service_python.c), so every read and write, from Python or C, reaches
the methods below, which resolve the owner (:mod:`vlcs._isolation.owners`) and answer
from its table:

* the base's modules are the dict's own storage, so base code, and the
  base's C code that reads the storage with ``PyDict_GetItem``, see exactly
  what the base imported;
* a context's table holds its private modules; names that stay shared (the
  standard library, :func:`vlcs.share`) are read from the storage by all.

There is no stand-in object anywhere: what a lookup returns is the owner's
real module, or ``KeyError`` if the owner never imported the name.
"""

from __future__ import annotations

import atexit
import ctypes
import opcode
import sys
from collections.abc import Iterator
from typing import Any

from vlcs._errors import UnsupportedPlatformError
from vlcs._isolation import owners as _owners
from vlcs._isolation import reader as _reader
from vlcs._isolation.owners import BASE, Owner, is_shared, resolve
from vlcs._isolation.reader import fast as _fast
from vlcs._lib import lib
from vlcs._lib import pythonapi as _api

# Python code that indexes sys.modules runs one of these; C code
# (PyImport_GetModule and friends) reaches __getitem__ from inside a call,
# and only then is the native stack worth asking whose lookup it is.
_SUBSCRIPT = frozenset(
    opcode.opmap[n]
    for n in ("BINARY_SUBSCR", "STORE_SUBSCR", "DELETE_SUBSCR", "CONTAINS_OP")
    if n in opcode.opmap
)

_dget = dict.__getitem__
_dset = dict.__setitem__
_ddel = dict.__delitem__
_dcontains = dict.__contains__


def _absent(table: Any, name: Any) -> bool:
    """Whether no owner has name: not in the base's storage, and its top-level
    name was never in any context's table."""
    return (
        isinstance(name, str)
        and not _dcontains(table, name)
        and name.partition(".")[0] not in _owners.in_contexts
    )


def _whose() -> Owner:
    """The owner of the code that called the caller (a method reading the
    whole table), decided in C where the frames alone decide."""
    return _owners.caller(sys._getframe(2))


def _owner(frame: Any) -> Owner:
    """The owner of a lookup whose innermost Python frame is frame."""
    python_level = frame.f_code.co_code[frame.f_lasti] in _SUBSCRIPT
    return resolve(frame, native=not python_level)


class _PythonHalf(dict):  # type: ignore[type-arg]
    """``sys.modules`` per owner: the base's modules in the dict itself,
    each context's in its own table.

    Reads (``table[name]``, ``name in table``, ``table.get``) are answered in
    C (src/python/fast_table.c, a part of fast.c) where the owner rules decide from the
    interpreter's frames alone, at the cost of a dict lookup or two; the
    ``_slow_*`` methods below answer the rest, and are what the C half does.
    These methods are set on the C type itself (:func:`_graft`): the table
    is exactly that type, whose C methods the interpreter specialises calls
    to, which it does not for a subclass's instances.
    """

    def _view(self, owner: Owner) -> dict[str, Any]:
        if owner is BASE:
            # not dict.copy(self): this type overrides iteration, so CPython
            # copies key by key through the table's own reads (50x slower)
            return dict(dict.items(self))
        view = {k: v for k, v in dict.items(self) if is_shared(k)}
        view.update(owner.modules)
        return view

    # --- single names: from Python and from C -------------------------------------
    # A name in no table at all (the base's storage, or any context's ever)
    # is answered before asking whose read it is: the common probe for an
    # optional package that is not installed ("polars" in sys.modules).
    # Called by the C half with the reader's frame one below.
    def _slow_getitem(self, name: Any) -> Any:
        if is_shared(name) or _absent(self, name):
            return _dget(self, name)
        owner = _owner(sys._getframe(1))
        return _dget(self, name) if owner is BASE else owner.modules[name]

    def _slow_contains(self, name: Any) -> bool:
        if is_shared(name) or _absent(self, name):
            return _dcontains(self, name)
        owner = _owner(sys._getframe(1))
        return _dcontains(self, name) if owner is BASE else name in owner.modules

    def __setitem__(self, name: Any, module: Any) -> None:
        if is_shared(name):
            _dset(self, name, module)
            return
        self._put(_owner(sys._getframe(1)), name, module)

    def __delitem__(self, name: Any) -> None:
        if is_shared(name):
            _ddel(self, name)
            return
        owner = _owner(sys._getframe(1))
        if owner is BASE:
            _owners.base_module_gone(_dget(self, name))
            _ddel(self, name)
        else:
            del owner.modules[name]

    def _slow_get(self, name: Any, default: Any = None) -> Any:
        if is_shared(name) or _absent(self, name):
            return dict.get(self, name, default)
        owner = resolve(sys._getframe(1), native=False)
        return dict.get(self, name, default) if owner is BASE else owner.modules.get(name, default)

    _MISSING = object()

    def pop(self, name: Any, default: Any = _MISSING) -> Any:
        owner = BASE if is_shared(name) else resolve(sys._getframe(1), native=False)
        if owner is BASE:
            if default is ModuleTable._MISSING:
                module = dict.pop(self, name)
            else:
                module = dict.pop(self, name, default)
            _owners.base_module_gone(module)
            return module
        if default is ModuleTable._MISSING:
            return owner.modules.pop(name)
        return owner.modules.pop(name, default)

    def setdefault(self, name: Any, default: Any = None) -> Any:
        owner = BASE if is_shared(name) else resolve(sys._getframe(1), native=False)
        if owner is BASE:
            if not _dcontains(self, name):
                self._put(BASE, name, default)
            return _dget(self, name)
        if name not in owner.modules:
            self._put(owner, name, default)
        return owner.modules[name]

    def _put(self, owner: Owner, name: Any, module: Any) -> None:
        if owner is BASE:
            _dset(self, name, module)
            _put_by_base.add(name)
            _owners.note_base_module(name, module)
        else:
            _owners.adopt(owner, name, module)

    def update(self, *args: Any, **kwargs: Any) -> None:
        owner = resolve(sys._getframe(1), native=False)
        for k, v in dict(*args, **kwargs).items():
            self._put(BASE if is_shared(k) else owner, k, v)

    # --- the whole table: the owner's view -----------------------------------------
    # iter() and len(): the C half answers the base's code (called by it
    # with the reader's frame one below)
    def _slow_iter(self) -> Iterator[Any]:
        owner = resolve(sys._getframe(1), native=False)
        return dict.__iter__(self) if owner is BASE else iter(list(self._view(owner)))

    def _slow_len(self) -> int:
        owner = resolve(sys._getframe(1), native=False)
        return dict.__len__(self) if owner is BASE else len(self._view(owner))

    def keys(self) -> Any:
        owner = _whose()
        return dict.keys(self) if owner is BASE else self._view(owner).keys()

    def values(self) -> Any:
        owner = _whose()
        return dict.values(self) if owner is BASE else self._view(owner).values()

    def items(self) -> Any:
        owner = _whose()
        return dict.items(self) if owner is BASE else self._view(owner).items()

    def copy(self) -> dict[str, Any]:
        return self._view(_whose())

    def __or__(self, other: Any) -> dict[str, Any]:
        return self._view(_whose()) | other

    def __eq__(self, other: object) -> bool:
        return self._view(_whose()) == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self._view(_whose()))

    def popitem(self) -> tuple[Any, Any]:
        owner = _whose()
        if owner is not BASE:
            return owner.modules.popitem()
        item = dict.popitem(self)
        _owners.base_module_gone(item[1])
        return item

    def clear(self) -> None:
        owner = _whose()
        if owner is BASE:
            for module in dict.values(self):
                _owners.base_module_gone(module)
            dict.clear(self)
        else:
            owner.modules.clear()


def _graft(half: type) -> Any:
    """The C table type with half's methods (and docstring) set on it."""
    skip = {"__module__", "__qualname__", "__dict__", "__weakref__", "__firstlineno__"}
    skip |= {"__static_attributes__", "__annotations__"}
    for name, value in vars(half).items():
        if name not in skip:
            setattr(_fast.Table, name, value)
    return _fast.Table


# Without the reader (vlcs._isolation.reader) the table is never installed.
ModuleTable = _graft(_PythonHalf) if _reader.MISSING is None else _PythonHalf


def storage_keys() -> set[Any]:
    """The names in the base's storage now (see :func:`reclaim`)."""
    return set(dict.keys(table)) if table is not None else set()


# Names the base entered through the table's methods: a base thread importing
# while a context's module initialises puts its modules in the storage too,
# and they stay the base's.
_put_by_base: set[Any] = set()


def reclaim(owner: Owner, before: set[Any]) -> None:
    """Move into owner's table what its C code wrote straight into the
    storage since before (not through the table's methods, as the base's
    imports do meanwhile): C code that writes the storage with a call the
    PyDict_* hooks of src/service_python.c do not cover."""
    if table is None or dict.__len__(table) == len(before):
        return
    for k in [
        k
        for k in dict.keys(table)
        if k not in before and k not in _put_by_base and not is_shared(k)
    ]:
        module = dict.pop(table, k)
        if k not in owner.modules:
            table._put(owner, k, module)


# --- standing in for the interpreter's module dict -----------------------------------

_api.PyInterpreterState_Get.restype = ctypes.c_void_p
_api.PyImport_GetModuleDict.restype = ctypes.c_void_p  # borrowed: a plain address
_api.Py_IncRef.argtypes = [ctypes.py_object]

_SCAN = 64 * 1024  # the module dict's pointer lies in the first KiB of the interpreter state
_slot: Any = None  # the interpreter state's pointer to its module dict
_plain: dict[str, Any] | None = None  # the dict the table replaced
table: Any = None  # the ModuleTable standing as sys.modules


def _readable(addr: int, want: int) -> int:
    """How many of want bytes from addr are mapped (the scan must not fault)."""
    with open("/proc/self/maps") as f:
        for line in f:
            lo, _, hi = line.partition(" ")[0].partition("-")
            if int(lo, 16) <= addr < int(hi, 16):
                return min(want, int(hi, 16) - addr)
    return 0


def _swap_slot(old: Any, new: Any) -> Any:
    """The interpreter's pointer to old, now pointing at new; found by trying
    each word of the interpreter state that holds old's address until
    PyImport_GetModuleDict() answers new (3.10-3.13 keep it at different
    offsets)."""
    interp = _api.PyInterpreterState_Get()
    size = ctypes.sizeof(ctypes.c_void_p)
    words = (ctypes.c_void_p * (_readable(interp, _SCAN) // size)).from_address(interp)
    for i in range(len(words)):
        if words[i] == id(old):
            words[i] = id(new)
            if _api.PyImport_GetModuleDict() == id(new):
                return ctypes.c_void_p.from_address(interp + i * size)
            words[i] = id(old)
    raise UnsupportedPlatformError(
        f"cannot find this Python's module dict in its interpreter state "
        f"(Python {sys.version.split()[0]}); import isolation supports CPython 3.10-3.13"
    )


def install() -> None:
    """Put the module table in place of sys.modules, for C and Python (once)."""
    global _slot, _plain, table
    if table is not None:
        return
    old = sys.modules
    new = ModuleTable(old)
    _api.Py_IncRef(new)  # the interpreter state's reference; old keeps its own
    _slot = _swap_slot(old, new)
    sys.modules = new
    # Imports another thread finished between the copy and the swap.
    for k, v in list(old.items()):
        if not _dcontains(new, k):
            _dset(new, k, v)
    _plain, table = old, new
    # C code of a context that reads or writes the module dict with PyDict_*
    # calls (mypyc's imports, Cython's registration) reaches the table too.
    lib().vlcs_python_module_table(id(new))
    for k, v in list(dict.items(new)):
        _owners.note_base_module(k, v)
    atexit.register(_uninstall)


def _uninstall() -> None:
    """At exit, give the interpreter a plain dict again: finalisation walks
    the module dict while vlcs's own modules are being torn down."""
    global table
    if table is None or _plain is None:
        return
    lib().vlcs_python_module_table(None)
    _plain.clear()
    _plain.update(dict.items(table))
    _slot.value = id(_plain)
    sys.modules = _plain
    table = None

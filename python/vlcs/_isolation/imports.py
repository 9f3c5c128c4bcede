"""Import isolation: ``with ctx: import numpy`` gives ctx its own numpy.

Every *owner* (each context, and the base) has its own table of modules.
A module imported by code that belongs to a context is executed afresh for
that context, and its extension modules are loaded into the context's
namespace.  The standard library, builtin modules and the names given to
:func:`share` stay shared: one copy, the base's.  The parts, along
importlib's seams:

* :mod:`vlcs._isolation.owners` — whose import it is (the owner rules);
* :mod:`vlcs._isolation.modtable` — ``sys.modules``, answering each owner with its own
  modules, for Python and C readers alike;
* :mod:`vlcs._isolation.loader` — find, create, execute, roll back;
* :mod:`vlcs._isolation.extension` — extension modules into a namespace;
* this module — the three doors into the import system, installed once.

CPython has three doors into the import system, and each is covered:

* the ``import`` statement calls ``builtins.__import__`` with the importing
  module's globals: replaced here, it returns the owner's modules;
* ``importlib.import_module``: replaced, same answer (a module already
  held, for the base or a context's module, is answered in C);
* C code (Cython's import helpers, ``PyImport_ImportModule``) reads the
  module table, which answers per owner, and calls
  ``importlib._bootstrap._find_and_load`` on a miss: replaced too.

The base's imports are CPython's own, run with the base decided as the
owner, so that nothing a context did changes what base code gets.
"""

from __future__ import annotations

import builtins
import importlib
import opcode
import sys
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import Any

from vlcs._isolation import extension as _extension
from vlcs._isolation import loader as _loader
from vlcs._isolation import modtable as _modtable
from vlcs._isolation import owners as _owners
from vlcs._isolation import reader as _reader
from vlcs._isolation.owners import BASE, Owner, forget, is_shared, resolve, share
from vlcs._isolation.reader import fast as _fast

__all__ = ["BASE", "Owner", "forget", "install", "modules_of", "share"]

_bootstrap: Any = sys.modules["_frozen_importlib"]

_orig_import = builtins.__import__
_orig_import_module = importlib.import_module
_orig_find_and_load = _bootstrap._find_and_load
_IMPORT_NAME = opcode.opmap["IMPORT_NAME"]
_installed = False


# Frames of the import machinery, hidden from tracebacks of failed imports
# (as CPython hides importlib's) unless VLCS_TRACE=imports asks for them.
_INTERNAL = {
    __file__,
    _extension.__file__,
    _loader.__file__,
    _modtable.__file__,
    _owners.__file__,
    "<frozen importlib._bootstrap>",
    "<frozen importlib._bootstrap_external>",
}


def _without_internal(tb: TracebackType | None) -> TracebackType | None:
    head = last = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename not in _INTERNAL:
            if last is None:
                head = tb
            else:
                last.tb_next = tb
            last = tb
        tb = tb.tb_next
    if last is not None:
        last.tb_next = None
    return head


def _hide_machinery(e: BaseException) -> BaseException:
    """e, its traceback without the machinery's frames (unless tracing)."""
    return e if _loader.TRACE else e.with_traceback(_without_internal(e.__traceback__))


load = _loader.load


def _absolute(name: str, globals: Any, level: int) -> str:
    if level == 0:
        return name
    package = _bootstrap._calc___package__(globals or {})
    return _bootstrap._resolve_name(name, package, level)


def _import(
    name: str,
    globals: Any = None,
    locals: Any = None,
    fromlist: Sequence[str] | None = (),
    level: int = 0,
) -> Any:
    try:
        return _import_from(sys._getframe(1), name, globals, locals, fromlist, level)
    except BaseException as e:
        raise _hide_machinery(e)  # noqa: B904 (the same exception, re-raised)


def _import_from(
    caller: Any,
    name: str,
    globals: Any,
    locals: Any,
    fromlist: Sequence[str] | None,
    level: int,
) -> Any:
    if level == 0 and is_shared(name):
        # One module for every owner (the standard library, vlcs.share):
        # whose import it is changes nothing, so nothing is asked.
        return _orig_import(name, globals, locals, fromlist, level)
    absname = name if level == 0 else _absolute(name, globals, level)
    if caller.f_globals is globals and caller.f_code.co_code[caller.f_lasti] == _IMPORT_NAME:
        # An import statement: the importing module decides.
        owner = _owners.owner_of.get(id(globals))
        if owner is None:
            owner = BASE if _base_package_code(globals, absname) else resolve(caller, native=False)
    else:
        # PyImport_Import from C passes whatever Python frame is innermost,
        # then reads sys.modules[name] itself (with the same owner rules).
        owner = resolve(caller)
    if not _owners.wants(owner, absname):
        if owner is not BASE:
            return _orig_import(name, globals, locals, fromlist, level)
        # The native stack may hold another owner's code that called back
        # into base code: CPython's lookups for this import are the base's.
        with _owners.acting_for(BASE):
            return _orig_import(name, globals, locals, fromlist, level)
    module = load(owner, absname)
    if not fromlist:
        if level == 0:
            return load(owner, absname.partition(".")[0])
        if not name:
            return module
        cut = len(name) - len(name.partition(".")[0])
        return owner.modules[absname[: len(absname) - cut]]
    if hasattr(module, "__path__"):
        _fromlist(owner, module, fromlist)
    return module


def _base_package_code(globals: Any, absname: str) -> bool:
    """Whether the importing code is a base module of the package it imports
    from: base numpy's ``import numpy.random`` (its lazy ``np.random``), run
    by a thread inside a context that has no numpy, must stay the base's, or
    the context would import a numpy of its own and hand back its arrays.
    The script (``__main__``) and modules of other packages do not count:
    ``with ctx: import numpy`` in them is the context's."""
    modname = globals.get("__name__") if isinstance(globals, dict) else None
    if not isinstance(modname, str) or modname == "__main__":
        return False
    if modname.partition(".")[0] != absname.partition(".")[0]:
        return False
    table = _modtable.table
    module = dict.get(table, modname) if table is not None else None
    return getattr(module, "__dict__", None) is globals


def _fromlist(owner: Owner, module: Any, fromlist: Iterable[str], star: bool = False) -> None:
    for x in fromlist:
        if not isinstance(x, str):
            raise TypeError(
                f"Item in {module.__name__}.__all__ must be str, not {type(x).__name__}"
            )
        if x == "*":
            if not star and hasattr(module, "__all__"):
                _fromlist(owner, module, module.__all__, star=True)
        elif not hasattr(module, x):
            sub = f"{module.__name__}.{x}"
            try:
                load(owner, sub)
            except ModuleNotFoundError as e:
                # "from pkg import name" where name is neither: the caller's
                # ImportError says so.
                if e.name == sub:
                    continue
                raise


def _import_module(name: str, package: str | None = None) -> Any:
    try:
        return _import_module_from(sys._getframe(1), name, package)
    except BaseException as e:
        raise _hide_machinery(e)  # noqa: B904


def _import_module_from(caller: Any, name: str, package: str | None) -> Any:
    owner = resolve(caller, native=False)
    if owner is not BASE and _base_package_code(caller.f_globals, package or name.lstrip(".")):
        owner = BASE
    level = 0
    if name.startswith("."):
        if not package:
            raise TypeError(
                f"the 'package' argument is required to perform a relative import for {name!r}"
            )
        level = len(name) - len(name.lstrip("."))
        absname = _bootstrap._resolve_name(name[level:], package, level)
    else:
        absname = name
    if _owners.wants(owner, absname):
        return load(owner, absname)
    return _orig_import_module(name, package)


def _find_and_load(name: str, import_: Any = None) -> Any:
    owner = resolve(sys._getframe(1))
    if _owners.wants(owner, name):
        try:
            return load(owner, name)
        except BaseException as e:
            raise _hide_machinery(e)  # noqa: B904
    if owner is not BASE:
        return _orig_find_and_load(name, import_)
    with _owners.acting_for(BASE):
        return _orig_find_and_load(name, import_)


def install(thread_owner: Any) -> None:
    """Turn import isolation on for the process (idempotent)."""
    global _installed
    with _owners.lock:
        _owners.thread_owner = thread_owner
        if _installed:
            return
        _installed = True
        if _reader.MISSING is not None:  # this Python has no reader: imports inside raise
            _reader.guard_imports(lambda: thread_owner() is not BASE)
            return
        _fast.configure(
            _owners._SHARED,
            _owners.in_contexts,
            BASE,
            _import,
            _import_module,
            *_current_addresses(),
            _op_kinds(),
            _opcodes("IMPORT_NAME"),
        )
        _modtable.install()
        # shared names, and the base's import statements and import_module
        # calls of modules it holds, are answered in C
        builtins.__import__ = _fast.import_
        importlib.import_module = _fast.import_module
        importlib.invalidate_caches = _loader.invalidate_caches
        _bootstrap._find_and_load = _find_and_load


def context_opened(handle: int, owner: Owner) -> None:
    """Threads in the context whose handle this is read owner's table (rule 4)."""
    _fast.context(handle, owner.modules)
    _owners.context_handle(handle, owner)


def context_closed(handle: int) -> None:
    _fast.context(handle, None)
    _owners.context_handle(handle, None)


def _current_addresses() -> tuple[int, int, int]:
    """The addresses of libvlcs's vlcs_current, which the C half calls, of
    vlcs_owner_epoch, which tells it when a thread's answer may be stale,
    and of vlcs_python_c_caller: the context whose C code is calling the C
    API, if any (src/service_python.c)."""
    import ctypes

    from vlcs._lib import lib

    current = int(ctypes.cast(lib().vlcs_current, ctypes.c_void_p).value or 0)
    epoch = ctypes.addressof(ctypes.c_uint64.in_dll(lib(), "vlcs_owner_epoch"))
    c_caller = int(ctypes.cast(lib().vlcs_python_c_caller, ctypes.c_void_p).value or 0)
    return current, epoch, c_caller


def _op_kinds() -> bytes:
    """A 256-byte table for the C half: 1 at a Python-level read of the
    table (a subscript, `in`), 2 at a call (whose frame is running)."""
    reads = _opcodes("BINARY_SUBSCR", "CONTAINS_OP")
    calls = _opcodes("CALL", "CALL_METHOD", "CALL_FUNCTION", "PRECALL", "CALL_KW")
    return bytes(1 if r else 2 if c else 0 for r, c in zip(reads, calls, strict=True))


def _opcodes(*names: str) -> bytes:
    """A 256-byte table: 1 at each of names' opcodes and their specialised
    forms (what the interpreter's frame shows while it runs one)."""
    import dis  # 3.11's specialised forms are only in dis

    numbers = {
        **opcode.opmap,
        **getattr(opcode, "_specialized_opmap", {}),
        **getattr(dis, "_all_opmap", {}),
    }
    table = bytearray(256)
    for name in names:
        for form in (name, *getattr(opcode, "_specializations", {}).get(name, ())):
            if form in numbers:
                table[numbers[form]] = 1
    return bytes(table)


def modules_of(owner: Owner) -> list[str]:
    return sorted(owner.modules)

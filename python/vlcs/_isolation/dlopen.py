"""Libraries loaded at run time by a context's code stay in the context.

``ctypes.CDLL(name)`` (also ``cdll.LoadLibrary``, ``PyDLL``, cffi's ABI
mode through ctypes) calls the base libc's ``dlopen``, so a library a
context's code loads that way would land in the base namespace and be one
copy for every context (llvmlite under numba, torch's global deps). Here
ctypes' loader asks the owner rules of imports (:mod:`vlcs._isolation.owners`) whose
load it is, and a context's goes through ``vlcs_ctx_load`` into its
namespace, and its ``RTLD_NOLOAD`` probes look there.  The program
(``CDLL(None)``) and ``libc.so.6`` opened by a context's code are the
namespace's global scope (the interposer in front of libc):
``dl_iterate_phdr`` lists the context's objects, so threadpoolctl finds and
limits the context's pools.  Loads by the base and by vlcs itself go to
``dlopen`` as before.
"""

from __future__ import annotations

import ctypes
import os
import sys
from typing import Any

from vlcs._errors import VlcsError
from vlcs._isolation import owners as _owners
from vlcs._isolation.owners import NativeSide

_real_dlopen = ctypes._dlopen  # type: ignore[attr-defined]
_installed = False


def _dlopen(name: Any, mode: int = ctypes.DEFAULT_MODE) -> int:
    caller = sys._getframe(1)
    # the caller of CDLL.__init__ (or of whatever called us directly)
    user = caller.f_back if caller.f_code.co_name == "__init__" else caller
    if user is not None and str(user.f_globals.get("__name__", "")).startswith("vlcs."):
        return _real_dlopen(name, mode)
    owner = _owners.resolve(caller)
    if owner.ctx is None:
        return _real_dlopen(name, mode)
    try:
        if name is None or os.path.basename(os.fsdecode(name)).startswith("libc.so"):
            # The program, or libc, as the context's code sees them: the
            # namespace's global scope, the interposer first (dl_iterate_phdr
            # lists the context's objects, CPU queries count its CPUs), then
            # the services (libpython) and libc.
            native = owner.native
            native.keep_native("ctypes.CDLL(None)")
            return native.scope_handle()
        # Handles made here are the context code's own CDLL objects, which
        # its modules may keep: the namespace stays when the context closes.
        if mode & os.RTLD_NOLOAD:
            handle = _loaded_in(owner.native, os.fsdecode(name))
        else:
            handle = owner.native.load_handle(name)
        owner.native.keep_native(os.path.basename(os.fsdecode(name)))
        return handle
    except VlcsError as e:
        if isinstance(e, OSError):
            raise
        raise OSError(str(e)) from e  # what ctypes callers expect of dlopen


def _loaded_in(native: NativeSide, name: str) -> int:
    """dlopen(name, RTLD_NOLOAD) in the context: its handle if the context
    has it (threadpoolctl opens each library it found so)."""
    handle = native.loaded_handle(name)
    if handle is not None:
        return handle
    raise OSError(f"{name}: not loaded in context '{native.name}' (RTLD_NOLOAD)")


def install() -> None:
    """Route ctypes' loads by contexts' code into their namespaces (idempotent)."""
    global _installed
    if not _installed:
        _installed = True
        ctypes._dlopen = _dlopen  # type: ignore[attr-defined]

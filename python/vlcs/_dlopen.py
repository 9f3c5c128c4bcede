"""Libraries loaded at run time by a context's code stay in the context.

``ctypes.CDLL(name)`` (also ``cdll.LoadLibrary``, ``PyDLL``, cffi's ABI
mode through ctypes) calls the base libc's ``dlopen``, so a library a
context's code loads that way would land in the base namespace and be one
copy for every context (llvmlite under numba, torch's global deps). Here
ctypes' loader asks the owner rules of imports (:mod:`vlcs._owners`) whose
load it is, and a context's goes through ``vlcs_ctx_load`` into its
namespace. Loads by the base, by vlcs itself, of the program (``None``) and
``RTLD_NOLOAD`` probes go to ``dlopen`` as before.
"""

from __future__ import annotations

import ctypes
import os
import sys
from typing import Any

from vlcs import _owners
from vlcs._errors import VlcsError

_real_dlopen = ctypes._dlopen  # type: ignore[attr-defined]
_installed = False


def _dlopen(name: Any, mode: int = ctypes.DEFAULT_MODE) -> int:
    if name is None or mode & os.RTLD_NOLOAD:
        return _real_dlopen(name, mode)
    caller = sys._getframe(1)
    # the caller of CDLL.__init__ (or of whatever called us directly)
    user = caller.f_back if caller.f_code.co_name == "__init__" else caller
    if user is not None and str(user.f_globals.get("__name__", "")).startswith("vlcs."):
        return _real_dlopen(name, mode)
    owner = _owners.resolve(caller)
    if owner.ctx is None:
        return _real_dlopen(name, mode)
    try:
        return owner.ctx._load_handle(name)
    except VlcsError as e:
        if isinstance(e, OSError):
            raise
        raise OSError(str(e)) from e  # what ctypes callers expect of dlopen


def install() -> None:
    """Route ctypes' loads by contexts' code into their namespaces (idempotent)."""
    global _installed
    if not _installed:
        _installed = True
        ctypes._dlopen = _dlopen  # type: ignore[attr-defined]

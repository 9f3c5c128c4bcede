"""A Python callable run through ``vlcs_ctx_call`` in a context that shares
the base's interpreter: a fault in the context's native code raises
:class:`vlcs.ContextFaultError` instead of ending the process.

The call itself is ``vlcs._isolation._fast.call_guarded`` (C: it puts the
thread state back as it was when a fault cut the call short); the rules of
what is contained are libvlcs's (src/fault.c, docs/faults.md).
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable
from typing import Any, Protocol

from vlcs._isolation.reader import MISSING, fast
from vlcs._lib import fault_error, lib


class _Context(Protocol):
    """What is used of a vlcs.VLC: its handle, and entering it."""

    @property
    def _h(self) -> int: ...
    def __enter__(self) -> Any: ...
    def __exit__(self, *exc: object) -> Any: ...


@functools.cache
def _ctx_call_address() -> int:
    return ctypes.cast(lib().vlcs_ctx_call, ctypes.c_void_p).value or 0


def call_guarded(ctx: _Context, fn: Callable[[], Any]) -> Any:
    """fn() inside ctx on this thread (vlcs_ctx_call enters it), its result
    or its exception; ContextFaultError when it faulted (the context is
    then broken).  Without the C reader (a CPython vlcs does not know) fn
    runs inside the context unguarded, as ``with ctx:`` runs it."""
    if MISSING is not None:
        with ctx:
            return fn()
    handle = ctx._h
    ok, value = fast.call_guarded(_ctx_call_address(), handle, fn)
    if ok:
        return value
    raise fault_error(handle)

"""ctypes binding of libvlcs (the part the Python package needs so far)."""

from __future__ import annotations

import ctypes
import threading

from vlcs._paths import library_path


class VlcsError(RuntimeError):
    """A failure reported by libvlcs; the message is vlcs_error()'s sentence."""


class _Opts(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint), ("strict", ctypes.c_int)]


_lock = threading.Lock()
_lib: ctypes.CDLL | None = None


def lib() -> ctypes.CDLL:
    """libvlcs.so, loaded once into the base namespace."""
    global _lib
    with _lock:
        if _lib is None:
            handle = ctypes.CDLL(str(library_path()))
            handle.vlcs_error.restype = ctypes.c_char_p
            handle.vlcs_version.restype = ctypes.c_char_p
            handle.vlcs_init_opts.argtypes = [ctypes.POINTER(_Opts)]
            handle.vlcs_service_add.argtypes = [ctypes.c_char_p]
            handle.vlcs_stack_find.restype = ctypes.c_void_p
            handle.vlcs_stack_find.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_ulong]
            _lib = handle
        return _lib


def _error() -> str:
    return (lib().vlcs_error() or b"").decode(errors="replace")


def init(strict: bool = False) -> None:
    """Initialise vlcs; ``strict=True`` also turns on strict mode.

    Strict mode answers raw syscalls made by code in contexts (see vlcs.h);
    it cannot be turned off.  Raises VlcsError with the reason when it is not
    available here (no seccomp, a container policy); contexts keep working.

    >>> import vlcs
    >>> vlcs.init()
    >>> vlcs.strict_active()
    False
    """
    opts = _Opts(ctypes.sizeof(_Opts), 1 if strict else 0)
    if lib().vlcs_init_opts(ctypes.byref(opts)) != 0:
        raise VlcsError(_error())


def strict_active() -> bool:
    """Whether strict mode is on in this process."""
    return bool(lib().vlcs_strict_active())


def service(library: str) -> None:
    """Make ``library`` a service: one copy in the base, shared by every context.

    Dependants later loaded into contexts bind to that copy (see
    vlcs_service_add in vlcs.h).  Call it before contexts load them.

    >>> import vlcs
    >>> vlcs.service("libm.so.6")
    """
    if lib().vlcs_service_add(library.encode()) != 0:
        raise VlcsError(_error())

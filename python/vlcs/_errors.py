"""Exceptions raised for libvlcs's failures, chosen by its error code.

Every failing C call leaves a sentence (``vlcs_error()``) and a code
(``vlcs_errcode()``, the ``VLCS_E_*`` values of vlcs.h).  The code picks the
class, so programs can act on the kind of failure without reading the words;
each class is also the built-in exception a Python user would expect
(ValueError for a bad argument, FileNotFoundError for a missing library).

>>> import vlcs
>>> try:
...     vlcs.VLC(cpus="3-1")
... except ValueError as e:
...     e.code == vlcs.Errcode.INVALID
True
"""

from __future__ import annotations

import enum
from collections.abc import Callable


class Errcode(enum.IntEnum):
    """The ``VLCS_E_*`` codes of vlcs.h."""

    OK = 0
    INVALID = 1
    NOT_FOUND = 2
    LIMIT = 3
    UNSUPPORTED = 4
    BUSY = 5
    DESTROYED = 6
    SYSTEM = 7
    FAULT = 8


class VlcsError(RuntimeError):
    """A failure reported by libvlcs; the message is vlcs_error()'s sentence
    and ``code`` the :class:`Errcode` (SYSTEM when nothing more is known)."""

    code: Errcode = Errcode.SYSTEM


class InvalidArgumentError(VlcsError, ValueError):
    """A bad argument: a malformed CPU list, a bad variable name, an unknown context."""

    code = Errcode.INVALID


class LibraryNotFoundError(VlcsError, FileNotFoundError):
    """A library, one of its dependencies or a symbol was not found."""

    code = Errcode.NOT_FOUND


class Limit(enum.IntEnum):
    """The ``VLCS_LIMIT_*`` values of vlcs.h: which limit a
    :class:`VlcsLimitError` hit (libvlcs's ``vlcs_errlimit()``)."""

    NONE = 0
    NAMESPACES = 1
    STATIC_TLS = 2
    NESTING = 3
    SHIM_SLOTS = 4
    ELASTIC = 5
    SECCOMP = 6
    OTHER = 7
    FAMILIES = 8
    MAPS = 9
    DESCRIPTORS = 10
    THREADS = 11
    KEYS = 12


_LIMIT_NAMES = {
    Limit.NAMESPACES: "linker namespaces",
    Limit.STATIC_TLS: "static TLS",
    Limit.NESTING: "nesting depth",
    Limit.SHIM_SLOTS: "shim slots",
    Limit.ELASTIC: "elastic contexts",
    Limit.SECCOMP: "seccomp filter size",
    Limit.FAMILIES: "library families",
    Limit.MAPS: "memory maps",
    Limit.DESCRIPTORS: "file descriptors",
    Limit.THREADS: "threads",
    Limit.KEYS: "thread-specific data keys",
}

# Set by vlcs._lib: the calling thread's vlcs_errlimit().  An exception the
# C side raises itself (``with ctx:``) is made by its class alone, on the
# thread whose call failed, so it reads the limit when it is made.
_read_limit: Callable[[], int] = lambda: Limit.NONE  # noqa: E731


class VlcsLimitError(VlcsError):
    """A platform limit was reached: ``limit_code`` says which
    (:class:`Limit`), ``limit`` names it ("linker namespaces", "static TLS",
    "nesting depth", "shim slots", ...).  Starting the program with
    ``vlcs run -- PROGRAM`` raises the first two (:attr:`raised_by_vlcs_run`)."""

    code = Errcode.LIMIT

    def __init__(self, *args: object, limit: int | None = None) -> None:
        super().__init__(*args)
        if limit is None:
            try:
                limit = _read_limit()
            except Exception:  # a limit error made without libvlcs
                limit = Limit.NONE
        try:
            self.limit_code = Limit(limit)
        except ValueError:
            self.limit_code = Limit.OTHER

    @property
    def limit(self) -> str:
        return _LIMIT_NAMES.get(self.limit_code, "unknown")

    @property
    def raised_by_vlcs_run(self) -> bool:
        """Whether the limit is one of glibc's that ``vlcs run`` raises."""
        return self.limit_code in (Limit.NAMESPACES, Limit.STATIC_TLS)


class UnsupportedPlatformError(VlcsError):
    """This platform lacks what the call needs (seccomp, x86_64, a glibc feature)."""

    code = Errcode.UNSUPPORTED


class ContextBusyError(VlcsError):
    """The context cannot be destroyed: a thread is still inside it."""

    code = Errcode.BUSY


class ContextDestroyedError(VlcsError):
    """The context was destroyed and can no longer be used."""

    code = Errcode.DESTROYED


class ContextFaultError(VlcsError):
    """Native code in a context faulted (a segmentation fault, a division
    by zero, ``abort()``, a failed assertion) and vlcs contained it: the
    call ended there, the context is broken for good (it cannot be entered
    or used again: close it and make another), and the process and the
    other contexts go on.  Also raised by a broken context's later use.
    ``report`` is libvlcs's account of the fault: the signal, the function
    and library it hit, and the native stack (None when not known).

    What vlcs cannot contain still ends the process: see
    docs/faults.md."""

    code = Errcode.FAULT
    report: str | None = None


_BY_CODE: dict[int, type[VlcsError]] = {
    Errcode.INVALID: InvalidArgumentError,
    Errcode.NOT_FOUND: LibraryNotFoundError,
    Errcode.LIMIT: VlcsLimitError,
    Errcode.UNSUPPORTED: UnsupportedPlatformError,
    Errcode.BUSY: ContextBusyError,
    Errcode.DESTROYED: ContextDestroyedError,
    Errcode.FAULT: ContextFaultError,
}


def error_for(code: int, message: str, limit: int = Limit.NONE) -> VlcsError:
    """The exception for a failure with this code, sentence and (for a
    VLCS_E_LIMIT) limit."""
    try:
        c = Errcode(code)
    except ValueError:
        c = Errcode.SYSTEM
    cls = _BY_CODE.get(c, VlcsError)
    e = cls(message, limit=limit) if cls is VlcsLimitError else cls(message)
    e.code = c
    return e


class RemoteTraceback(Exception):
    """The traceback of a task's exception as formatted where it ran (a
    pool's context, a Python of a context's own): the ``__cause__`` of the
    exception re-raised in the caller, as ProcessPoolExecutor does."""

    def __init__(self, tb: str) -> None:
        super().__init__(tb)
        self.tb = tb

    def __str__(self) -> str:
        return self.tb

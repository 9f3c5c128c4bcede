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


class VlcsLimitError(VlcsError):
    """A platform limit was reached; ``limit`` names it ("linker namespaces",
    "static TLS", "nesting depth", "shim slots").  Starting the program with
    ``vlcs run -- PROGRAM`` raises the first two."""

    code = Errcode.LIMIT

    @property
    def limit(self) -> str:
        text = str(self).lower()
        for needle, name in (
            ("static tls", "static TLS"),  # before namespaces: "creating its namespace"
            ("namespace", "linker namespaces"),
            ("nest", "nesting depth"),
            ("shim", "shim slots"),
        ):
            if needle in text:
                return name
        return "unknown"


class UnsupportedPlatformError(VlcsError):
    """This platform lacks what the call needs (seccomp, x86_64, a glibc feature)."""

    code = Errcode.UNSUPPORTED


class ContextBusyError(VlcsError):
    """The context cannot be destroyed: a thread is still inside it."""

    code = Errcode.BUSY


class ContextDestroyedError(VlcsError):
    """The context was destroyed and can no longer be used."""

    code = Errcode.DESTROYED


_BY_CODE: dict[int, type[VlcsError]] = {
    Errcode.INVALID: InvalidArgumentError,
    Errcode.NOT_FOUND: LibraryNotFoundError,
    Errcode.LIMIT: VlcsLimitError,
    Errcode.UNSUPPORTED: UnsupportedPlatformError,
    Errcode.BUSY: ContextBusyError,
    Errcode.DESTROYED: ContextDestroyedError,
}


def error_for(code: int, message: str) -> VlcsError:
    """The exception for a failure with this code and sentence."""
    try:
        c = Errcode(code)
    except ValueError:
        c = Errcode.SYSTEM
    e = _BY_CODE.get(c, VlcsError)(message)
    e.code = c
    return e

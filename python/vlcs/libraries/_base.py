"""The contract every library family implements, and the registry."""

from __future__ import annotations

import ctypes
import os
from typing import Any, ClassVar

_registry: list[type[LibraryController]] = []


class LibraryController:
    """One library family: how vlcs recognises it, drives its thread pool
    from inside a context, and what of it is per owner or shared.

    Subclasses set the class attributes and override what applies; a
    missing symbol degrades to "unknown" (None), never to an error.
    Instances wrap one loaded copy (``dll``: a ctypes handle of the copy in
    the context) and are only used while the calling thread is inside that
    context, so the library sees the context's CPUs and environment.
    """

    #: short name, e.g. "openblas"
    name: ClassVar[str] = ""
    #: threadpoolctl's user_api: "blas", "openmp", "torch", "tbb", "bindings"
    user_api: ClassVar[str] = ""
    #: file names (basename prefixes) of its shared objects
    filename_prefixes: ClassVar[tuple[str, ...]] = ()
    #: the environment variable that sizes its pool when it loads
    env_var: ClassVar[str | None] = None
    #: functions answering the pool size (int f(void)), first found is used
    get_threads: ClassVar[tuple[str, ...]] = ()
    #: functions resizing it (void f(int)), first found is used
    set_threads: ClassVar[tuple[str, ...]] = ()
    #: whether one process can run it with different thread counts in
    #: different threads through its own API ("thread": omp_set_num_threads,
    #: mkl_set_num_threads_local, a TBB arena each) or has one count for
    #: the whole process ("process": openblas_set_num_threads); what
    #: ``vlcs tune`` marks as reachable without contexts
    threads_per: ClassVar[str] = "process"
    #: keys (prefixes) of per-interpreter registries the library keeps in
    #: builtins or the interpreter's dict; vlcs keeps one set per owner
    registry_keys: ClassVar[tuple[str, ...]] = ()
    #: why and how it should be shared, when one copy per process is right
    #: (shown by vlcs.info(); vlcs.service() does it)
    sharing: ClassVar[str] = ""
    #: what its pool does when an elastic context grows or shrinks (shown
    #: by VLC.threadpools() of elastic contexts); the runtime's C side
    #: (src/pools.c, src/elastic.c) is what does it
    elastic: ClassVar[str] = "its threads move; its pool keeps its size"
    #: one pool per context however many of its files are loaded (oneMKL:
    #: libmkl_rt and the libmkl_core it loads share one setting)
    one_per_context: ClassVar[bool] = False

    def __init__(self, path: str, dll: ctypes.CDLL) -> None:
        self.path = path
        self.dll = dll

    @classmethod
    def matches(cls, path: str) -> bool:
        """Whether the shared object at path belongs to this family."""
        return os.path.basename(path).startswith(cls.filename_prefixes)

    def symbol(self, symbols: str | tuple[str, ...], restype: Any = None) -> Any:
        """The first of symbols the copy exports, as a ctypes function; None if none."""
        for s in (symbols,) if isinstance(symbols, str) else symbols:
            f = getattr(self.dll, s, None)
            if f is not None:
                f.restype = restype
                return f
        return None

    def num_threads(self) -> int | None:
        """The size of its thread pool, as the copy answers (None: unknown)."""
        f = self.symbol(self.get_threads, ctypes.c_int)
        return None if f is None else int(f())

    def set_num_threads(self, n: int) -> bool:
        """Resize the pool through the library's own API; False if it has none."""
        f = self.symbol(self.set_threads)
        if f is None:
            return False
        f(ctypes.c_int(n))
        return True

    def info(self) -> dict[str, Any]:
        """What vlcs.info() and VLC.threadpools() show for this copy."""
        return {
            "library": os.path.basename(self.path),
            "path": self.path,
            "api": self.name,
            "user_api": self.user_api,
            "num_threads": self.num_threads(),
            "threads_per": self.threads_per,
        }


def register(cls: type[LibraryController]) -> None:
    """Teach vlcs a library family (a LibraryController subclass).

    Families registered later are tried first, so a user's class can take
    over a library a built-in one knows; one of the same name replaces it.
    """
    if not (isinstance(cls, type) and issubclass(cls, LibraryController)) or not cls.name:
        raise TypeError(f"register() takes a LibraryController subclass with a name; got {cls!r}")
    _registry[:] = [cls] + [c for c in _registry if c.name != cls.name]


def controllers() -> list[type[LibraryController]]:
    """The registered families, in the order they are tried (latest first)."""
    return list(_registry)


def registry_keys() -> tuple[str, ...]:
    """Every per-interpreter registry key prefix that is kept per owner."""
    return tuple(k for c in _registry for k in c.registry_keys)

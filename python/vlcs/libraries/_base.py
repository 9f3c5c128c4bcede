"""The contract every library family implements, and the registry.

A family's C-side knowledge (file prefixes, thread-count symbols and their
C type, whether elastic contexts resize it, its pool stoppers) is one row of
libvlcs's table of families (src/families.c): the built-in classes take
theirs from there (:func:`bind_builtin`), and :func:`register` gives a
user's class a row, so that libvlcs resizes and stops its pools too.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any, ClassVar

from vlcs._lib import register_family

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
    #: functions answering the pool size (count_type f(void)), first found is used
    get_threads: ClassVar[tuple[str, ...]] = ()
    #: functions resizing it (void f(count_type)), first found is used
    set_threads: ClassVar[tuple[str, ...]] = ()
    #: the C type of the count in both: "int", or "int64" (BLIS's dim_t, ILP64 APIs)
    count_type: ClassVar[str] = "int"
    #: whether libvlcs calls set_threads with the CPU count when an elastic
    #: context holding it grows or shrinks (False where the setter only
    #: acts on its calling thread, as OpenMP's)
    resize_when_elastic: ClassVar[bool] = True
    #: functions (void f(void)) that stop its pool's threads; libvlcs calls
    #: them before a destroyed context's libraries are unloaded
    stop_pool: ClassVar[tuple[str, ...]] = ()
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
    #: set for the built-in families, whose C side is libvlcs's own row
    _builtin: ClassVar[bool] = False
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

    def _count(self) -> Any:
        return ctypes.c_int64 if self.count_type == "int64" else ctypes.c_int

    def num_threads(self) -> int | None:
        """The size of its thread pool, as the copy answers (None: unknown)."""
        f = self.symbol(self.get_threads, self._count())
        return None if f is None else int(f())

    def set_num_threads(self, n: int) -> bool:
        """Resize the pool through the library's own API; False if it has none."""
        f = self.symbol(self.set_threads)
        if f is None:
            return False
        f(self._count()(n))
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


#: the C-side attributes, as libvlcs's table of families names them
_C_FIELDS = (
    "filename_prefixes",
    "get_threads",
    "set_threads",
    "count_type",
    "resize_when_elastic",
    "stop_pool",
)


def bind_builtin(cls: type[LibraryController], rows: dict[str, dict[str, Any]]) -> None:
    """Give a built-in class its row of libvlcs's table (by name): its C-side
    attributes are the ones libvlcs acts on, written once, in C."""
    row = rows.get(cls.name)
    if row is not None:
        for field in _C_FIELDS:
            setattr(cls, field, row[field])
    cls._builtin = True


def register(cls: type[LibraryController]) -> None:
    """Teach vlcs a library family (a LibraryController subclass).

    Families registered later are tried first, so a user's class can take
    over a library a built-in one knows; one of the same name replaces it.
    libvlcs learns it too (``vlcs_family_register``): elastic contexts
    resize its pool through ``set_threads`` (unless ``resize_when_elastic``
    is False) and destroying a context runs its ``stop_pool`` functions.
    """
    if not (isinstance(cls, type) and issubclass(cls, LibraryController)) or not cls.name:
        raise TypeError(f"register() takes a LibraryController subclass with a name; got {cls!r}")
    if not cls.__dict__.get("_builtin", False):
        register_family(cls.name, *(getattr(cls, field) for field in _C_FIELDS))
    _registry[:] = [cls] + [c for c in _registry if c.name != cls.name]


def controllers() -> list[type[LibraryController]]:
    """The registered families, in the order they are tried (latest first)."""
    return list(_registry)


def registry_keys() -> tuple[str, ...]:
    """Every per-interpreter registry key prefix that is kept per owner."""
    return tuple(k for c in _registry for k in c.registry_keys)

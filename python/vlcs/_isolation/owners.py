"""Whose import is it: the owners (each context, and the base) and the
rules that pick one for a lookup.

Which owner an import belongs to is decided in this order:

1. the module being executed right now by this thread on behalf of an owner
   (imports made while a module initialises, C-level ones included);
2. for lookups C code makes (``PyImport_GetModule``, ``PyImport_Import``,
   ``_find_and_load``): the innermost extension module of an owner on the
   native stack, since C callers have no Python frame;
3. the nearest Python frame whose module belongs to an owner (code of a
   context's numpy belongs to that context, from any thread, at any time;
   code of any base module run by a thread in no context, the base's);
   an ``import`` statement is decided by the importing module alone;
4. the context the calling thread is in (``with ctx:``, executor threads);
5. the base.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import threading
import weakref
from collections.abc import Callable, Iterator
from importlib.machinery import EXTENSION_SUFFIXES
from typing import Any, Protocol

from vlcs._isolation import reader as _reader
from vlcs._isolation.reader import fast as _fast

# Top-level names that are never privatised.
_SHARED: set[str] = (
    set(sys.builtin_module_names)
    | set(getattr(sys, "stdlib_module_names", ()))
    | {
        "vlcs",
        "__main__",
        "__mp_main__",
        "_distutils_hack",
        # patches the shared typing module: two copies would mix their types
        "typing_extensions",
        "pytest",
        "_pytest",
        "pluggy",
        "py",
    }
)


class NativeSide(Protocol):
    """What import isolation (``_loader``, ``_dlopen``) asks of a context's
    native side; the context (``vlcs.VLC``) gives its owner one."""

    @property
    def name(self) -> str:
        """The context's name, for messages."""
        ...

    def namespace_handle(self) -> int | None:
        """A handle of an object in the context's namespace; None before the first load."""
        ...

    def load_handle(self, path: str | bytes) -> int:
        """vlcs_ctx_load's handle of path in the namespace; raises on failure."""
        ...

    def scope_handle(self) -> int:
        """A handle whose lookups find the context's interposer first, then
        its services and libc: the program and libc as its code sees them."""
        ...

    def loaded_handle(self, name: str) -> int | None:
        """The context's handle of a library it has loaded (by path or file
        name), as dlopen(RTLD_NOLOAD) would give; None if it has not."""
        ...

    def load_dll(self, path: str) -> ctypes.CDLL:
        """path loaded into the namespace, as a ctypes library."""
        ...

    def give_state_dict(self) -> None:
        """The namespace's extension modules get the owner's interpreter dict."""
        ...

    def keep_native(self, what: str) -> None:
        """Native code Python objects may refer to for good: the namespace
        stays loaded when the context closes."""
        ...


# id(owner.modules) -> owner: what a table the C half decided on belongs to
_by_table: weakref.WeakValueDictionary[int, Owner] = weakref.WeakValueDictionary()


class Owner:
    """The modules of one context, or of the base (ctx is None)."""

    def __init__(self, label: str, ctx: Any = None, native: NativeSide | None = None) -> None:
        self.label = label
        self.ctx = ctx  # the vlcs.VLC, or None for the base
        self.native = native  # its native side (None for the base)
        self.modules: dict[str, Any] = {}
        _by_table[id(self.modules)] = self
        self.registries: dict[str, Any] = {}  # binding libraries' registries in builtins
        # what its extension modules' PyInterpreterState_GetDict() returns
        self.state_dict: dict[Any, Any] = {}

    def __repr__(self) -> str:
        return f"<vlcs import owner {self.label}>"


BASE = Owner("base")

lock = threading.RLock()
tls = threading.local()
# A fork copies the lock as it is.  Held by another thread, importing for a
# context, it would be held for good in the child, which has no such thread,
# and the child's first import into a context would wait forever: the child
# gets it free.  Held by the forking thread, it stays held, as that thread
# goes on with its import there (CPython treats its import lock alike).
_held_at_fork = False


def _before_fork() -> None:
    global _held_at_fork
    _held_at_fork = lock._is_owned()  # type: ignore[attr-defined]


def _after_fork_in_child() -> None:
    if not _held_at_fork:
        lock._at_fork_reinit()  # type: ignore[attr-defined]


os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)
# id(module.__dict__) -> owner, for every module in an owner's table; the
# tables keep the modules (and so the ids) alive.
owner_of: dict[int, Owner] = {}
# id(module.__dict__) of the base's modules (the C side holds the dicts)
base_modules: set[int] = set()
managed: set[str] = set()  # top-level names some context imported privately
# top-level names any context's table ever held (never shrinks): a name that
# is neither here nor in the base's storage is absent for every owner
in_contexts: set[str] = set()
# () -> the owner of the calling thread's context; set by install()
thread_owner: Callable[[], Owner] = lambda: BASE  # noqa: E731


def share(*names: str) -> None:
    """Keep the given top-level packages shared: imported once, in the base.

    Use it for packages that must exist once per process (a plugin registry,
    a logging setup) or that break when imported twice.

    >>> import vlcs
    >>> vlcs.share("my_registry")
    """
    for n in names:
        if not isinstance(n, str) or not n or "." in n:
            raise ValueError(f"share() takes top-level package names; got {n!r}")
        if n in managed:
            raise ValueError(f"{n!r} is already imported privately by a context; share it earlier")
        _SHARED.add(n)
    _fast.names_changed()


def _own(d: Any, owner: Owner) -> None:
    """Code whose globals are d is owner's (rule 3), for Python and C."""
    if isinstance(d, dict):
        owner_of[id(d)] = owner
        base_modules.discard(id(d))
        _fast.own(d, None if owner is BASE else owner.modules)


def _disown(d: Any) -> None:
    if isinstance(d, dict):
        owner_of.pop(id(d), None)
        _fast.disown(d)


def adopt(owner: Owner, name: str, module: Any) -> None:
    """Enter module in a context owner's table, known to the owner rules."""
    top = name.partition(".")[0]
    if top not in in_contexts:
        in_contexts.add(top)
        _fast.names_changed()
    owner.modules[name] = module
    _own(getattr(module, "__dict__", None), owner)


def drop(owner: Owner, name: str) -> None:
    """Take name out of a context owner's table (and out of the owner rules)."""
    dropped = owner.modules.pop(name, None)
    if dropped is not None:
        _disown(getattr(dropped, "__dict__", None))


def forget(owner: Owner) -> list[Any]:
    """A closed context's owner: every module out of its table and out of
    the owner rules, its extension modules no longer on the native-stack
    list, its binding registries dropped.  Returns the modules (for the
    caller to let go of)."""
    global _handles
    with lock:
        modules = list(owner.modules.values())
        for name in list(owner.modules):
            drop(owner, name)
        for h in [h for h, o in _objects.items() if o is owner]:
            del _objects[h]
            _handles = None
        _fast.set_natives(bool(_objects))
        owner.registries.clear()
        owner.state_dict.clear()
    return modules


# --- deciding the owner -----------------------------------------------------------


@contextlib.contextmanager
def acting_for(owner: Owner) -> Iterator[None]:
    """Lookups and imports this thread makes meanwhile are owner's (rule 1):
    while a module executes for owner, or while CPython runs an import whose
    owner the doors decided."""
    _fast.acting_push(owner, None if owner is BASE else owner.modules)
    try:
        yield
    finally:
        _fast.acting_pop()


# Whose code called the caller where the frames alone decide it, in C: BASE,
# or a context's table; None: ask resolve.  See caller().
decided = _fast.decided


def routed(
    base: Callable[..., Any], view: Callable[..., Any], method: bool = False
) -> Callable[..., Any]:
    """A function that calls base where the frames alone say the caller is
    the base's code (decided in C) and view for every other caller: what a
    view replaces a function of the process with, so that the base pays a
    call and not a Python function.  view must give what base gives for the
    base's code.  method: it stands in for a Python function, and binds as
    a class attribute (a builtin's stand-in does not).  Without the C half:
    view."""
    if _reader.MISSING is not None:
        return view
    return (_fast.RoutedMethod if method else _fast.Routed)(base, view)


def caller(frame: Any) -> Owner:
    """resolve(frame, native=False) for a function that Python code calls
    (a view, a method of the table), frame its caller's frame: decided in C
    where the frames alone decide, so that the base's code, and a context's
    module, pay a call and not a walk of their frames in Python."""
    d = decided()
    if d is BASE:
        return BASE
    if d is not None:
        o = _by_table.get(id(d))
        if o is not None and o.modules is d:
            return o
    return resolve(frame, native=False)


def resolve(frame: Any, native: bool = True) -> Owner:
    """Whose lookup or import it is, made with frame the innermost Python
    frame; native: made by C code (CPython's, or an extension module's).

    A context's C code calling the C API is noted by libvlcs: its context.
    Otherwise the frames decide; where they say a context's, C code may
    still be the base's, called from the context's code (a base object's
    method), and the innermost extension module on the native stack says.
    Where the frames say the base's, no stack is walked: the base's C code
    reads at the cost of its Python code."""
    acting = _fast.acting_top()
    if acting is not None:
        return acting  # type: ignore[no-any-return]
    if not (native and _objects):
        return _frames_owner(frame)
    h = _c_caller_handle()
    if h == _SOME_CONTEXT:  # a context's C code, not named: the stack says whose
        return _native_owner() or _frames_owner(frame)
    o = _by_handle.get(h) if h else None
    if o is not None:
        return o
    o = _frames_owner(frame)
    if o is not BASE:
        return _native_owner() or o
    return o


def _frames_owner(frame: Any) -> Owner:
    """The owner of the nearest frame of an owned module (rule 3), else the
    thread's context (rule 4), else the base."""
    table = owner_of
    thread = None
    f = frame
    while f is not None:
        g = f.f_globals
        o = table.get(id(g))
        if o is not None:
            return o
        if id(g) in base_modules:
            thread = thread or thread_owner()
            if thread is BASE:
                return BASE
        f = f.f_back
    return thread or thread_owner()


# --- native callers ---------------------------------------------------------------
# C code (numpy filling a lazy cache, Cython helpers) imports through
# sys.modules with no Python frame of its own: the innermost extension module
# on the native stack tells whose import it is.

_objects: dict[int, Owner] = {}  # dlopen handle of an extension module -> owner
_handles: tuple[int, ...] | None = None  # the same keys, for vlcs_stack_find


def register_object(handle: int, owner: Owner) -> None:
    global _handles
    if handle and _objects.get(handle) is not owner:
        _objects[handle] = owner
        _handles = None
        _fast.set_natives(True)


def register_base_extension(module: Any) -> None:
    path = getattr(module, "__file__", None)
    if not isinstance(path, str) or not path.endswith(tuple(EXTENSION_SUFFIXES)):
        return
    try:
        dll = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    except OSError:
        return
    register_object(dll._handle, BASE)


_stack_find: Any = None
_c_caller: Any = None
_by_handle: dict[int, Owner] = {}  # a context's handle -> its owner


def context_handle(handle: int, owner: Owner | None) -> None:
    """The context whose handle this is reads owner's table (None: forget)."""
    if owner is None:
        _by_handle.pop(handle, None)
    else:
        _by_handle[handle] = owner


_SOME_CONTEXT = 1  # vlcs.h's VLCS_PYTHON_SOME_CONTEXT


def _c_caller_handle() -> int:
    """The handle of the context whose C code made the C API call this
    thread is in (noted by libvlcs's hooks, src/service_python.c), 0 for
    none, or _SOME_CONTEXT."""
    global _c_caller
    if _c_caller is None:
        from vlcs._lib import lib

        _c_caller = lib().vlcs_python_c_caller
    return _c_caller() or 0


def _native_owner() -> Owner | None:
    global _handles, _stack_find
    if _stack_find is None:
        from vlcs._lib import lib

        _stack_find = lib().vlcs_stack_find
    keys = _handles
    if keys is None:
        keys = _handles = tuple(_objects)
    # A fresh array per call: vlcs_stack_find sorts it in place, with the
    # GIL released, while other threads may be looking too.
    arr = (ctypes.c_void_p * len(keys))(*keys)
    h = _stack_find(arr, len(arr))
    return _objects.get(h) if h else None


def is_shared(name: Any) -> bool:
    """Whether name is one module for all owners (kept in the base's table)."""
    return not isinstance(name, str) or name.partition(".")[0] in _SHARED


def wants(owner: Owner, name: str) -> bool:
    """Whether owner's import of name goes through vlcs's loader (the base's
    imports are CPython's own)."""
    return owner is not BASE and name.partition(".")[0] not in _SHARED


def manage(top: str, base_modules: Any) -> None:
    """A context imports top privately: the base's modules of top (in
    base_modules) become known as the base's to the owner rules."""
    if top in managed:
        return
    managed.add(top)
    prefix = top + "."
    for k, v in list(base_modules):
        if k == top or k.startswith(prefix):
            note_base_module(k, v)


def note_base_module(name: Any, module: Any) -> None:
    """The base put module in its table: its native code, and once a context
    has the package too its Python code, decide their imports as the base's."""
    if is_shared(name):
        return
    register_base_extension(module)
    d = getattr(module, "__dict__", None)
    if name.partition(".")[0] in managed:
        _own(d, BASE)
    elif isinstance(d, dict):
        # a thread in no context running it reads the base's table
        base_modules.add(id(d))
        _fast.base_module(d)


def base_module_gone(module: Any) -> None:
    """The base took module out of its table: its code is no one's."""
    d = getattr(module, "__dict__", None)
    if isinstance(d, dict) and owner_of.get(id(d)) is None:
        base_modules.discard(id(d))
        _fast.disown(d)


def all_owners() -> list[Owner]:
    seen = {id(o): o for o in list(owner_of.values())}
    return list(seen.values())

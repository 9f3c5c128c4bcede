"""Import isolation: ``with ctx: import numpy`` gives ctx its own numpy.

Every *owner* (each context, and the base) has its own table of modules.
A module imported by code that belongs to a context is executed afresh for
that context, and its extension modules are loaded into the context's
namespace (see _extension.py).  The standard library, builtin modules and
the names given to :func:`share` stay shared: one copy, the base's.

Which owner an import belongs to is decided in this order:

1. the module being executed right now by this thread on behalf of an owner
   (imports made while a module initialises, C-level ones included);
2. for lookups C code makes (forwarder attributes, ``PyImport_Import``,
   ``_find_and_load``): the innermost extension module of an owner on the
   native stack, since C callers have no Python frame;
3. the nearest Python frame whose module belongs to an owner (code of a
   context's numpy belongs to that context, from any thread, at any time);
   an ``import`` statement is decided by the importing module alone;
4. the context the calling thread is in (``with ctx:``, executor threads);
5. the base.

CPython has three doors into the import system, and each is covered:

* the ``import`` statement calls ``builtins.__import__`` with the importing
  module's globals: replaced here, it returns the owner's real modules;
* ``importlib.import_module``: replaced, same answer;
* C code (Cython's import helpers, ``PyImport_ImportModule``) reads
  ``sys.modules`` directly and calls ``importlib._bootstrap._find_and_load``
  on a miss.  The miss path is replaced; for hits, the ``sys.modules`` entry
  of every privatised name is a forwarder module that resolves each
  attribute access through the rules above.  ``PyImport_Import`` reads
  ``sys.modules`` after importing, so some entry under the plain name must
  exist: that is why forwarders, and not nothing, stand there.

Names the base had imported before a context privatised them move behind a
forwarder too; base code keeps using its own objects.
"""

from __future__ import annotations

import builtins
import ctypes
import dis
import importlib
import os
import sys
import threading
import warnings
from collections.abc import Iterable, Sequence
from importlib.machinery import (
    EXTENSION_SUFFIXES,
    ExtensionFileLoader,
    ModuleSpec,
    SourceFileLoader,
)
from types import ModuleType
from typing import Any

_bootstrap: Any = sys.modules["_frozen_importlib"]

_orig_import = builtins.__import__
_orig_import_module = importlib.import_module
_orig_find_and_load = _bootstrap._find_and_load
_IMPORT_NAME = dis.opmap["IMPORT_NAME"]

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


class Owner:
    """The modules of one context, or of the base (ctx is None)."""

    def __init__(self, label: str, ctx: Any = None) -> None:
        self.label = label
        self.ctx = ctx
        self.modules: dict[str, Any] = {}
        self.registries: dict[Any, Any] = {}  # binding libraries' type registries

    def __repr__(self) -> str:
        return f"<vlcs import owner {self.label}>"


BASE = Owner("base")

_lock = threading.RLock()
_tls = threading.local()
# id(module.__dict__) -> owner, for every module in an owner's table; the
# tables keep the modules (and so the ids) alive.
_owner_of: dict[int, Owner] = {}
_managed: set[str] = set()  # top-level names with forwarders in sys.modules
_forwarders: dict[str, Forwarder] = {}  # one per name, so identity is stable
_thread_owner: Any = None  # set by install(): () -> Owner
_installed = False


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
        if n in _managed:
            raise ValueError(f"{n!r} is already imported privately by a context; share it earlier")
        _SHARED.add(n)


# --- deciding the owner -----------------------------------------------------------


def resolve(frame: Any, native: bool = True) -> Owner:
    stack = getattr(_tls, "loading", None)
    if stack:
        return stack[-1]
    if native and _objects:
        o = _native_owner()
        if o is not None:
            return o
    owner_of = _owner_of
    f = frame
    while f is not None:
        o = owner_of.get(id(f.f_globals))
        if o is not None:
            return o
        f = f.f_back
    return _thread_owner()


# --- native callers ---------------------------------------------------------------
# C code (numpy filling a lazy cache, Cython helpers) imports through
# sys.modules with no Python frame of its own: the innermost extension module
# on the native stack tells whose import it is.

_objects: dict[int, Owner] = {}  # dlopen handle of an extension module -> owner
_handles: Any = None  # the same keys, as a ctypes array for vlcs_stack_find


def register_object(handle: int, owner: Owner) -> None:
    global _handles
    if handle and _objects.get(handle) is not owner:
        _objects[handle] = owner
        _handles = None


def _register_base_extension(module: Any) -> None:
    path = getattr(module, "__file__", None)
    if not isinstance(path, str) or not path.endswith(tuple(EXTENSION_SUFFIXES)):
        return
    try:
        dll = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    except OSError:
        return
    register_object(dll._handle, BASE)


def _native_owner() -> Owner | None:
    global _handles
    from vlcs._lib import lib

    arr = _handles
    if arr is None:
        arr = _handles = (ctypes.c_void_p * len(_objects))(*_objects)
    h = lib().vlcs_stack_find(arr, len(arr))
    return _objects.get(h) if h else None


def _wants(owner: Owner, name: str) -> bool:
    """Whether owner's import of name goes through the owner tables."""
    top = name.partition(".")[0]
    if owner is BASE:
        return top in _managed
    return top not in _SHARED


# --- forwarders -------------------------------------------------------------------


class Forwarder(ModuleType):
    """What sys.modules holds for a privatised name: each attribute access
    resolves the caller's owner and forwards to that owner's module."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        d = self.__dict__
        for k in ("__doc__", "__package__", "__loader__"):
            d.pop(k, None)
        d["__spec__"] = ModuleSpec(name, None)

    def _target(self, frame: Any, attr: str = "") -> Any:
        name = self.__dict__["__name__"]
        owner = resolve(frame)
        m = owner.modules.get(name)
        if m is not None:
            return m
        if attr.startswith("__"):
            # Introspection walking sys.modules (inspect.getmodule, pickle)
            # must not import every package some other owner has.
            raise AttributeError(f"module {name!r} is not imported by {owner.label}")
        try:
            return load(owner, name)
        except ModuleNotFoundError as e:
            if e.name != name:
                raise
            # Not importable: another owner made it with PyImport_AddModule,
            # and C code of this owner got the forwarder the same way.  To it
            # the module is as empty as a fresh one: say so as a module would
            # (Cython 3.0 reads its shared types from "_cython_3_0_x" so and
            # creates them on AttributeError only).
            raise AttributeError(f"module {name!r} has no attribute {attr!r}") from None

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._target(sys._getframe(1), attr), attr)

    def __setattr__(self, attr: str, value: Any) -> None:
        owner = resolve(sys._getframe(1))
        name = self.__dict__["__name__"]
        m = owner.modules.get(name)
        if m is None:
            try:
                m = load(owner, name)
            except ModuleNotFoundError as e:
                if e.name != name:
                    raise
                # C code got this forwarder from PyImport_AddModule, which
                # makes an empty module when the name is free: do that for
                # the owner (torch._C._c10d_init makes its submodules so).
                m = ModuleType(name)
                _adopt(owner, name, m)
                _handed[name] = owner
        setattr(m, attr, _unwrap(owner, value))

    def __delattr__(self, attr: str) -> None:
        delattr(self._target(sys._getframe(1)), attr)

    def __dir__(self) -> Iterable[str]:
        return dir(self._target(sys._getframe(1)))

    def __repr__(self) -> str:
        return f"<vlcs forwarder of module {self.__dict__['__name__']!r}>"


# C code that got a forwarder from PyImport_ImportModule may write into its
# dict directly (PyModule_AddObject: torch adds its dtypes to "torch" so);
# those entries belong to the owner the forwarder was handed out for.
_handed: dict[str, Owner] = {}


def _harvest(only: str | None = None) -> None:
    items = list(_handed.items()) if only is None else [(only, _handed[only])]
    for name, owner in items:
        fw = sys.modules.get(name)
        if not isinstance(fw, Forwarder):
            continue
        d = fw.__dict__
        if len(d) > 2:
            target = owner.modules.get(name)
            if target is not None:
                for k in [k for k in d if k not in ("__name__", "__spec__")]:
                    target.__dict__[k] = d.pop(k)


def _unwrap(owner: Owner, value: Any) -> Any:
    if isinstance(value, Forwarder):
        name = value.__dict__["__name__"]
        return owner.modules.get(name) or load(owner, name)
    return value


def _manage(top: str) -> None:
    """Put forwarders in sys.modules for top and its submodules; modules the
    base imported before move to the base's table."""
    if top in _managed:
        return
    _managed.add(top)
    prefix = top + "."
    for k, v in list(sys.modules.items()):
        if (k == top or k.startswith(prefix)) and type(v) is not Forwarder:
            _adopt(BASE, k, v)


def _adopt(owner: Owner, name: str, module: Any) -> None:
    if module is not None:
        owner.modules[name] = module
        d = getattr(module, "__dict__", None)
        if d is not None:
            _owner_of[id(d)] = owner
        if owner is BASE:
            _register_base_extension(module)
    sys.modules[name] = _forwarder(name)


def _forwarder(name: str) -> Forwarder:
    fw = _forwarders.get(name)
    if fw is None:
        fw = _forwarders[name] = Forwarder(name)
    return fw


def _forget_unowned(top: str) -> None:
    """After a failed import: drop the forwarders of a package nobody owns,
    so sys.modules is what it was."""
    prefix = top + "."
    owners = [BASE] + [o for o in _all_owners()]
    if any(k == top or k.startswith(prefix) for o in owners for k in o.modules):
        return
    _managed.discard(top)
    for k in [k for k in sys.modules if k == top or k.startswith(prefix)]:
        if isinstance(sys.modules[k], Forwarder):
            del sys.modules[k]
            _forwarders.pop(k, None)


def _all_owners() -> list[Owner]:
    seen = {id(o): o for o in list(_owner_of.values())}
    return list(seen.values())


def _sweep(owner: Owner, before: set[str]) -> None:
    """Move entries module code put into sys.modules itself (aliases,
    modules that replace themselves) into the owner's table."""
    for k in [k for k in sys.modules if k not in before]:
        v = sys.modules[k]
        if type(v) is Forwarder:
            continue
        top = k.partition(".")[0]
        if top in _managed or (owner is not BASE and top not in _SHARED):
            _managed.add(top)
            _adopt(owner, k, v)


# --- loading ----------------------------------------------------------------------


def load(owner: Owner, name: str) -> Any:
    """The owner's module called name (absolute), imported if needed."""
    m = owner.modules.get(name)
    if m is not None:
        return m
    with _lock:
        _harvest()
        depth = getattr(_tls, "depth", 0)
        before = set(sys.modules) if depth == 0 else set()
        _tls.depth = depth + 1
        try:
            m = _load_unlocked(owner, name)
        except BaseException:
            if depth == 0:
                _forget_unowned(name.partition(".")[0])
            raise
        finally:
            _tls.depth = depth
        if depth == 0:
            _sweep(owner, before)
        return owner.modules.get(name, m)


def _load_unlocked(owner: Owner, name: str) -> Any:
    m = owner.modules.get(name)
    if m is not None:
        return m
    if not _wants(owner, name):
        return _orig_import_module(name)
    placed = sys.modules.get(name)
    if (
        placed is not None
        and not isinstance(placed, Forwarder)
        and name.partition(".")[0] in _managed
    ):
        # Put there by module code of this load (torch registers the
        # submodules of torch._C so): it is the owner's.
        _adopt(owner, name, placed)
        return placed
    parent, _, child = name.rpartition(".")
    path = None
    if parent:
        pm = _load_unlocked(owner, parent)
        m = owner.modules.get(name)
        if m is not None:
            return m
        path = getattr(pm, "__path__", None)
        # Module objects made by C code as attributes (torch._C._nn), which
        # the package registers with sys.modules.setdefault: a forwarder of
        # another owner already stood there, so register them here.
        made = getattr(pm, child, None) if path is None else None
        if type(made) is ModuleType:
            _adopt(owner, name, made)
            return made
        if path is None:
            raise ModuleNotFoundError(
                f"No module named {name!r}; {parent!r} is not a package", name=name
            )
    spec = _bootstrap._find_spec(name, path)
    if spec is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    if type(spec.loader) is SourceFileLoader:
        spec.loader = _SharedCodeLoader(spec.loader.name, spec.loader.path)
    if owner.ctx is not None:
        if isinstance(spec.loader, ExtensionFileLoader):
            from vlcs._extension import ContextExtensionLoader

            spec.loader = ContextExtensionLoader(_loader_for(owner), spec.origin, owner.registries)
        elif str(spec.origin).endswith(tuple(EXTENSION_SUFFIXES)):
            _warn_shared(name, f"its loader {spec.loader!r} cannot load into a namespace")
    _manage(name.partition(".")[0])
    stack = _tls.__dict__.setdefault("loading", [])
    stack.append(owner)
    # While the module is created, its name is absent from sys.modules, as
    # in a plain import: C code of a PyInit that looks itself up
    # (PyImport_AddModule) must not reach another owner's copy.
    sys.modules.pop(name, None)
    hidden: dict[str, Any] = {}
    if owner.ctx is not None and type(spec.loader).__name__ == "ContextExtensionLoader":
        # Binding libraries make submodules with PyImport_AddModule
        # (pybind11's def_submodule: torch._C._onnx): hide other owners'
        # forwarders of the submodules too, and keep what the PyInit adds.
        prefix = name + "."
        hidden = {
            k: sys.modules.pop(k)
            for k in [k for k in sys.modules if k.startswith(prefix)]
            if type(sys.modules[k]) is Forwarder
        }
    try:
        try:
            module = _bootstrap.module_from_spec(spec)
        finally:
            for k, fw in hidden.items():
                made = sys.modules.get(k)
                if made is not None and made is not fw:
                    _adopt(owner, k, made)
                else:
                    sys.modules[k] = fw
        owner.modules[name] = module
        _owner_of[id(module.__dict__)] = owner
        # While it executes, the module is itself in sys.modules, as with
        # any import: code that reads sys.modules[__name__] (to wrap or
        # replace itself) or C code that adds attributes to it finds it.
        sys.modules[name] = module
        spec._initializing = True
        try:
            spec.loader.exec_module(module)
        finally:
            spec._initializing = False
            placed = sys.modules.get(name)
            if placed is not None and placed is not module and not isinstance(placed, Forwarder):
                _adopt(owner, name, placed)  # it replaced itself (a common idiom)
            else:
                sys.modules[name] = _forwarder(name)
            _harvest()
    except BaseException:
        dropped = owner.modules.pop(name, None)
        if dropped is not None:
            _owner_of.pop(id(getattr(dropped, "__dict__", None)), None)
        sys.modules[name] = _forwarder(name)  # _forget_unowned drops it if nobody has name
        raise
    finally:
        stack.pop()
    module = owner.modules[name]
    if owner is BASE:
        _register_base_extension(module)
    _rebind(owner, module)
    if parent:
        setattr(pm, child, module)
    return module


_code_cache: dict[str, Any] = {}


class _SharedCodeLoader(SourceFileLoader):
    """A source loader whose code objects (immutable) are read and
    unmarshalled once for all owners: each owner still executes the module
    afresh in its own namespace."""

    def get_code(self, fullname: str) -> Any:
        code = _code_cache.get(self.path)
        if code is None:
            code = _code_cache[self.path] = super().get_code(fullname)
        return code


def _loader_for(owner: Owner) -> Any:
    def load_into_context(path: str) -> Any:
        dll = owner.ctx._load_for_import(path)
        register_object(dll._handle, owner)
        return dll

    return load_into_context


def _rebind(owner: Owner, module: Any) -> None:
    """Replace forwarders in a freshly executed module's globals by the
    owner's modules: C-level imports (Cython's module-level ``import numpy
    as np``) read sys.modules and got forwarders; the module's code must not
    depend on who calls it later."""
    d = getattr(module, "__dict__", None)
    if d is None:
        return
    for k, v in list(d.items()):
        if type(v) is Forwarder:
            real = owner.modules.get(v.__dict__["__name__"])
            if real is not None:
                d[k] = real


# --- the three doors --------------------------------------------------------------


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
    if name in _handed:
        _harvest(name)
    caller = sys._getframe(1)
    if caller.f_globals is globals and caller.f_code.co_code[caller.f_lasti] == _IMPORT_NAME:
        # An import statement: the importing module decides.
        owner = _owner_of.get(id(globals)) or resolve(caller, native=False)
    else:
        # PyImport_Import from C passes whatever Python frame is innermost,
        # then reads sys.modules[name] itself.
        owner = resolve(caller)
        if owner is not BASE and level == 0 and name.partition(".")[0] in _managed:
            _handed[name] = owner
    if level == 0:
        if not _wants(owner, name):
            return _orig_import(name, globals, locals, fromlist, level)
        absname = name
    else:
        absname = _absolute(name, globals, level)
        if not _wants(owner, absname):
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
    owner = resolve(sys._getframe(1), native=False)
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
    if _wants(owner, absname):
        return load(owner, absname)
    return _orig_import_module(name, package)


def _find_and_load(name: str, import_: Any = None) -> Any:
    owner = resolve(sys._getframe(1))
    if _wants(owner, name):
        return load(owner, name)
    return _orig_find_and_load(name, import_)


def install(thread_owner: Any) -> None:
    """Turn import isolation on for the process (idempotent)."""
    global _installed, _thread_owner
    with _lock:
        _thread_owner = thread_owner
        if _installed:
            return
        _installed = True
        builtins.__import__ = _import
        importlib.import_module = _import_module
        _bootstrap._find_and_load = _find_and_load


def modules_of(owner: Owner) -> list[str]:
    return sorted(owner.modules)


def _warn_shared(name: str, why: str) -> None:
    warnings.warn(
        f"the native code of {name} stays shared with the base: {why}",
        RuntimeWarning,
        stacklevel=4,
    )

"""Loading a module for an owner: find its spec, create it (extension
modules into the owner's namespace), execute it, and roll back on failure,
as importlib's ``_load_unlocked`` does for a plain import.
"""

from __future__ import annotations

import importlib
import os
import sys
import warnings
from importlib.machinery import (
    EXTENSION_SUFFIXES,
    ExtensionFileLoader,
    ModuleSpec,
    SourceFileLoader,
    SourcelessFileLoader,
)
from types import ModuleType
from typing import Any

from vlcs._isolation import modtable as _modtable
from vlcs._isolation import owners as _owners
from vlcs._isolation.extension import ContextExtensionLoader
from vlcs._isolation.owners import BASE, Owner
from vlcs._lib import lib as _lib

_bootstrap: Any = sys.modules["_frozen_importlib"]
_orig_import_module = importlib.import_module  # before vlcs._isolation.imports replaces it
_orig_invalidate_caches = importlib.invalidate_caches

#: VLCS_TRACE=imports (a comma-separated list) prints each load, as python -v
#: does, and keeps vlcs's frames in tracebacks of failed imports
TRACE = "imports" in os.environ.get("VLCS_TRACE", "").split(",")


def _trace(msg: str) -> None:
    print(f"vlcs import: {msg}", file=sys.stderr, flush=True)


def load(owner: Owner, name: str) -> Any:
    """The context owner's module called name (absolute), imported if needed.
    A failed import leaves the owner's table as it was before."""
    m = owner.modules.get(name)
    if m is not None and not _initializing(m):
        return m
    # Being executed: by this thread (a circular import) it is answered as
    # it stands, once the lock is taken again; by another, the lock waits
    # for it to finish, as CPython's import waits on the module's lock.
    with _owners.lock:
        depth = getattr(_owners.tls, "depth", 0)
        before = dict(owner.modules) if depth == 0 else None
        _owners.tls.depth = depth + 1
        try:
            return _load_unlocked(owner, name)
        except BaseException:
            if before is not None:
                _forget_new(owner, before)
            raise
        finally:
            _owners.tls.depth = depth


def _initializing(module: Any) -> bool:
    """Whether module is still being executed (its spec says so)."""
    try:
        return bool(getattr(getattr(module, "__spec__", None), "_initializing", False))
    except Exception:
        return True  # the import decides, and says what is wrong


def _forget_new(owner: Owner, before: dict[str, Any]) -> None:
    for k in [k for k, v in owner.modules.items() if before.get(k) is not v]:
        _owners.drop(owner, k)
    for k, v in before.items():
        if k not in owner.modules:
            _owners.adopt(owner, k, v)


def _load_unlocked(owner: Owner, name: str) -> Any:
    m = owner.modules.get(name)
    if m is not None:
        return m
    if not _owners.wants(owner, name):
        return _orig_import_module(name)
    parent, _, child = name.rpartition(".")
    path = None
    if parent:
        pm = _load_unlocked(owner, parent)
        m = owner.modules.get(name)
        if m is not None:
            return m
        path = getattr(pm, "__path__", None)
        # Module objects made by C code as attributes (torch._C._nn), not
        # importable by name: the owner's, as the package's attribute says.
        made = getattr(pm, child, None) if path is None else None
        if type(made) is ModuleType:
            _owners.adopt(owner, name, made)
            return made
        if path is None:
            raise ModuleNotFoundError(
                f"No module named {name!r}; {parent!r} is not a package", name=name
            )
    spec = _find(owner, name, path)
    _owners.manage(name.partition(".")[0], dict.items(sys.modules))
    native = isinstance(spec.loader, ContextExtensionLoader)
    before = _modtable.storage_keys() if native else None
    try:
        with _owners.acting_for(owner):
            module = _create(owner, name, spec)
            _exec(owner, name, spec, module)
    except BaseException:
        _roll_back(owner, name)
        raise
    finally:
        if before is not None:
            _modtable.reclaim(owner, before)
    module = owner.modules[name]
    if parent:
        setattr(pm, child, module)
    if TRACE:
        _trace(f"{owner.label}: {name} from {spec.origin} ({_how(owner, spec)})")
    return module


def _how(owner: Owner, spec: ModuleSpec) -> str:
    if isinstance(spec.loader, ContextExtensionLoader):
        return "native code loaded into the context's namespace"
    if spec.origin in (None, "built-in", "frozen") or owner is BASE:
        return "the base's"
    return "executed afresh for the context"


# Specs found once, by module name and the path searched: a later owner
# importing the same module asks the file system nothing (on a cluster's
# parallel file system a stat costs about a millisecond, and numpy's import
# makes about 200).  Kept: files' specs (sources, bytecode, extension
# modules) as importlib found them (loader class, origin, package search
# locations, bytecode path), and, for other owners than the one that
# looked, modules found nowhere (numpy's optional _distributor_init_local):
# an owner that tries again after making the module (pyximport's way)
# searches again.  importlib.invalidate_caches() empties it.
_Found = tuple[Any, str, "list[str] | None", "str | None"]
_spec_cache: dict[tuple[str, tuple[str, ...]], _Found | int] = {}
_FILE_LOADERS = (SourceFileLoader, SourcelessFileLoader, ExtensionFileLoader)


def _found(owner: Owner, name: str, path: Any) -> ModuleSpec | None:
    """importlib's spec of name, or a new one like the one found before."""
    key = (name, tuple(sys.path if path is None else path))
    known = _spec_cache.get(key)
    if known is None or known == id(owner):
        spec = _bootstrap._find_spec(name, path)
        if spec is None:
            _spec_cache[key] = id(owner)
        elif type(spec.loader) in _FILE_LOADERS and spec.has_location:
            where = spec.submodule_search_locations
            _spec_cache[key] = (
                type(spec.loader),
                spec.origin,
                None if where is None else list(where),
                spec.cached,
            )
        return spec
    if isinstance(known, int):
        return None  # another owner found it nowhere
    kind, origin, where, cached = known
    spec = ModuleSpec(name, kind(name, origin), origin=origin, is_package=where is not None)
    if where is not None:
        spec.submodule_search_locations = list(where)
    spec.has_location = True
    spec.cached = cached
    return spec


def invalidate_caches() -> None:
    """importlib.invalidate_caches, which also forgets the specs kept here
    and where vlcs found the libraries of contexts' copies."""
    _spec_cache.clear()
    _lib().vlcs_invalidate_caches()
    _orig_invalidate_caches()


def _find(owner: Owner, name: str, path: Any) -> ModuleSpec:
    """The spec of name, with the loader the owner needs: source code read
    once for all owners, extension modules loaded into a context's namespace."""
    spec = _found(owner, name, path)
    if spec is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    if type(spec.loader) is SourceFileLoader:
        spec.loader = _SharedCodeLoader(spec.loader.name, spec.loader.path)
    if owner.ctx is not None:
        if isinstance(spec.loader, ExtensionFileLoader):
            spec.loader = ContextExtensionLoader(
                _loader_for(owner, name), spec.origin, owner.registries
            )
        elif str(spec.origin).endswith(tuple(EXTENSION_SUFFIXES)):
            _warn_shared(name, f"its loader {spec.loader!r} cannot load into a namespace")
    return spec


def _create(owner: Owner, name: str, spec: ModuleSpec) -> Any:
    """The module object, entered in the owner's table.  Entries C code
    makes meanwhile (PyImport_AddModule: pybind11's submodules) land in the
    owner's table through sys.modules, as in a plain import."""
    module = _bootstrap.module_from_spec(spec)
    _owners.adopt(owner, name, module)
    return module


def _exec(owner: Owner, name: str, spec: ModuleSpec, module: Any) -> None:
    spec._initializing = True
    try:
        spec.loader.exec_module(module)
    finally:
        spec._initializing = False
    placed = owner.modules.get(name)
    if placed is not None and placed is not module:
        _owners.adopt(owner, name, placed)  # it replaced itself in sys.modules (a common idiom)


def _roll_back(owner: Owner, name: str) -> None:
    """After a failed create or exec: the owner no longer has name."""
    _owners.drop(owner, name)
    if TRACE:
        _trace(f"{owner.label}: {name} failed, rolled back")


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


def _loader_for(owner: Owner, name: str) -> Any:
    def load_into_context(path: str) -> Any:
        native = owner.native
        dll = native.load_dll(path)
        native.give_state_dict()
        native.keep_native(name)
        _owners.register_object(dll._handle, owner)
        return dll

    return load_into_context


def _warn_shared(name: str, why: str) -> None:
    warnings.warn(
        f"the native code of {name} stays shared with the base: {why}",
        RuntimeWarning,
        stacklevel=4,
    )

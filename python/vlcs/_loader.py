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
)
from types import ModuleType
from typing import Any

from vlcs import _forwarders, _owners
from vlcs._extension import ContextExtensionLoader
from vlcs._forwarders import Forwarder, adopt, forwarder, harvest, sweep
from vlcs._owners import BASE, Owner

_bootstrap: Any = sys.modules["_frozen_importlib"]
_orig_import_module = importlib.import_module  # before vlcs._imports replaces it

#: VLCS_TRACE=imports (a comma-separated list) prints each load, as python -v
#: does, and keeps vlcs's frames in tracebacks of failed imports
TRACE = "imports" in os.environ.get("VLCS_TRACE", "").split(",")


def _trace(msg: str) -> None:
    print(f"vlcs import: {msg}", file=sys.stderr, flush=True)


def load(owner: Owner, name: str) -> Any:
    """The owner's module called name (absolute), imported if needed."""
    m = owner.modules.get(name)
    if m is not None:
        return m
    with _owners.lock:
        harvest()
        depth = getattr(_owners.tls, "depth", 0)
        before = set(sys.modules) if depth == 0 else set()
        _owners.tls.depth = depth + 1
        try:
            m = _load_unlocked(owner, name)
        except BaseException:
            if depth == 0:
                _forwarders.forget_unowned(name.partition(".")[0])
            raise
        finally:
            _owners.tls.depth = depth
        if depth == 0:
            sweep(owner, before)
        return owner.modules.get(name, m)


def _load_unlocked(owner: Owner, name: str) -> Any:
    m = owner.modules.get(name)
    if m is not None:
        return m
    if not _owners.wants(owner, name):
        return _orig_import_module(name)
    placed = sys.modules.get(name)
    if (
        placed is not None
        and not isinstance(placed, Forwarder)
        and name.partition(".")[0] in _owners.managed
    ):
        # Put there by module code of this load (torch registers the
        # submodules of torch._C so): it is the owner's.
        adopt(owner, name, placed)
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
            adopt(owner, name, made)
            return made
        if path is None:
            raise ModuleNotFoundError(
                f"No module named {name!r}; {parent!r} is not a package", name=name
            )
    spec = _find(owner, name, path)
    _forwarders.manage(name.partition(".")[0])
    stack = _owners.tls.__dict__.setdefault("loading", [])
    stack.append(owner)
    try:
        module = _create(owner, name, spec)
        _exec(owner, name, spec, module)
    except BaseException:
        _roll_back(owner, name)
        raise
    finally:
        stack.pop()
    module = owner.modules[name]
    if owner is BASE:
        _owners.register_base_extension(module)
    _rebind(owner, module)
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


def _find(owner: Owner, name: str, path: Any) -> ModuleSpec:
    """The spec of name, with the loader the owner needs: source code read
    once for all owners, extension modules loaded into a context's namespace."""
    spec = _bootstrap._find_spec(name, path)
    if spec is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    if type(spec.loader) is SourceFileLoader:
        spec.loader = _SharedCodeLoader(spec.loader.name, spec.loader.path)
    if owner.ctx is not None:
        if isinstance(spec.loader, ExtensionFileLoader):
            spec.loader = ContextExtensionLoader(_loader_for(owner), spec.origin, owner.registries)
        elif str(spec.origin).endswith(tuple(EXTENSION_SUFFIXES)):
            _warn_shared(name, f"its loader {spec.loader!r} cannot load into a namespace")
    return spec


def _create(owner: Owner, name: str, spec: ModuleSpec) -> Any:
    """The module object, entered in the owner's table."""
    # While the module is created, its name is absent from sys.modules, as
    # in a plain import: C code of a PyInit that looks itself up
    # (PyImport_AddModule) must not reach another owner's copy.
    sys.modules.pop(name, None)
    hidden: dict[str, Any] = {}
    if owner.ctx is not None and isinstance(spec.loader, ContextExtensionLoader):
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
        module = _bootstrap.module_from_spec(spec)
    finally:
        for k, fw in hidden.items():
            made = sys.modules.get(k)
            if made is not None and made is not fw:
                adopt(owner, k, made)
            else:
                sys.modules[k] = fw
    owner.modules[name] = module
    _owners.owner_of[id(module.__dict__)] = owner
    return module


def _exec(owner: Owner, name: str, spec: ModuleSpec, module: Any) -> None:
    # While it executes, the module is itself in sys.modules, as with any
    # import: code that reads sys.modules[__name__] (to wrap or replace
    # itself) or C code that adds attributes to it finds it.
    sys.modules[name] = module
    spec._initializing = True
    try:
        spec.loader.exec_module(module)
    finally:
        spec._initializing = False
        placed = sys.modules.get(name)
        if placed is not None and placed is not module and not isinstance(placed, Forwarder):
            adopt(owner, name, placed)  # it replaced itself (a common idiom)
        else:
            sys.modules[name] = forwarder(name)
        harvest()


def _roll_back(owner: Owner, name: str) -> None:
    """After a failed create or exec: the owner no longer has name."""
    dropped = owner.modules.pop(name, None)
    if dropped is not None:
        _owners.owner_of.pop(id(getattr(dropped, "__dict__", None)), None)
    sys.modules[name] = forwarder(name)  # forget_unowned drops it if nobody has name
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


def _loader_for(owner: Owner) -> Any:
    def load_into_context(path: str) -> Any:
        dll = owner.ctx._load(path)
        _owners.register_object(dll._handle, owner)
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


def _warn_shared(name: str, why: str) -> None:
    warnings.warn(
        f"the native code of {name} stays shared with the base: {why}",
        RuntimeWarning,
        stacklevel=4,
    )


_forwarders.load = load

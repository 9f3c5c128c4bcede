"""Forwarders: what ``sys.modules`` holds for a privatised name.

C code reads ``sys.modules`` directly (Cython's import helpers,
``PyImport_ImportModule``), and ``PyImport_Import`` reads it after importing,
so some entry under the plain name must exist.  A forwarder resolves each
attribute access through the owner rules (:mod:`vlcs._owners`) and forwards
to that owner's module.  This module also moves modules between
``sys.modules`` and the owners' tables.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

from vlcs import _owners
from vlcs._owners import BASE, Owner, resolve


def load(owner: Owner, name: str) -> Any:
    """The owner's module called name, imported if needed: vlcs._loader.load,
    put here when vlcs._loader is imported (it imports this module, and
    forwarders import on a miss)."""
    raise RuntimeError("vlcs._loader is not imported")


_forwarders: dict[str, Forwarder] = {}  # one per name, so identity is stable


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

    def __getattribute__(self, attr: str) -> Any:
        # Names this class defines (__repr__, __doc__, __getattr__, ...) would
        # hide the module's own: numpy's C code reads numpy._core._dtype's
        # __repr__ through sys.modules and got the forwarder's bound method
        # ("expected 0 arguments, got 1" for str(np.dtype(...)), in the base
        # too).  The owner's module answers them when it defines them.
        if attr in _CLASS_DUNDERS:
            d = object.__getattribute__(self, "__dict__")
            if attr not in d:
                m = resolve(sys._getframe(1)).modules.get(d["__name__"])
                md = getattr(m, "__dict__", None)
                if md is not None and attr in md:
                    return md[attr]
        return object.__getattribute__(self, attr)

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
                adopt(owner, name, m)
                handed[name] = owner
        setattr(m, attr, unwrap(owner, value))

    def __delattr__(self, attr: str) -> None:
        delattr(self._target(sys._getframe(1)), attr)

    def __dir__(self) -> Iterable[str]:
        return dir(self._target(sys._getframe(1)))

    def __repr__(self) -> str:
        return f"<vlcs forwarder of module {self.__dict__['__name__']!r}>"


_CLASS_DUNDERS = frozenset(n for n in dir(Forwarder) if n.startswith("__") and n.endswith("__")) - {
    "__dict__",
    "__class__",
}


# C code that got a forwarder from PyImport_ImportModule may write into its
# dict directly (PyModule_AddObject: torch adds its dtypes to "torch" so);
# those entries belong to the owner the forwarder was handed out for.
handed: dict[str, Owner] = {}


def harvest(only: str | None = None) -> None:
    items = list(handed.items()) if only is None else [(only, handed[only])]
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


def unwrap(owner: Owner, value: Any) -> Any:
    if isinstance(value, Forwarder):
        name = value.__dict__["__name__"]
        return owner.modules.get(name) or load(owner, name)
    return value


def manage(top: str) -> None:
    """Put forwarders in sys.modules for top and its submodules; modules the
    base imported before move to the base's table."""
    if top in _owners.managed:
        return
    _owners.managed.add(top)
    prefix = top + "."
    for k, v in list(sys.modules.items()):
        if (k == top or k.startswith(prefix)) and type(v) is not Forwarder:
            adopt(BASE, k, v)


def adopt(owner: Owner, name: str, module: Any) -> None:
    if module is not None:
        owner.modules[name] = module
        d = getattr(module, "__dict__", None)
        if d is not None:
            _owners.owner_of[id(d)] = owner
        if owner is BASE:
            _owners.register_base_extension(module)
    sys.modules[name] = forwarder(name)


def forwarder(name: str) -> Forwarder:
    fw = _forwarders.get(name)
    if fw is None:
        fw = _forwarders[name] = Forwarder(name)
    return fw


def forget_unowned(top: str) -> None:
    """After a failed import: drop the forwarders of a package nobody owns,
    so sys.modules is what it was."""
    prefix = top + "."
    owners = [BASE] + [o for o in _owners.all_owners()]
    if any(k == top or k.startswith(prefix) for o in owners for k in o.modules):
        return
    _owners.managed.discard(top)
    for k in [k for k in sys.modules if k == top or k.startswith(prefix)]:
        if isinstance(sys.modules[k], Forwarder):
            del sys.modules[k]
            _forwarders.pop(k, None)


def sweep(owner: Owner, before: set[str]) -> None:
    """Move entries module code put into sys.modules itself (aliases,
    modules that replace themselves) into the owner's table."""
    for k in [k for k in sys.modules if k not in before]:
        v = sys.modules[k]
        if type(v) is Forwarder:
            continue
        top = k.partition(".")[0]
        if top in _owners.managed or (owner is not BASE and top not in _owners._SHARED):
            _owners.managed.add(top)
            adopt(owner, k, v)

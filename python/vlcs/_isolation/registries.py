"""Registries of the shared standard library that packages fill by name,
kept apart per owner.

A package imported into a context runs its module code again, and some of
that code registers itself *by name* in a registry of the standard library,
which all owners share.  loky (joblib's process pool) puts its start methods
into multiprocessing's table of contexts under "loky": a context that
imports scikit-learn would replace the base's entry with its own copy's, and
the base's next ``n_jobs=2`` would start its worker processes with the
context's code (and fail: "cannot pickle 'weakref.ReferenceType' object").

Each such registry is replaced by an :class:`OwnedDict`: the base's entries
are the dict's own storage, so base code, and C code reading it as a dict,
see exactly what they would without vlcs; an entry a context writes goes to
that context's layer, which its lookups read first.
"""

from __future__ import annotations

import sys
import weakref
from typing import Any

from vlcs._after_import import when_imported
from vlcs._isolation import owners as _owners
from vlcs._isolation.owners import BASE

_MISSING = object()


def _owner() -> _owners.Owner:
    # the caller of the dict method, then outwards (multiprocessing's own
    # frames belong to no owner; the package's that called it do)
    return _owners.resolve(sys._getframe(2), native=False)


class OwnedDict(dict):  # type: ignore[type-arg]
    """A dict whose writes by a context's code stay that context's."""

    def __init__(self, base: dict[Any, Any]) -> None:
        super().__init__(base)
        self._layers: weakref.WeakKeyDictionary[_owners.Owner, dict[Any, Any]] = (
            weakref.WeakKeyDictionary()
        )

    def _layer(self, create: bool = False) -> dict[Any, Any] | None:
        owner = _owner()
        if owner is BASE:
            return None
        layer = self._layers.get(owner)
        if layer is None and create:
            layer = self._layers[owner] = {}
        return layer

    def __getitem__(self, key: Any) -> Any:
        layer = self._layer()
        if layer is not None and key in layer:
            return layer[key]
        return dict.__getitem__(self, key)

    def get(self, key: Any, default: Any = None) -> Any:
        layer = self._layer()
        if layer is not None and key in layer:
            return layer[key]
        return dict.get(self, key, default)

    def __contains__(self, key: Any) -> bool:
        layer = self._layer()
        return (layer is not None and key in layer) or dict.__contains__(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        layer = self._layer(create=True)
        if layer is None:
            dict.__setitem__(self, key, value)
        else:
            layer[key] = value

    def __delitem__(self, key: Any) -> None:
        layer = self._layer()
        if layer is not None and key in layer:
            del layer[key]
        else:
            dict.__delitem__(self, key)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]


def _own(module: Any, name: str) -> None:
    table = getattr(module, name, None)
    if isinstance(table, dict) and not isinstance(table, OwnedDict):
        setattr(module, name, OwnedDict(table))


def install() -> None:
    """Replace the known registries (the first context does it), now or
    when their modules are imported."""
    when_imported("multiprocessing.context", lambda m: _own(m, "_concrete_contexts"))

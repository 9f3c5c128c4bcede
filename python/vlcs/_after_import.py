"""Running code right after a module of someone else's is first imported
(joblib: registering the "vlcs" backend; multiprocessing: keeping its
registry of start methods apart per context), without importing it first:
`import vlcs` stays cheap for programs that never import it.

>>> import sys
>>> from vlcs._after_import import when_imported
>>> seen = []
>>> when_imported("colorsys", lambda m: seen.append(m.__name__))
>>> _ = sys.modules.pop("colorsys", None)
>>> import colorsys
>>> seen
['colorsys']
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable

TYPE_CHECKING = False  # typing is not imported at run time (see vlcs/__init__.py)
if TYPE_CHECKING:
    from typing import Any

Callback = Callable[[object], None]  # given the module

_lock = threading.Lock()
_waiting: dict[str, list[Callback]] = {}


def when_imported(name: str, callback: Callback) -> None:
    """callback(module) now if module `name` is imported, else once right
    after it is (its own loader executes it first; the module keeps it)."""
    module = sys.modules.get(name)
    if module is not None:
        callback(module)
        return
    with _lock:
        _waiting.setdefault(name, []).append(callback)
        if not any(isinstance(f, _Finder) for f in sys.meta_path):
            sys.meta_path.insert(0, _Finder())


# The import system asks finders and loaders for their methods only: the
# classes of importlib.abc would cost `import vlcs` importlib.resources and
# tempfile for nothing.


class _Loader:
    """The module's own loader, then the callbacks; the module keeps its own
    loader (``__loader__``, ``__spec__.loader``)."""

    def __init__(self, loader: Any, name: str) -> None:
        self.loader = loader
        self.name = name

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        module.__loader__ = module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        with _lock:
            callbacks = _waiting.pop(self.name, [])
        for callback in callbacks:
            try:
                callback(module)
            except Exception as e:  # a version vlcs does not know: the module unharmed
                print(f"vlcs: after importing {self.name}: {e}", file=sys.stderr)


class _Finder:
    """Finds nothing itself: wraps the loader of a waited-for module's spec."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name not in _waiting:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        if hasattr(spec.loader, "exec_module"):
            spec.loader = _Loader(spec.loader, name)
        return spec

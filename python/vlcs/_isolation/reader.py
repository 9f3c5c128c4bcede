"""The module table's reader in C (``_fast``), or why this Python has none.

``_fast`` reads CPython's frames, whose layout changes with each minor
version: it is built only for the versions it knows (CMakeLists.txt).  On
any other, vlcs installs without it; C contexts, ``vlcs exec`` and the
CLI work, and an import inside a context raises
UnsupportedPlatformError (see ``guard_imports``) instead of giving the
base's module silently.
"""

from __future__ import annotations

import builtins
import importlib
import sys
from collections.abc import Callable
from typing import Any

from vlcs._errors import UnsupportedPlatformError

# The CPython versions whose frames the reader knows (src/python/fast_frames.c).
SUPPORTED = ((3, 10), (3, 11), (3, 12), (3, 13))


def why_missing(version: tuple[int, int], error: str) -> str:
    """The sentence an import inside a context raises without the reader."""
    shown = f"{version[0]}.{version[1]}"
    first, last = SUPPORTED[0], SUPPORTED[-1]
    supported = f"{first[0]}.{first[1]}-{last[0]}.{last[1]}"
    if version not in SUPPORTED:
        return (
            f"imports inside a context are not supported on CPython {shown} yet (vlcs supports "
            f"{supported}); C contexts, vlcs exec and the CLI work: use CPython {supported} to "
            "import packages into contexts"
        )
    return (
        f"vlcs was installed without its module-table reader (vlcs._isolation._fast: {error}), "
        f"which imports inside a context need on CPython {shown}: reinstall vlcs "
        "(pip install --force-reinstall vlcs)"
    )


# What the Python half tells the reader of owners and names: with no reader
# there is no one to tell.  decided, a question, then answers None: ask the
# owner rules.
_NOTICES = frozenset(
    {"names_changed", "own", "disown", "set_natives", "context", "base_module", "decided"}
)


class _Missing:
    """Stands in for ``_fast`` where it was not built: notices to it are
    dropped, and anything that needs it raises UnsupportedPlatformError."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __getattr__(self, name: str) -> Any:
        reason = self.reason

        def unavailable(*args: Any, **kwargs: Any) -> Any:
            raise UnsupportedPlatformError(reason)

        return (lambda *args, **kwargs: None) if name in _NOTICES else unavailable


try:
    from vlcs._isolation import _fast as fast
except ImportError as e:
    fast = _Missing(why_missing(sys.version_info[:2], str(e)))
    MISSING: str | None = fast.reason
else:
    MISSING = None


def guard_imports(in_context: Callable[[], bool]) -> None:
    """Without the reader: an import made inside a context, by an import
    statement or ``importlib.import_module``, raises UnsupportedPlatformError
    (the base's imports are CPython's, one call later).  Idempotent."""
    if MISSING is None or getattr(builtins.__import__, "_vlcs_guard", False):
        return
    reason = MISSING

    def guarded(original: Callable[..., Any]) -> Callable[..., Any]:
        def guard(name: str, *args: Any, **kwargs: Any) -> Any:
            if in_context():
                raise UnsupportedPlatformError(reason)
            return original(name, *args, **kwargs)

        guard.__name__ = original.__name__
        guard._vlcs_guard = True  # type: ignore[attr-defined]
        return guard

    builtins.__import__ = guarded(builtins.__import__)
    importlib.import_module = guarded(importlib.import_module)

"""``vlcs check PKG...``: does a package work in contexts? Run it before adopting vlcs.

Each package is checked in a fresh interpreter (a child process running this
file with ``--child``), so that a crash in it is a report, not the end of
the command.  The child:

1. creates two contexts, ``a`` (the first allowed CPU) and ``b`` (the second,
   or the first again on a 1-CPU machine), imports the package in both at
   once (``ctx.submit(importlib.import_module, pkg)``), then in the base;
2. finds the package's submodules without importing them (``pkgutil``,
   breadth first, tests/conftest/setup/``__main__`` left out, 200 at most),
   imports them in both contexts at once, then in the base; a submodule that
   fails in the base too is not vlcs's failure and is skipped;
3. checks that every copy is private (the contexts' modules are other objects
   than the base's, with other ``__dict__``) and that every extension module
   a context imported lies in the context's linker namespace
   (``ctx.libraries()``);
4. runs a small deterministic smoke test for well-known packages
   (:data:`SMOKE`) in both contexts at once and in the base: the results
   must be equal.

The parent classifies what broke from the child's result and stderr
("undefined symbol" -> a library the extension assumes is loaded,
"incompatible function arguments"/"generic_type" -> a binding registry
shared between copies, a signal -> a crash), and where the package works in
the base but not in contexts, re-runs the child with ``vlcs.share(...)`` to
say whether keeping it shared is a fix.

>>> from vlcs.check import check_packages
>>> [r["ok"] for r in check_packages(["json"], progress=False)]   # doctest: +SKIP
[True]

From the shell::

    vlcs check numpy scipy --json --timeout 120
"""

from __future__ import annotations

from vlcs.check.child import child
from vlcs.check.packages import MAX_SUBMODULES, PIP_NAMES, installed, pip_name
from vlcs.check.runner import (
    DEFAULT_TIMEOUT,
    check_package,
    check_packages,
    format_entry,
    main,
    run,
)
from vlcs.check.smoke import SMOKE

__all__ = [
    "DEFAULT_TIMEOUT",
    "MAX_SUBMODULES",
    "PIP_NAMES",
    "SMOKE",
    "check_package",
    "check_packages",
    "child",
    "format_entry",
    "installed",
    "main",
    "pip_name",
    "run",
]

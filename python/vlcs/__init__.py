"""vlcs: Virtual Library Contexts for Linux.

This package ships the native runtime (``libvlcs.so``, its headers, the
``vlcs-run`` launcher), the ``vlcs`` command and the Python API for contexts
(``vlcs.VLC``): ``with ctx: import numpy`` gives ctx a private numpy.

>>> import vlcs
>>> vlcs.__version__
'0.1.0'
>>> (vlcs.native_dir() / "libvlcs.so").exists()
True
"""

from __future__ import annotations

from vlcs._paths import include_dir, library_path, native_dir, program_path
from vlcs._pools import joblib_backend as _joblib
from vlcs._version import __version__

# typing is imported by type checkers only: at run time it is a tenth of
# `vlcs exec`'s start-up, and the modules `import vlcs` and `vlcs exec`
# load name it under this guard too.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from vlcs._context import VLC, Context, NamespaceKeptWarning, current, info, progress
    from vlcs._errors import (
        ContextBusyError,
        ContextDestroyedError,
        ContextFaultError,
        Errcode,
        InvalidArgumentError,
        LibraryNotFoundError,
        Limit,
        UnsupportedPlatformError,
        VlcsError,
        VlcsLimitError,
    )
    from vlcs._exec import exec_instances
    from vlcs._isolation.imports import share
    from vlcs._isolation.threads import base_thread
    from vlcs._lib import (
        auto_service,
        auto_services,
        init,
        node_ledger,
        room,
        service,
        strict_active,
    )
    from vlcs._pools.executor import BrokenContextPool, ContextPoolExecutor
    from vlcs._pools.pool import ContextPool
    from vlcs._pools.reusable import get_reusable_executor
    from vlcs._trace import trace
    from vlcs._tune import Task, TuneError, tune
    from vlcs.libraries import LibraryController, register

_joblib.install()  # joblib's backend "vlcs", now or when joblib is imported

# Everything else is imported at first use: contexts bring ctypes, the
# import machinery and the Python runtimes, the pools
# concurrent.futures.process (multiprocessing, tempfile, ...), the tuner
# statistics and hashlib, the errors enum; `vlcs exec`, `vlcs --help` and a
# script that only reads vlcs.__version__ need none of them.
_LAZY = {
    "ContextBusyError": "vlcs._errors",
    "ContextDestroyedError": "vlcs._errors",
    "ContextFaultError": "vlcs._errors",
    "Errcode": "vlcs._errors",
    "InvalidArgumentError": "vlcs._errors",
    "LibraryNotFoundError": "vlcs._errors",
    "Limit": "vlcs._errors",
    "UnsupportedPlatformError": "vlcs._errors",
    "VlcsError": "vlcs._errors",
    "VlcsLimitError": "vlcs._errors",
    "VLC": "vlcs._context",
    "Context": "vlcs._context",
    "NamespaceKeptWarning": "vlcs._context",
    "current": "vlcs._context",
    "info": "vlcs._context",
    "progress": "vlcs._context",
    "exec_instances": "vlcs._exec",
    "share": "vlcs._isolation.imports",
    "base_thread": "vlcs._isolation.threads",
    "auto_service": "vlcs._lib",
    "auto_services": "vlcs._lib",
    "init": "vlcs._lib",
    "node_ledger": "vlcs._lib",
    "room": "vlcs._lib",
    "service": "vlcs._lib",
    "strict_active": "vlcs._lib",
    "trace": "vlcs._trace",
    "LibraryController": "vlcs.libraries",
    "register": "vlcs.libraries",
    "BrokenContextPool": "vlcs._pools.executor",
    "ContextPoolExecutor": "vlcs._pools.executor",
    "ContextPool": "vlcs._pools.pool",
    "get_reusable_executor": "vlcs._pools.reusable",
    "Task": "vlcs._tune",
    "TuneError": "vlcs._tune",
    "tune": "vlcs._tune",
}


def __getattr__(name: str) -> Any:
    import importlib

    module = _LAZY.get(name)
    if module is None:
        # a submodule (vlcs.shim, vlcs._lib...), each at first use as well
        if name.startswith("__"):
            raise AttributeError(f"module 'vlcs' has no attribute {name!r}")
        try:
            return importlib.import_module(f"vlcs.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"vlcs.{name}":
                raise
            raise AttributeError(f"module 'vlcs' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "VLC",
    "BrokenContextPool",
    "Context",
    "ContextBusyError",
    "ContextDestroyedError",
    "ContextFaultError",
    "ContextPool",
    "ContextPoolExecutor",
    "Task",
    "TuneError",
    "Errcode",
    "InvalidArgumentError",
    "LibraryController",
    "LibraryNotFoundError",
    "Limit",
    "NamespaceKeptWarning",
    "UnsupportedPlatformError",
    "VlcsError",
    "VlcsLimitError",
    "current",
    "exec_instances",
    "get_reusable_executor",
    "info",
    "progress",
    "__version__",
    "auto_service",
    "auto_services",
    "room",
    "base_thread",
    "include_dir",
    "init",
    "library_path",
    "native_dir",
    "node_ledger",
    "program_path",
    "register",
    "service",
    "share",
    "strict_active",
    "trace",
    "tune",
]

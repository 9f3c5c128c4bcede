"""Where the native parts of vlcs are installed."""

from __future__ import annotations

import os

from vlcs._version import __version__

TYPE_CHECKING = False  # typing is not imported at run time (see vlcs/__init__.py)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

# a str, not a Path: pathlib (and urllib.parse with it) is imported when a
# path is asked for, not by ``import vlcs``
_NATIVE = os.path.join(os.path.dirname(os.path.realpath(__file__)), "_native")


def native_dir() -> Path:
    """Folder holding libvlcs.so, libvlcs_interpose.so and the programs.

    >>> native_dir().name
    '_native'
    """
    from pathlib import Path

    return Path(_NATIVE)


def library_file() -> str:
    """libvlcs.so's path as a str, without importing pathlib (vlcs's import
    loads the library)."""
    return os.path.join(_NATIVE, "libvlcs.so")


def library_path() -> Path:
    """Path of libvlcs.so."""
    from pathlib import Path

    return Path(library_file())


def include_dir() -> Path:
    """Folder with vlcs.h and vlcs.hpp."""
    return native_dir() / "include"


def program_path(name: str) -> Path:
    """Path of a native program shipped with vlcs (``vlcs-run``, ...).

    Raises FileNotFoundError with the folder searched when it is missing.
    """
    from pathlib import Path

    return Path(program_file(name))


def program_file(name: str) -> str:
    """program_path's path as a str, without importing pathlib."""
    path = os.path.join(_NATIVE, name)
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"{name} is not installed in {_NATIVE}; reinstall vlcs (pip install .)"
        )
    return path


def install_info() -> dict[str, Any]:
    """What is installed where, and what this machine offers (``vlcs info``).

    >>> install_info()["library"].endswith("libvlcs.so")
    True
    """
    import platform  # here: its import costs vlcs's own import 2 ms

    tunables = os.environ.get("GLIBC_TUNABLES", "")
    name, version = platform.libc_ver()
    return {
        "version": __version__,
        "native_dir": str(native_dir()),
        "include_dir": str(include_dir()),
        "library": str(library_path()),
        "launcher": os.path.join(_NATIVE, "vlcs-run"),
        "cpus_usable": sorted(os.sched_getaffinity(0)),
        "glibc": f"{name} {version}".strip(),
        "python": platform.python_version(),
        **_python_support(),
        "glibc_tunables": tunables,
        "many_contexts_enabled": "glibc.rtld.nns" in tunables,
    }


def _python_support() -> dict[str, str]:
    """Where this Python's C API lives, what own runtimes start from, and
    whether imports work inside contexts: each a line, or why not."""
    from vlcs._interpreter import report
    from vlcs._isolation.reader import MISSING

    r = report()
    own = r.get("own_runtime_library")
    return {
        "python_c_api": f"{r['linkage']}: {r['path']}"
        if r["linkage"]
        else f"unusable: {r['error']}",
        "python_own_runtimes": own or f"unavailable: {r.get('own_runtime_error', r.get('error'))}",
        "python_imports_in_contexts": "yes" if MISSING is None else f"no: {MISSING}",
    }

"""Where the native parts of vlcs are installed."""

from __future__ import annotations

from pathlib import Path

_NATIVE = Path(__file__).resolve().parent / "_native"


def native_dir() -> Path:
    """Folder holding libvlcs.so, libvlcs_interpose.so and the programs.

    >>> native_dir().name
    '_native'
    """
    return _NATIVE


def library_path() -> Path:
    """Path of libvlcs.so."""
    return _NATIVE / "libvlcs.so"


def include_dir() -> Path:
    """Folder with vlcs.h and vlcs.hpp."""
    return _NATIVE / "include"


def program_path(name: str) -> Path:
    """Path of a native program shipped with vlcs (``vlcs-run``, ...).

    Raises FileNotFoundError with the folder searched when it is missing.
    """
    path = _NATIVE / name
    if not path.exists():
        raise FileNotFoundError(
            f"{name} is not installed in {_NATIVE}; reinstall vlcs (pip install .)"
        )
    return path

"""Where this interpreter's C API lives, read from the running process.

Contexts need the C API of the interpreter that runs them: their extension
modules bind to it through a forwarder named libpython3.X.so.1.0 (see
``vlcs._isolation.extension``), and a Python of a context's own
(``python="own"``) starts from a shared libpython of the same version.

sysconfig says how CPython was configured, not how the running executable
was linked: Debian and Ubuntu build CPython twice, so their sysconfig says
``Py_ENABLE_SHARED=1`` while ``/usr/bin/python3`` carries libpython inside
itself; conda's and python-build-standalone's (uv's) executables do the
same.  Loading the shipped ``.so`` beside such an executable makes a second
CPython runtime in the process.  So the object that defines
``Py_IsInitialized`` - as the dynamic linker resolves it for extension
modules - is looked up in the process's own memory map: a libpython file
(shared), or the executable itself (static).  sysconfig only supplies names
to look for.

>>> import vlcs
>>> vlcs.info()["python"]["linkage"] in ("shared", "static")
True
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
import sysconfig
from typing import Any, NamedTuple

from vlcs._errors import UnsupportedPlatformError, VlcsError

# Names the C API exports (libpython's whole .dynsym): what a forwarder of
# the executable carries, leaving out the C library's data the executable
# holds by copy relocation (stdout, environ), which are each context's own.
C_API_PREFIXES = "Py,_Py"

# Data of the C API that extension modules read: an executable that exports
# functions but not these cannot stand in for libpython.
_DATA = ("_Py_NoneStruct", "PyExc_TypeError", "PyLong_Type")


class CApi(NamedTuple):
    """Where the running interpreter's C API is, and why vlcs thinks so."""

    linkage: str  # "shared": a libpython file; "static": the executable itself
    path: str  # the file that defines it, as the process maps it
    soname: str  # what extension modules and contexts call it
    executable: str
    why: str

    def as_dict(self) -> dict[str, Any]:
        return dict(self._asdict())


def ldversion() -> str:
    """The version part of libpython's name: "3.11", "3.13t", "3.12d"."""
    return sysconfig.get_config_var("LDVERSION") or (
        f"{sys.version_info.major}.{sys.version_info.minor}{getattr(sys, 'abiflags', '')}"
    )


def c_api_soname() -> str:
    """libpython's soname as CPython's build writes it, whatever its linking."""
    return f"libpython{ldversion()}.so.1.0"


def _mapped_file(address: int) -> str | None:
    """The file mapped at address in this process, from /proc/self/maps."""
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split(maxsplit=5)
            lo, _, hi = fields[0].partition("-")
            if int(lo, 16) <= address < int(hi, 16):
                path = fields[5].strip() if len(fields) > 5 else ""
                return path if path.startswith("/") else None
    return None


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


# The process's global scope, as extension modules see it (a handle of
# vlcs's own: what is looked up here is not cached on ctypes.pythonapi).
_program = ctypes.PyDLL(None)


def _exported(name: str) -> bool:
    """Whether the process's global scope has name."""
    try:
        getattr(_program, name)
    except AttributeError:
        return False
    return True


@functools.cache
def c_api() -> CApi:
    """The object that holds this interpreter's C API, found in the process.

    Raises UnsupportedPlatformError, in one sentence, when nothing in the
    process exports it as extension modules need (an embedding program
    linked without -export-dynamic).
    """
    exe = os.path.realpath("/proc/self/exe")
    missing = [n for n in ("Py_IsInitialized", *_DATA) if not _exported(n)]
    if missing:
        raise UnsupportedPlatformError(
            f"this program ({exe}) does not export CPython's C API ({', '.join(missing)} "
            "missing from its dynamic symbols), so contexts cannot share it; run vlcs under a "
            "python executable, or link the program with -Xlinker -export-dynamic"
        )
    address = ctypes.cast(_program.Py_IsInitialized, ctypes.c_void_p).value or 0
    path = _mapped_file(address)
    if path is None:
        raise UnsupportedPlatformError(
            f"the C API of this Python ({exe}) is at {address:#x}, in no file this process "
            "maps, so contexts cannot share it; run vlcs under an installed python executable"
        )
    if _same_file(path, "/proc/self/exe"):
        return CApi(
            "static",
            path,
            c_api_soname(),
            exe,
            f"{exe} defines Py_IsInitialized itself: libpython is linked into the executable "
            "(Debian's, Ubuntu's, conda's and uv's pythons are built so); contexts bind to the "
            "C API it exports",
        )
    return CApi(
        "shared",
        os.path.realpath(path),
        os.path.basename(path),
        exe,
        f"Py_IsInitialized is defined by {path}, which this process loaded; contexts bind "
        "to that libpython",
    )


def _runtime_candidates() -> list[str]:
    """Where a distribution puts the shared libpython beside a static
    executable: sysconfig's LIBDIR (Debian's multiarch directory), the
    installation's own lib/ (conda, python-build-standalone, whose LIBDIR
    is the build machine's), each with CPython's names for it."""
    names = []
    inst = sysconfig.get_config_var("INSTSONAME") or ""
    if ".so" in inst:
        names.append(inst)
    names += [c_api_soname(), f"libpython{ldversion()}.so"]
    dirs = []
    libdir = sysconfig.get_config_var("LIBDIR")
    if libdir:
        dirs.append(libdir)
    installed = os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))
    for prefix in (sys.base_prefix, installed):
        dirs.append(os.path.join(prefix, "lib"))
        multiarch = sysconfig.get_config_var("MULTIARCH")
        if multiarch:
            dirs.append(os.path.join(prefix, "lib", multiarch))
    out: list[str] = []
    for d in dirs:
        for n in dict.fromkeys(names):
            p = os.path.join(d, n)
            if p not in out:
                out.append(p)
    return out


def _is_elf_library(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            head = f.read(18)
    except OSError:
        return False
    # ELF, ET_DYN (a linker script named libpythonX.so would not load)
    return head[:4] == b"\x7fELF" and int.from_bytes(head[16:18], "little") == 3


@functools.cache
def runtime_library() -> str:
    """The shared libpython a Python of a context's own is a copy of.

    The loaded libpython where the interpreter is shared; where it is
    static, the one its distribution ships beside it, of the same version
    (Debian's libpython3.X package, conda's and uv's lib/).  Never the
    executable: a runtime is never the host's own code.  Raises
    UnsupportedPlatformError naming what to install when there is none.
    """
    api = c_api()
    if api.linkage == "shared":
        return api.path
    candidates = _runtime_candidates()
    for path in candidates:
        if _is_elf_library(path):
            return os.path.realpath(path)
    version = ldversion()
    dirs = ", ".join(dict.fromkeys(os.path.dirname(p) for p in candidates))
    raise UnsupportedPlatformError(
        f"python='own' needs the shared libpython{version} beside {api.executable}, which "
        f"carries libpython inside itself, and there is none in {dirs}: install it (Debian "
        f"and Ubuntu: apt install libpython{version}; conda and uv ship lib/"
        f"libpython{version}.so.1.0 with the interpreter), or use a Python built with "
        "--enable-shared"
    )


def report() -> dict[str, Any]:
    """c_api() as a dict, with the library own runtimes start from; in
    place of either, why it cannot be had (vlcs.info, vlcs info)."""
    try:
        out: dict[str, Any] = c_api().as_dict()
    except VlcsError as e:
        return {"linkage": None, "error": str(e)}
    try:
        out["own_runtime_library"] = runtime_library()
    except VlcsError as e:
        out["own_runtime_library"] = None
        out["own_runtime_error"] = str(e)
    return out

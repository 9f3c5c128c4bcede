"""The Python side of a context's view: to Python code that belongs to a
context (its modules, or any code on a thread inside it, by the owner rules
of :mod:`vlcs._owners`) the process looks like the context:

* ``os.cpu_count()``, ``os.sched_getaffinity()``, ``os.process_cpu_count()``,
  ``os.sysconf("SC_NPROCESSORS_ONLN")`` (psutil, numexpr) and
  ``multiprocessing.cpu_count()`` count the context's CPUs;
* ``os.environ``, ``os.getenv``, ``os.putenv`` and ``os.unsetenv`` read and
  change the context's environment (the one its C libraries' ``getenv``
  reads), not the process's;
* ``open()``/``io.open()`` (and so ``pathlib``) of ``/proc/cpuinfo``,
  ``/proc/self/status`` and ``/sys/devices/system/cpu/{online,present,possible}``
  read the same forged text the context's C libraries get (src/view.c).

Base code sees the real process.  The C side forges the same answers for
C code (src/view.c and src/interpose/).
"""

from __future__ import annotations

import builtins
import io
import os
import pathlib
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

from vlcs import _owners

real_cpu_count = os.cpu_count
real_sched_getaffinity = os.sched_getaffinity
_real_process_cpu_count = getattr(os, "process_cpu_count", None)
_real_sysconf = os.sysconf
_real_putenv = os.putenv
_real_unsetenv = os.unsetenv
_real_open = io.open

_installed = False
# ctx -> its forged file descriptor for path, or -2 (set by install)
_view_open: Callable[[Any, str, int], int] = lambda ctx, path, flags: -2  # noqa: E731


def _ctx(frame: Any) -> Any:
    """The context whose code (or thread) frame runs, or None for the base."""
    return _owners.resolve(frame, native=False).ctx


# --- CPU counts ---------------------------------------------------------------------


def _cpu_count() -> int | None:
    c = _ctx(sys._getframe(1))
    return len(c.cpus) if c is not None else real_cpu_count()


def _sched_getaffinity(pid: int) -> set[int]:
    real = real_sched_getaffinity(pid)
    if pid not in (0, os.getpid(), threading.get_native_id()):
        return real
    c = _ctx(sys._getframe(1))
    if c is None:
        return real
    cpus = set(c.cpus)
    return (real & cpus) or cpus


def _process_cpu_count() -> int | None:
    c = _ctx(sys._getframe(1))
    return len(c.cpus) if c is not None else _real_process_cpu_count()  # type: ignore[misc]


# os.sysconf takes the name or its number
_NPROCESSORS = {
    key
    for n in ("SC_NPROCESSORS_ONLN", "SC_NPROCESSORS_CONF")
    if n in os.sysconf_names
    for key in (n, os.sysconf_names[n])
}


def _sysconf(name: str | int) -> int:
    if name in _NPROCESSORS:
        c = _ctx(sys._getframe(1))
        if c is not None:
            return len(c.cpus)
    return _real_sysconf(name)


# --- the environment ----------------------------------------------------------------


class _ContextEnviron(os._Environ):  # type: ignore[name-defined,misc]
    """os.environ, as the caller's context sees it: the process's variables
    with the context's own settings over them.  The class of os.environ is
    swapped, not the object, so ``from os import environ`` keeps working."""

    def _overrides(self) -> dict[str, str | None] | None:
        c = _ctx(sys._getframe(1))
        return c._env if c is not None else None

    def __getitem__(self, key: str) -> str:
        env = self._overrides()
        if env is not None and key in env:
            value = env[key]
            if value is None:
                raise KeyError(key)
            return value
        return super().__getitem__(key)

    def __setitem__(self, key: str, value: str) -> None:
        c = _ctx(sys._getframe(1))
        if c is None:
            super().__setitem__(key, value)
            return
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(
                f"str expected, not {type(value if isinstance(key, str) else key).__name__}"
            )
        c.setenv(key, value)

    def __delitem__(self, key: str) -> None:
        c = _ctx(sys._getframe(1))
        if c is None:
            super().__delitem__(key)
            return
        if key not in self._keys(c._env):
            raise KeyError(key)
        c.unsetenv(key)

    def _keys(self, env: dict[str, str | None]) -> list[str]:
        base = [self.decodekey(k) for k in self._data]
        keys = [k for k in base if env.get(k, "") is not None]
        keys += [k for k, v in env.items() if v is not None and k not in set(base)]
        return keys

    def __iter__(self) -> Iterator[str]:
        env = self._overrides()
        if env is None:
            return super().__iter__()
        return iter(self._keys(env))

    def __len__(self) -> int:
        env = self._overrides()
        return super().__len__() if env is None else len(self._keys(env))

    def __contains__(self, key: object) -> bool:
        env = self._overrides()
        if env is not None and key in env:
            return env[key] is not None  # type: ignore[index]
        return super().__contains__(key)

    def copy(self) -> dict[str, str]:
        env = self._overrides()
        if env is None:
            return super().copy()
        return {k: self[k] for k in self._keys(env)}

    def __repr__(self) -> str:
        return f"environ({self.copy()!r})"


def _putenv(key: str, value: str) -> None:
    c = _ctx(sys._getframe(1))
    if c is None:
        _real_putenv(key, value)
    else:
        c.setenv(key, value)


def _unsetenv(key: str) -> None:
    c = _ctx(sys._getframe(1))
    if c is None:
        _real_unsetenv(key)
    else:
        c.unsetenv(key)


# --- files the context forges -------------------------------------------------------

_FORGED_PREFIXES = ("/proc/", "/sys/devices/system/cpu/")


def _open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
    if isinstance(file, (str, os.PathLike)) and mode in ("r", "rt", "rb", "br", "tr"):
        path = os.fspath(file)
        if isinstance(path, str) and path.startswith(_FORGED_PREFIXES):
            c = _ctx(sys._getframe(1))
            if c is not None:
                fd = _view_open(c, path, os.O_RDONLY | os.O_CLOEXEC)
                if fd >= 0:
                    f = _real_open(fd, mode, *args, **kwargs)
                    raw = getattr(getattr(f, "buffer", f), "raw", f)
                    raw.name = path  # f.name as a plain open() gives it
                    return f
    return _real_open(file, mode, *args, **kwargs)


def install(view_open: Callable[[Any, str, int], int]) -> None:
    """Make os's CPU counts, environment and the forged files answer for the
    caller's context (idempotent)."""
    global _installed, _view_open
    _view_open = view_open
    if _installed:
        return
    _installed = True
    os.cpu_count = _cpu_count
    os.sched_getaffinity = _sched_getaffinity
    if _real_process_cpu_count is not None:
        os.process_cpu_count = _process_cpu_count
    os.sysconf = _sysconf
    os.putenv = _putenv
    os.unsetenv = _unsetenv
    os.environ.__class__ = _ContextEnviron
    builtins.open = io.open = _open
    # pathlib up to 3.10 keeps its own reference to io.open
    accessor = getattr(pathlib, "_NormalAccessor", None)
    if accessor is not None and accessor.__dict__.get("open") is _real_open:
        accessor.open = staticmethod(_open)

"""The Python side of a context's view: to Python code that belongs to a
context (its modules, or any code on a thread inside it, by the owner rules
of :mod:`vlcs._isolation.owners`) the process looks like the context:

* ``os.cpu_count()``, ``os.sched_getaffinity()``, ``os.process_cpu_count()``,
  ``os.sysconf("SC_NPROCESSORS_ONLN")`` (psutil, numexpr) and
  ``multiprocessing.cpu_count()`` count the context's CPUs;
* ``os.environ``, ``os.environb``, ``os.getenv``, ``os.putenv`` and
  ``os.unsetenv`` read and change the context's environment (the one its C
  libraries' ``getenv`` reads), not the process's, and child processes
  started by ``subprocess`` (so ``os.popen``, ``asyncio``) or ``os.system``
  without an explicit environment get it;
* ``open()``/``io.open()`` (and so ``pathlib``) of the files libvlcs forges
  (its one table, src/view.c: ``/proc/cpuinfo``, ``/proc/self/status``,
  ``/sys/devices/system/cpu/{online,present,possible}``) read the same
  forged text the context's C libraries get.

Base code sees the real process.  The C side forges the same answers for
C code (src/view.c and src/interpose/).
"""

from __future__ import annotations

import builtins
import io
import os
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

from vlcs._after_import import when_imported
from vlcs._isolation import owners as _owners

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
# the prefixes of libvlcs's table of forged files (set by install): no
# other path leaves Python's open() for the C side
_forged_prefixes: tuple[str, ...] = ()


def _ctx(frame: Any) -> Any:
    """The context whose code (or thread) frame runs, or None for the base:
    frame is the caller's, one below the view that asks."""
    return _owners.caller(frame).ctx


# --- CPU counts ---------------------------------------------------------------------


# Each view below answers every caller; install() routes the base's code,
# where the frames alone decide it, to the real function in C
# (owners.routed), so that the base pays no Python function for them.


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

    def _convert(self, env: dict[str, str | None]) -> dict[Any, Any]:
        return env  # the context's settings are str, as os.environ's

    def _name(self, key: Any) -> str:
        return key  # type: ignore[no-any-return]

    def _overrides(self) -> dict[Any, Any] | None:
        c = _ctx(sys._getframe(1))
        return self._convert(c._env) if c is not None else None

    def __getitem__(self, key: Any) -> Any:
        env = self._overrides()
        if env is not None and key in env:
            value = env[key]
            if value is None:
                raise KeyError(key)
            return value
        return super().__getitem__(key)

    def __setitem__(self, key: Any, value: Any) -> None:
        c = _ctx(sys._getframe(1))
        if c is None:
            super().__setitem__(key, value)
            return
        self.encodekey(key), self.encodevalue(value)  # os.environ's TypeError
        c.setenv(self._name(key), self._name(value))

    def __delitem__(self, key: Any) -> None:
        c = _ctx(sys._getframe(1))
        if c is None:
            super().__delitem__(key)
            return
        if key not in self._keys(self._convert(c._env)):
            raise KeyError(key)
        c.unsetenv(self._name(key))

    def _keys(self, env: dict[Any, Any]) -> list[Any]:
        base = [self.decodekey(k) for k in self._data]
        keys = [k for k in base if env.get(k, "") is not None]
        keys += [k for k, v in env.items() if v is not None and k not in set(base)]
        return keys

    def __iter__(self) -> Iterator[Any]:
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
            return env[key] is not None
        return super().__contains__(key)

    def copy(self) -> dict[Any, Any]:
        env = self._overrides()
        if env is None:
            return super().copy()
        return {k: self[k] for k in self._keys(env)}

    def __repr__(self) -> str:
        return f"environ({self.copy()!r})"


def _route_methods(cls: type, names: tuple[str, ...]) -> None:
    """cls's methods named: os._Environ's own for the base's code (see
    install), cls's for every other caller."""
    for name in names:
        real = getattr(os._Environ, name)  # type: ignore[attr-defined]
        setattr(cls, name, _owners.routed(real, vars(cls)[name], method=True))


_route_methods(
    _ContextEnviron,
    ("__getitem__", "__setitem__", "__delitem__", "__iter__", "__len__", "__contains__", "copy",
     "__repr__"),
)  # fmt: skip


class _ContextEnvironb(_ContextEnviron):
    """os.environb, the same variables as bytes."""

    def _convert(self, env: dict[str, str | None]) -> dict[Any, Any]:
        return {os.fsencode(k): None if v is None else os.fsencode(v) for k, v in env.items()}

    def _name(self, key: Any) -> str:
        return os.fsdecode(key)


def context_environ(c: Any) -> dict[str, str]:
    """The whole environment of context c: the process's variables with the
    context's own settings over them (what its child processes get)."""
    env = dict(os.environ._data)  # type: ignore[attr-defined]  # bytes, not through the view
    out = {os.fsdecode(k): os.fsdecode(v) for k, v in env.items()}
    for k, v in c._env.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = v
    return out


# --- child processes: they get the context's environment ----------------------------

# subprocess's own, taken once subprocess is imported (importing it costs
# the first context a tenth of vlcs exec's start-up)
_real_execute_child: Callable[..., Any] = lambda self, *args: None  # noqa: E731
_real_system = os.system
_ENV_ARG = 6  # env's place among _execute_child's arguments (3.10-3.13)


def _route_subprocess(subprocess: Any) -> None:
    global _real_execute_child
    _real_execute_child = subprocess.Popen._execute_child
    routed = _owners.routed(_real_execute_child, _execute_child, method=True)
    subprocess.Popen._execute_child = routed


def _execute_child(self: Any, *args: Any) -> Any:
    if args[_ENV_ARG] is None:
        c = _ctx(sys._getframe(1))
        if c is not None:
            args = (*args[:_ENV_ARG], context_environ(c), *args[_ENV_ARG + 1 :])
    return _real_execute_child(self, *args)


def _system(command: Any) -> int:
    c = _ctx(sys._getframe(1))
    if c is None:
        return _real_system(command)
    # system(3) with the context's environment: sh -c, waited for
    if not isinstance(command, (str, bytes, os.PathLike)):
        return _real_system(command)  # its TypeError
    pid = os.posix_spawn("/bin/sh", ["sh", "-c", os.fsdecode(command)], context_environ(c))
    return os.waitpid(pid, 0)[1]


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


def _open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
    if isinstance(file, (str, os.PathLike)) and mode in ("r", "rt", "rb", "br", "tr"):
        path = os.fspath(file)
        if isinstance(path, str) and path.startswith(_forged_prefixes):
            c = _ctx(sys._getframe(1))
            if c is not None:
                fd = _view_open(c, path, os.O_RDONLY | os.O_CLOEXEC)
                if fd >= 0:
                    f = _real_open(fd, mode, *args, **kwargs)
                    raw = getattr(getattr(f, "buffer", f), "raw", f)
                    raw.name = path  # f.name as a plain open() gives it
                    return f
    return _real_open(file, mode, *args, **kwargs)


def install(view_open: Callable[[Any, str, int], int], forged_prefixes: tuple[str, ...]) -> None:
    """Make os's CPU counts, environment and the forged files (those whose
    paths start with forged_prefixes) answer for the caller's context
    (idempotent)."""
    global _installed, _view_open, _forged_prefixes
    _view_open, _forged_prefixes = view_open, forged_prefixes
    if _installed:
        return
    _installed = True
    route = _owners.routed
    os.cpu_count = route(real_cpu_count, _cpu_count)
    os.sched_getaffinity = route(real_sched_getaffinity, _sched_getaffinity)
    if _real_process_cpu_count is not None:
        os.process_cpu_count = route(_real_process_cpu_count, _process_cpu_count)
    os.sysconf = route(_real_sysconf, _sysconf)
    os.putenv = route(_real_putenv, _putenv)
    os.unsetenv = route(_real_unsetenv, _unsetenv)
    os.environ.__class__ = _ContextEnviron
    os.environb.__class__ = _ContextEnvironb
    when_imported("subprocess", _route_subprocess)
    os.system = route(_real_system, _system)
    builtins.open = io.open = route(_real_open, _open)
    # pathlib up to 3.10 keeps its own reference to io.open, taken when it
    # is imported: one imported later takes the one set here (Routed, which
    # does not bind as its class attribute, as io.open does not)
    accessor = getattr(sys.modules.get("pathlib"), "_NormalAccessor", None)
    if accessor is not None and accessor.__dict__.get("open") is _real_open:
        accessor.open = staticmethod(io.open)

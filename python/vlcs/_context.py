"""Contexts from Python: ``vlcs.VLC`` (also ``vlcs.Context``).

A context has its own CPU set and environment, and its own copies of the
libraries loaded into it.  ``with ctx:`` runs the calling thread inside it;
``ctx.submit`` and ``ctx.executor()`` run work on threads that live inside
it.  Inside, ``os.cpu_count()``, ``os.sched_getaffinity(0)``,
``os.process_cpu_count()`` and ``multiprocessing.cpu_count()`` answer with
the context's CPUs, as the C-level queries of its libraries do.

>>> import os, vlcs
>>> ctx = vlcs.VLC(cpus="0", env={"OMP_NUM_THREADS": "1"})
>>> with ctx:
...     os.cpu_count()
1
>>> ctx.submit(os.sched_getaffinity, 0).result()
{0}
>>> ctx.close()

A closed context is gone: its modules are dropped and its namespace is
given back to glibc (which has at most 16) unless extension modules were
loaded into it.  ``with contextlib.closing(vlcs.VLC()) as ctx:`` ties a
context's life to a block; :class:`vlcs.ContextPool` reuses contexts.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import os
import sys
import threading
import warnings
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from vlcs import _cpus, _interpreter, _own, libraries
from vlcs._errors import ContextDestroyedError, InvalidArgumentError
from vlcs._fault import call_guarded
from vlcs._isolation import dlopen as _dlopen
from vlcs._isolation import imports as _imports
from vlcs._isolation import registries as _registries
from vlcs._isolation import threads as _threads
from vlcs._isolation import views as _views
from vlcs._isolation.extension import python_service
from vlcs._isolation.linkmap import namespace_files, namespace_objects, namespace_root
from vlcs._lib import (
    IN_OWN_PYTHON,
    c_string,
    check,
    enter_binding,
    fail,
    forged_files,
    host_lib,
    last_error,
    lib,
)

if TYPE_CHECKING:
    import concurrent.futures

# The Python runtimes a context may have.  Everything a context's methods
# use is imported here, not at first use: a first import in one thread
# while another forks leaves the child that module's lock held for ever
# (a pool's worker calling into its context, the parent forking).
PYTHONS = ("shared", "own")

# vlcs_mode (vlcs.h)
_MODE_NAMESPACE = 1
_MODE_COPIES = 2
# what vlcs_ctx_set_gpus sets in a context's environment
_GPU_VARIABLES = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")


_contexts: weakref.WeakValueDictionary[int, VLC] = weakref.WeakValueDictionary()
# The interpreter dicts libvlcs hands to namespaces' extension modules, by
# id: alive for as long as their namespace is loaded, whoever drops the VLC.
_given_state_dicts: dict[int, dict[Any, Any]] = {}


def _after_fork_in_child() -> None:
    """A forked child has only the thread that forked: each context's
    executor lost its workers (a task submitted to it would wait for ever),
    and its lock may have been held by a thread that is gone.  ctx.submit
    starts a new executor in the child."""
    for c in list(_contexts.values()):
        c._lock = threading.Lock()
        c._executor = None
        c._closing = False  # a close() of another thread did not come along


class NamespaceKeptWarning(RuntimeWarning):
    """A closed context's namespace stays loaded (the message says why):
    glibc has at most 16, so a program that makes and closes such contexts
    again and again should reuse them with :class:`vlcs.ContextPool`."""


os.register_at_fork(after_in_child=_after_fork_in_child)


class _EnterDescriptor:
    """VLC.__enter__: ctx.__enter__ is vlcs_enter_binding(ctx, ...) bound in
    C (functools.partial of a ctypes function), returning ctx once inside.
    Read from the class (``type(ctx).__enter__(ctx)``, as contextlib's
    ExitStack and AsyncExitStack do) it is a function of the context."""

    def __get__(self, obj: VLC | None, cls: type | None = None) -> Any:
        if obj is None:
            return _enter_context
        if obj._own is not None:
            return obj._refuse_enter
        enter, _, binding = enter_binding()
        return functools.partial(enter, obj._h, obj, binding)


def _enter_context(ctx: VLC) -> VLC:
    """VLC.__enter__ read from the class: enter ctx, return it."""
    if ctx._own is not None:
        ctx._refuse_enter()
    enter, _, binding = enter_binding()
    return enter(ctx._h, ctx, binding)


class _ExitFunction:
    """VLC.__exit__: vlcs_leave_binding itself (a C function of three
    ignored arguments, returning None: exceptions are never suppressed).
    Read from the class it is a function of the context and those three."""

    def __get__(self, obj: VLC | None, cls: type | None = None) -> Any:
        if obj is None:
            return _exit_context
        return enter_binding()[1]


def _exit_context(ctx: VLC, exc_type: Any, exc: Any, tb: Any) -> None:
    """VLC.__exit__ read from the class: leave the context ctx was entered as."""
    enter_binding()[1](exc_type, exc, tb)


class VLC:
    """A virtual library context.

    cpus: CPUs as "0-3,8" or ids (default: every CPU the process may use);
        of an elastic context, its home.
    env: environment variables set in the context only.
    name: a label for messages and ``vlcs.info()``.
    elastic: make the context elastic, growing up to these CPUs while
        busy (see set_elastic); weight: its share of lent CPUs.
    python: "shared" (the default): code inside runs on this interpreter,
        with the context's own copies of what it imports; "own": the
        context holds a CPython runtime of its own (its own GIL, its own
        numpy), given work with ``submit`` as a process pool is: functions
        and arguments by pickle, numpy arrays as views of the same memory.
    gpus: the GPUs its code sees, as "0,2" or ids ("" or [] for none;
        default: the process's), see :meth:`set_gpus`.
    """

    def __init__(
        self,
        cpus: str | Iterable[int] | None = None,
        env: Mapping[str, str] | None = None,
        name: str | None = None,
        *,
        elastic: str | Iterable[int] | None = None,
        weight: int = 0,
        python: str = "shared",
        gpus: str | Iterable[int] | None = None,
    ) -> None:
        if python not in PYTHONS:
            raise ValueError(f"python must be one of {', '.join(PYTHONS)}; got {python!r}")
        self._own: _own.Runtime | None = None
        # Before the namespace exists, so that libpython's forwarder is in
        # its global scope (extension modules look for the C API there).
        python_service()
        handle = lib().vlcs_ctx_create(c_string(name, "name") if name is not None else None)
        if not handle:
            fail()
        self._handle: int | None = handle
        # Contexts take a namespace while glibc has one free, then copies
        # (docs/copy-mode.md); a Python of its own too: its libpython a copy
        # of its own, which every later load of the context sees first.
        self._closing = False
        self._name: str = lib().vlcs_ctx_name(handle).decode()
        self._lock = threading.Lock()
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._env: dict[str, str | None] = {}
        self._elastic = False
        self._libraries: list[str] = []
        self._any_handle: int | None = None  # a link_map of the namespace
        self._fault: str | None = None  # vlcs_ctx_fault's, read before the handle goes
        self._place: str | None = None  # the hwloc place its CPUs were given as
        # What may still refer to the namespace's code when it is closed:
        # ctypes handles given out (alive or not), and native code loaded by
        # imports or by the context's own ctypes calls (kept for good).
        self._dlls: list[weakref.ref[ctypes.CDLL]] = []
        self._native: list[str] = []
        try:
            if cpus is not None:
                self.set_allowed_cpus(cpus)
            if elastic is not None:
                # before env: the user's OMP_NUM_THREADS wins over elastic's
                self.set_elastic(elastic, weight)
            if gpus is not None:
                self.set_gpus(gpus)
            for key, value in (env or {}).items():
                self.setenv(key, value)
            if python == "own":
                self._own = _own.Runtime(self)
        except BaseException:
            # a refused argument leaves no context behind
            self._handle = None
            lib().vlcs_ctx_destroy(handle)
            raise
        self._owner = _imports.Owner(self.name, self, _NativeSide(self))
        _contexts[handle] = self
        _views.install(_view_open, tuple(prefix for prefix, _ in forged_files()))
        _dlopen.install()
        _imports.install(_thread_owner)
        _imports.context_opened(handle, self._owner)
        _registries.install()
        _threads.install(current, _adopt_thread)

    @property
    def _h(self) -> int:
        h = self._handle
        if h is None:
            raise ContextDestroyedError(f"context {self._name!r} is closed")
        return h

    # --- the paper's API -------------------------------------------------------
    def set_allowed_cpus(self, cpus: str | Iterable[int]) -> None:
        """Set the context's CPUs; threads inside move at once.

        cpus: a CPU list ("0-3,8", or CPU ids) or an hwloc place ("numa:0",
        "l3:1", "core:0-7.pu:0"), which :meth:`info` reports beside the CPUs.

        Raises InvalidArgumentError (a ValueError) naming the offending value.
        """
        check(lib().vlcs_ctx_set_cpus(self._h, _cpus.to_c(cpus, "CPU", empty_ok=False)))
        self._place = cpus if isinstance(cpus, str) and ":" in cpus else None

    def set_gpus(self, gpus: str | Iterable[int]) -> None:
        """Give the context these GPUs: "0,2" or ids, as the process numbers
        them ("" or [] for none).  Its code sees them as devices 0, 1, ... in
        increasing order, whatever it loads: NVIDIA's driver, one per
        process, answers the context's CUDA runtime (torch's, CuPy's) with
        these only; a HIP runtime reads ``HIP_VISIBLE_DEVICES``, which is
        set in the context.  Call it before the context's first GPU call
        (runtimes ask for their devices once); docs/gpus.md says more.

        >>> import vlcs
        >>> ctx = vlcs.VLC(cpus="0")
        >>> ctx.set_gpus("0,2")
        >>> ctx.gpus, ctx.getenv("CUDA_VISIBLE_DEVICES")
        ([0, 2], '0,2')
        >>> ctx.close()
        """
        check(lib().vlcs_ctx_set_gpus(self._h, _cpus.to_c(gpus, "GPU", empty_ok=True)))
        # as vlcs_ctx_set_gpus set them, for os.environ in the context:
        # torch counts its devices with NVML, filtered by os.getenv's
        # CUDA_VISIBLE_DEVICES, before its CUDA runtime looks
        for name in _GPU_VARIABLES:
            value = self.getenv(name)
            if value is not None:
                self._env[name] = value

    @property
    def gpus(self) -> list[int] | None:
        """Its GPUs as :meth:`set_gpus` gave them, or None: the process's."""
        buf = ctypes.create_string_buffer(4096)
        if check(lib().vlcs_ctx_get_gpus(self._h, buf, len(buf))) == 1:
            return None
        return _cpus.parse_list(buf.value.decode())

    @classmethod
    def from_plan(cls, plan: str | os.PathLike[str] | Mapping[str, Any], task: str) -> VLC:
        """The context ``vlcs tune`` chose for `task`: its CPUs and environment.

        ValueError when the plan has no such task or was made on a machine
        whose CPUs this process cannot use.

        >>> import vlcs
        >>> plan = {"version": 1, "tasks": [{"name": "a", "cpus": "0", "env": {}}]}
        >>> vlcs.VLC.from_plan(plan, "a").cpus
        [0]
        """
        import json

        doc = dict(plan) if isinstance(plan, Mapping) else json.loads(open(plan).read())
        if doc.get("version") != 1 or not isinstance(doc.get("tasks"), list):
            raise ValueError(f"{plan!r} is not a plan written by vlcs tune")
        entry = next((t for t in doc["tasks"] if t.get("name") == task), None)
        if entry is None:
            names = [t.get("name") for t in doc["tasks"]]
            raise ValueError(f"the plan has no task {task!r}; its tasks: {names}")
        usable = set(_views.real_sched_getaffinity(0))
        missing = sorted(set(_cpus.parse_list(entry["cpus"])) - usable)
        if missing:
            host = doc.get("machine", {}).get("hostname", "another machine")
            raise ValueError(
                f"the plan gives task {task!r} CPUs {entry['cpus']}, but this process cannot use "
                f"CPU {missing[0]}: it was made on {host}; tune again here"
            )
        return cls(cpus=entry["cpus"], env=entry.get("env") or None, name=task[:40])

    def set_elastic(self, bound: str | Iterable[int] | None, weight: int = 0) -> None:
        """Make the context elastic: while a thread is inside it, it borrows
        the home CPUs of idle elastic contexts, up to ``bound`` (which must
        contain its own CPUs); while idle, it lends its own, which come back
        the moment a thread enters it (before ``with ctx:`` runs its body).
        Lent CPUs are split among borrowers by ``weight`` (0: the size of
        their homes).  ``None`` makes it static again.

        Its libraries follow: threads move, OpenBLAS is resized, OpenMP
        teams (torch's too) are sized by the current CPUs: this sets
        OMP_DYNAMIC=true and OMP_NUM_THREADS=len(bound) in the context, so
        make it elastic before importing OpenMP code into it.

        >>> import vlcs
        >>> a = vlcs.VLC(cpus="0", elastic="0-1")
        >>> b = vlcs.VLC(cpus="1", elastic="0-1")
        >>> with b:  # a is idle: b runs on both CPUs
        ...     b.cpus, b.home_cpus, a.lent_cpus
        ([0, 1], [1], [0])
        >>> b.cpus  # idle again: home
        [1]
        """
        if not isinstance(weight, int) or isinstance(weight, bool) or weight < 0:
            raise ValueError(f"weight must be an int >= 0; got {weight!r}")
        raw = None if bound is None else _cpus.to_c(bound, "CPU", empty_ok=False)
        check(lib().vlcs_ctx_set_elastic(self._h, raw, weight))
        self._elastic = bound is not None
        if bound is not None:
            # as vlcs_ctx_set_elastic set them, for info() and the pool
            for name in ("OMP_DYNAMIC", "OMP_NUM_THREADS"):
                self._env[name] = self.getenv(name)

    def setenv(self, name: str, value: str) -> None:
        """Set an environment variable in the context only (value a str, as
        for os.environ)."""
        raw = self._check_name(name)
        check(lib().vlcs_ctx_setenv(self._h, raw, c_string(value, f"the value of {name}")))
        self._env[name] = value

    def exec_program(self, argv: Sequence[str | os.PathLike[str]]) -> int:
        """Run an unmodified program inside this context, on a thread of its
        own (descriptors 0-2 its streams), wait for it and return its exit
        status (0-255; 128 + the signal when its own code crashed).

        argv[0] is searched on PATH when it has no slash.  The program is
        loaded into the context like a library: its globals and those of what
        it links are the context's, it sees the context's CPUs and
        environment, and its exit() ends only this run.  Dynamically linked,
        position-independent programs only (gcc's and Debian's default);
        others raise before anything runs.  Run several at once on threads of
        their own, each in its own context (:func:`vlcs.exec_instances`).

        >>> import vlcs
        >>> ctx = vlcs.VLC(name="tool")
        >>> ctx.exec_program(["true"])
        0
        >>> ctx.close()
        """
        if isinstance(argv, (str, bytes)) or not argv:
            raise TypeError("argv must be a non-empty sequence of arguments, argv[0] the program")
        raw = [c_string(a, f"argument {i}", path=True) for i, a in enumerate(argv)]
        array = (ctypes.c_char_p * (len(raw) + 1))(*raw, None)
        return check(lib().vlcs_ctx_exec(self._h, array))

    def set_stdio(
        self, stdin: int | None = None, stdout: int | None = None, stderr: int | None = None
    ) -> None:
        """File descriptors for the context's C streams (what its libraries'
        and programs' stdin, stdout and stderr read and write) instead of the
        process's; None leaves one as it is.  Only before the context's first
        load; the descriptors are duplicated then, so keep them open till
        then."""
        fds = [-1 if fd is None else int(fd) for fd in (stdin, stdout, stderr)]
        check(lib().vlcs_ctx_set_stdio(self._h, *fds))

    def unsetenv(self, name: str) -> None:
        """Remove an environment variable from the context only."""
        check(lib().vlcs_ctx_unsetenv(self._h, self._check_name(name)))
        self._env[name] = None

    def getenv(self, name: str) -> str | None:
        """The variable as libraries in the context see it."""
        v = lib().vlcs_ctx_getenv(self._h, self._check_name(name))
        return v.decode() if v is not None else None

    @staticmethod
    def _check_name(name: str) -> bytes:
        raw = c_string(name, "an environment variable name")
        if not raw or b"=" in raw:
            raise ValueError(
                f"environment variable names must be non-empty and contain no '='; got {name!r}"
            )
        return raw

    # --- properties -------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def closed(self) -> bool:
        """Whether close() destroyed the context."""
        return self._handle is None

    def _cpuset(self, which: int) -> list[int]:
        buf = ctypes.create_string_buffer(8192)
        check(lib().vlcs_ctx_get_cpuset(self._h, which, buf, len(buf)))
        return _cpus.parse_list(buf.value.decode())

    @property
    def cpus(self) -> list[int]:
        """The CPUs the context runs on now, as real ids (of an elastic
        context: its home plus what it borrows)."""
        return self._cpuset(0)

    @property
    def home_cpus(self) -> list[int]:
        """Its own CPUs, as set_allowed_cpus set them."""
        return self._cpuset(1)

    @property
    def elastic(self) -> list[int] | None:
        """The CPUs an elastic context may grow to; None if it is static."""
        return self._cpuset(2) if self._elastic else None

    @property
    def lent_cpus(self) -> list[int]:
        """Its home CPUs that busy elastic contexts borrow now."""
        return self._cpuset(3)

    def progress(self, units: int = 1) -> None:
        """Report ``units`` more iterations (batches, solves: of about equal
        size) done in this context.  An elastic context that reports its
        progress keeps a lend only where its rate rises by 5 % or more
        with it; what did not pay goes back to idle owners or to other
        borrowers, and is tried again after 2 s, then 4, up to 64 s.  Inside
        the context, ``vlcs.progress()`` reports without the object.

        >>> import vlcs
        >>> ctx = vlcs.VLC(cpus="0", elastic="0")
        >>> for _ in range(3):
        ...     ctx.progress()
        >>> ctx.progress_info()["units"]
        3
        >>> ctx.close()
        """
        check(lib().vlcs_ctx_progress(self._h, _units(units)))

    def progress_info(self) -> dict[str, Any]:
        """What vlcs measured of the progress reported (see progress):
        ``units`` in all; ``rate``, units per second in the last window
        measured since the context last turned busy (0.0 before the first),
        on ``rate_cpus`` CPUs; and ``most_cpus``, the most CPUs lends may
        bring it to now (0: no limit but its bound)."""
        from vlcs._lib import Progress

        p = Progress()
        check(lib().vlcs_ctx_get_progress(self._h, ctypes.byref(p)))
        return {
            "units": p.units,
            "rate": p.rate,
            "rate_cpus": p.rate_cpus,
            "most_cpus": p.most_cpus,
        }

    @property
    def thread_count(self) -> int:
        """Live threads created by the context's libraries (their pools)."""
        return check(lib().vlcs_ctx_thread_count(self._h))

    # --- libraries --------------------------------------------------------------
    def load(self, library: str | bytes | os.PathLike[str]) -> ctypes.CDLL:
        """Load a shared library privately into the context (ctypes handle).

        Raises LibraryNotFoundError (a FileNotFoundError) when it or a
        dependency is missing, VlcsLimitError when a platform limit is hit.

        >>> import vlcs
        >>> m = vlcs.VLC().load("libm.so.6")
        >>> m.cos.restype = __import__("ctypes").c_double
        """
        # checked before anything reads it; ctypes (3.13) and info() want str
        path = os.fsdecode(c_string(library, "library", path=True))
        dll = self._load(path)
        self._libraries.append(path)
        return dll

    def _load_handle(self, path: str | bytes) -> int:
        """vlcs_ctx_load's handle of path in this context; raises on failure."""
        h = lib().vlcs_ctx_load(self._h, c_string(path, "library", path=True))
        if not h:
            fail()
        self._any_handle = self._any_handle or h
        return h

    def _load(self, path: str) -> ctypes.CDLL:
        # Never handle=None: ctypes would dlopen the base's copy instead.
        dll = ctypes.CDLL(path, handle=self._load_handle(path))
        self._dlls.append(weakref.ref(dll))
        return dll

    def _give_state_dict(self) -> None:
        """The namespace's extension modules get the owner's state dict as
        the interpreter's (once; the namespace exists)."""
        d = self._owner.state_dict
        if _given_state_dicts.get(id(d)) is not d:
            check(lib().vlcs_python_state_dict(self._h, id(d)))
            _given_state_dicts[id(d)] = d

    def _keep_native(self, what: str) -> None:
        """Native code of the namespace that Python objects may refer to for
        as long as the process lives: close() keeps the namespace loaded."""
        if what not in self._native:
            self._native.append(what)

    @property
    def modules(self) -> list[str]:
        """Names of the Python modules privatised in this context."""
        return _imports.modules_of(self._owner)

    # --- running inside ---------------------------------------------------------
    # ``with ctx:`` calls libvlcs directly, no Python code between entering
    # and the with-block or between leaving and its end: a KeyboardInterrupt
    # lands before or after, never with the thread inside unaccounted for.
    _own: _own.Runtime | None = None  # python="own": the context's runtime
    __enter__: Callable[[], VLC] = _EnterDescriptor()  # type: ignore[assignment]
    __exit__: Callable[..., None] = _ExitFunction()  # type: ignore[assignment]

    def executor(self, max_workers: int | None = None) -> concurrent.futures.Executor:
        """A ThreadPoolExecutor whose tasks run inside this context.

        max_workers defaults to the number of the context's CPUs.
        """
        from vlcs._executor import ContextExecutor, ThreadPoolExecutor

        if self._own is not None:  # its tasks enter only the context's runtime
            with _threads.starting_in_base():
                return ThreadPoolExecutor(
                    max_workers or len(self.cpus), thread_name_prefix=f"vlcs-{self.name}"
                )
        return ContextExecutor(
            self,
            max_workers=max_workers or len(self.cpus),
            thread_name_prefix=f"vlcs-{self.name}",
        )

    def submit(
        self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any
    ) -> concurrent.futures.Future:
        """Run fn(*args, **kwargs) on a thread of the context (concurrent.futures style).

        In a context with a Python of its own, the context's runtime runs
        it: fn and the arguments go by pickle (lambdas and functions of
        __main__ by value, with cloudpickle), numpy arrays as views of the
        same memory; the result comes back by pickle, an exception as the
        caller's class with the worker's traceback as its __cause__.
        """
        with self._lock:
            if self._executor is None:
                self._executor = self.executor()
            ex = self._executor
        if self._own is not None:
            return ex.submit(self._own.call, fn, args, kwargs)
        return ex.submit(fn, *args, **kwargs)

    def call(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """fn(*args, **kwargs) run inside the context on this thread, and
        its result, with a fault in the context's native code contained: a
        segmentation fault, a division by zero, ``abort()`` or a failed
        assertion in a library or extension module of the context's own
        raises :class:`vlcs.ContextFaultError` here, the context is broken
        for good (close it and make another), and the process, the base and
        the other contexts go on.  What cannot be contained (a fault in code
        the context shares with the process, in a context that shares this
        interpreter: in its libpython or libc) ends the process as without
        vlcs, with a line on stderr saying why: docs/faults.md.

        In a context with a Python of its own, its runtime runs fn (as
        :meth:`submit` hands it over), and faults anywhere in that runtime
        are contained.

        >>> import vlcs
        >>> ctx = vlcs.VLC(cpus="0")
        >>> ctx.call(sorted, [3, 1, 2])
        [1, 2, 3]
        >>> ctx.fault is None
        True
        >>> ctx.close()
        """
        if self._own is not None:
            return self._own.call(fn, args, kwargs)
        return call_guarded(self, functools.partial(fn, *args, **kwargs))

    @property
    def fault(self) -> str | None:
        """What broke the context, when a fault did (:meth:`call`): the
        signal, the function and library it hit, and the native stack, as
        :class:`vlcs.ContextFaultError`'s ``report``; None otherwise."""
        if self._handle is None:
            return self._fault
        report = lib().vlcs_ctx_fault(self._h)
        return report.decode(errors="replace") if report else None

    def _refuse_enter(self, *_: Any) -> None:
        raise InvalidArgumentError(
            f"context {self.name!r} runs a Python of its own, which code of this interpreter "
            "cannot enter: give it work with ctx.submit(fn, *args)"
        )

    def libraries(self) -> list[str]:
        """Paths of every shared object in the context's namespace (in copy
        mode: the files of its copies)."""
        if not self._any_handle:
            return []
        if lib().vlcs_ctx_mode(self._h) == _MODE_COPIES:
            out, i = [], 0
            while (path := lib().vlcs_ctx_object(self._h, i)) is not None:
                out.append(path.decode(errors="replace"))
                i += 1
            return out
        return namespace_objects(self._any_handle)

    def _controllers(self, user_api: str | None = None) -> list[libraries.LibraryController]:
        """A controller for each known library copy in the context (call inside it)."""
        out: list[libraries.LibraryController] = []
        for path in self.libraries():
            for cls in libraries.controllers():
                if cls.matches(path) and user_api in (None, cls.user_api, cls.name):
                    if not (cls.one_per_context and any(type(c) is cls for c in out)):
                        out.append(cls(path, self._load(path)))
                    break
        return out

    def threadpools(self) -> list[dict[str, Any]]:
        """Thread pools of the context's copies of OpenBLAS, OpenMP, MKL,
        torch, oneTBB (every registered family, see vlcs.register), queried
        from inside the context: threadpoolctl, running in the base, cannot
        see them.  Asking enters the context, so an elastic one answers
        with the pools a thread inside it finds (grown while others idle).

        >>> import vlcs
        >>> vlcs.VLC(cpus="0").threadpools()
        []
        """
        if self._any_handle is None:
            return []
        with self:
            pools = [(c, c.info()) for c in self._controllers()]
        if self._elastic:
            for c, p in pools:
                p["elastic"] = c.elastic
        return [p for _, p in pools if p["num_threads"] is not None]

    def set_num_threads(self, n: int, user_api: str | None = None) -> list[str]:
        """Resize the thread pools of the context's libraries through their
        own APIs, called inside the context; ``user_api`` ("blas",
        "openmp", "torch" or a family name) picks some.  Returns the names of
        the families resized.

        >>> import vlcs
        >>> vlcs.VLC(cpus="0").set_num_threads(1)
        []
        """
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"set_num_threads takes a thread count >= 1; got {n!r}")
        if self._any_handle is None:
            return []
        with self:
            return [c.name for c in self._controllers(user_api) if c.set_num_threads(n)]

    @property
    def mode(self) -> str | None:
        """Where its libraries live: ``"namespace"`` (a linker namespace of
        its own) or ``"copies"`` (renamed copies in the base namespace, see
        docs/copy-mode.md); None before its first load.

        >>> import vlcs
        >>> ctx = vlcs.VLC(cpus="0")
        >>> ctx.mode is None
        True
        >>> ctx.close()
        """
        mode = lib().vlcs_ctx_mode(self._h)
        if mode < 0:
            fail()
        return {_MODE_NAMESPACE: "namespace", _MODE_COPIES: "copies"}.get(mode)

    def info(self) -> dict[str, Any]:
        """What the context holds, JSON-able."""
        elastic = self.elastic
        return {
            "name": self.name,
            "cpus": self.cpus,
            "place": self._place,
            "home_cpus": self.home_cpus,
            "gpus": self.gpus,
            "elastic": elastic,
            "lent_cpus": self.lent_cpus if elastic is not None else [],
            "progress": self.progress_info(),
            "env": dict(self._env),
            "libraries": list(self._libraries),
            "python_packages": sorted({n.partition(".")[0] for n in self._owner.modules}),
            "threadpools": self.threadpools(),
            "library_threads": self.thread_count,
            "mode": self.mode,
            "copy_mode_caveats": self._copy_mode_caveats(),
        }

    def _copy_mode_caveats(self) -> list[str]:
        """What copy mode does not keep the context's own (docs/copy-mode.md),
        as it applies to this context; empty in a namespace."""
        if self.mode != "copies":
            return []
        out = []
        libc_reads = sorted(
            n
            for n, v in self._env.items()
            if (n in _LIBC_OWN_VARIABLES or n.startswith(("LC_", "MALLOC_", "GLIBC_")))
            and v != os.environ.get(n)
        )
        if libc_reads:
            out.append(
                f"libc reads {', '.join(libc_reads)} itself, from the process's environment: "
                "the context's value is seen by its libraries' getenv only"
            )
        if os.environ.get("LD_PRELOAD"):
            out.append(
                "a preloaded library (LD_PRELOAD) comes after the context's own libraries: "
                "its replacements of libc functions other than malloc miss their calls"
            )
        return out

    def close(self) -> None:
        """Destroy the context: wait for the tasks given to ``submit``, give
        its namespace back to glibc, which then reuses it, and drop its
        modules from every table.  Calling it again does nothing; any other
        use raises ContextDestroyedError.

        When Python objects may still use native code of the namespace
        (extension modules were imported, the context's code loaded libraries
        with ctypes, or a handle from :meth:`load` is still referenced) the
        namespace stays loaded for the rest of the process, its modules stay
        for that code's own imports, and :class:`NamespaceKeptWarning` names
        why: reuse such contexts with :class:`vlcs.ContextPool`.  Raises
        ContextBusyError, and changes nothing, while a thread is inside.

        A context with a Python of its own (``python="own"``) finalises it
        first (its atexit handlers run) and then unloads it with every
        extension module it imported; only while the caller still has views
        of a result's memory does the runtime live on, to the process's end.

        >>> import contextlib, vlcs
        >>> with contextlib.closing(vlcs.VLC(cpus="0")) as ctx:
        ...     ctx.load("libm.so.6").cos.restype = None
        >>> ctx.closed
        True
        """
        self._close(warn=True)

    def _close(self, warn: bool) -> None:
        with self._lock:  # one closer; the others return at once
            if self._handle is None or self._closing:
                return
            self._closing = True
            ex, self._executor = self._executor, None
        try:
            if ex is not None:
                ex.shutdown(wait=True)  # its tasks still use the context
            h = self._h
            self._fault = self.fault  # kept: the handle goes
            if self._own is not None and self._own.started and self._own.finish():
                # nothing of the runtime runs any more: the extension modules
                # it opened (and CPython never closes) go with the rest
                check(lib().vlcs_ctx_drop_library_opens(h))
            check(lib().vlcs_ctx_keep_loaded(h, self._keep_reason()))
            rc = lib().vlcs_ctx_destroy(h)
            if rc < 0:
                err = last_error()
                lib().vlcs_ctx_keep_loaded(h, None)
                raise err
            self._handle = None
            if self._own is not None:
                self._own.release()
        finally:
            self._closing = False
        kept = lib().vlcs_error().decode(errors="replace") if rc == 1 else None
        _contexts.pop(h, None)
        _imports.context_closed(h)
        # A kept namespace's code may still run (an array of its numpy): its
        # lazy imports must keep finding its modules, so they stay with it.
        if not kept:
            # libvlcs forgot the dict with the namespace; a kept namespace's
            # code may still ask for it, so it lives on with the namespace
            _given_state_dicts.pop(id(self._owner.state_dict), None)
            if _imports.forget(self._owner):
                _clear_shared_caches()
        self._libraries.clear()
        self._any_handle = None
        # an own Python's is kept by design; a broken one's was reported when it broke
        if kept and warn and self._own is None and self._fault is None:
            warnings.warn(
                NamespaceKeptWarning(f"{kept}; reuse such contexts with vlcs.ContextPool"),
                stacklevel=3,
            )

    def _keep_reason(self) -> bytes | None:
        """Why the namespace must stay loaded, or None."""
        if self._own is not None and self._own.started:
            return (
                b"it holds a Python of its own, which lives until the process ends "
                b"(the caller still has views of a result's memory)"
            )
        if self._any_handle is None:
            return None
        parts = []
        if self._native:
            shown = ", ".join(self._native[:3])
            more = f" and {len(self._native) - 3} more" if len(self._native) > 3 else ""
            parts.append(f"Python objects may still use its native code ({shown}{more})")
        if any(r() is not None for r in self._dlls):
            gc.collect()  # handles in reference cycles of dropped code
        alive = sorted({os.path.basename(d._name) for r in self._dlls if (d := r()) is not None})
        if alive:
            parts.append(f"ctypes handles from load() are still referenced ({', '.join(alive)})")
        return "; ".join(parts).encode() if parts else None

    def __repr__(self) -> str:
        if self.closed:
            return f"<vlcs.VLC {self.name!r} closed>"
        return f"<vlcs.VLC {self.name!r} cpus={self.cpus}>"


Context = VLC


def _clear_shared_caches() -> None:
    """Caches of the shared standard library that hold a closed context's
    objects: typing's (Generic[...] of the context's classes, 128 per
    function) kept a hundred closed contexts' modules alive."""
    typing = sys.modules.get("typing")
    for clear in getattr(typing, "_cleanups", ()):
        clear()


def current() -> VLC | None:
    """The context the calling thread is in, or None."""
    h = lib().vlcs_current()
    return _contexts.get(h) if h else None


def progress(units: int = 1) -> None:
    """Report ``units`` more iterations done in the calling thread's context
    (see VLC.progress); outside every context it does nothing, so a library
    may report whoever calls it.  In a task of a context's own Python
    (``python="own"``) it reports to that context.

    >>> import vlcs
    >>> ctx = vlcs.VLC(cpus="0", elastic="0")
    >>> with ctx:
    ...     vlcs.progress(2)
    >>> ctx.progress_info()["units"]
    2
    >>> vlcs.progress()  # in the base: nothing
    >>> ctx.close()
    """
    n = _units(units)
    if IN_OWN_PYTHON and not lib().vlcs_current():
        host_lib().vlcs_ctx_progress(None, n)  # its task's context, not one made here
    else:
        check(lib().vlcs_ctx_progress(None, n))


def _units(units: int) -> int:
    """A count of progress units, checked (an int >= 0; not a bool)."""
    if not isinstance(units, int) or isinstance(units, bool) or units < 0:
        raise InvalidArgumentError(f"progress units must be a whole number >= 0, not {units!r}")
    return units


# The environment variables glibc reads for itself (not through getenv
# calls a copy makes): in copy mode the process's.
_LIBC_OWN_VARIABLES = frozenset(
    {
        "TZ",
        "TZDIR",
        "LANG",
        "LANGUAGE",
        "LOCPATH",
        "GCONV_PATH",
        "NLSPATH",
        "TMPDIR",
        "HOSTALIASES",
        "RES_OPTIONS",
        "LOCALDOMAIN",
    }
)


def info() -> dict[str, Any]:
    """Every live context of this process, JSON-able.

    >>> import json, vlcs
    >>> _ = json.dumps(vlcs.info())
    """
    from vlcs._lib import auto_services, node_ledger, room, strict_active
    from vlcs._version import __version__

    return {
        "version": __version__,
        "strict": strict_active(),
        "node_ledger": node_ledger(),
        "cpus_usable": sorted(_views.real_sched_getaffinity(0)),
        "python": _interpreter.report(),
        "auto_services": auto_services(),
        "room": room(),
        "contexts": [c.info() for c in list(_contexts.values())],
    }


class _NativeSide:
    """A context's native side as import isolation sees it (the
    ``_owners.NativeSide`` protocol): loads into its namespace, its state
    dict, what keeps it loaded."""

    __slots__ = ("_ctx",)

    def __init__(self, ctx: VLC) -> None:
        self._ctx = ctx

    @property
    def name(self) -> str:
        return self._ctx.name

    def namespace_handle(self) -> int | None:
        return self._ctx._any_handle

    def load_handle(self, path: str | bytes) -> int:
        return self._ctx._load_handle(path)

    def scope_handle(self) -> int:
        ctx = self._ctx
        handle = ctx._any_handle or ctx._load_handle("libc.so.6")
        if lib().vlcs_ctx_mode(ctx._h) == _MODE_COPIES:
            scope = lib().vlcs_ctx_scope(ctx._h)
            if not scope:
                fail()
            return int(scope)
        return namespace_root(handle)

    def loaded_handle(self, name: str) -> int | None:
        ctx = self._ctx
        if ctx._any_handle is None:
            return None
        if lib().vlcs_ctx_mode(ctx._h) == _MODE_COPIES:
            h = lib().vlcs_ctx_loaded(ctx._h, os.fsencode(name))
            return int(h) if h else None
        files = namespace_files(ctx._any_handle)
        if os.sep in name:
            path = files.get(os.path.realpath(name))
        else:
            path = next((p for p in files.values() if os.path.basename(p) == name), None)
        return ctx._load_handle(path) if path is not None else None

    def load_dll(self, path: str) -> ctypes.CDLL:
        return self._ctx._load(path)

    def give_state_dict(self) -> None:
        self._ctx._give_state_dict()

    def keep_native(self, what: str) -> None:
        self._ctx._keep_native(what)


def _adopt_thread(ctx: VLC) -> None:
    """The calling (new) thread belongs to ctx until it ends; nothing if ctx
    was closed before the thread ran."""
    h = ctx._handle
    if h is not None:
        lib().vlcs_thread_adopt(h)  # fails only for a context closed meanwhile


def _thread_owner() -> _imports.Owner:
    c = current()
    return c._owner if c is not None else _imports.BASE


def _view_open(ctx: VLC, path: str, flags: int) -> int:
    return int(lib().vlcs_view_open(ctx._h, os.fsencode(path), flags))

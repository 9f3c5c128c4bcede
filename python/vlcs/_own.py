"""A Python of a context's own: ``VLC(python="own")``.

The context's namespace starts with a copy of this interpreter's libpython
in its global scope (``vlcs_ctx_set_global_library``), so the runtime made
there, and every extension module it imports (numpy, its OpenBLAS...), are
the context's: its own GIL, its own ``sys.modules``.  Work reaches it as it
reaches a process pool, by pickle, but in one address space: the pickle of
the call goes in as bytes, protocol-5 buffers of the arguments (numpy
arrays) as views of the caller's memory, and the result comes back the
same way.  The host calls the runtime's C API through ctypes, which lets go
of the host's GIL: runtimes run Python at once, as processes do.

The runtime is made at the first task, with the caller's ``sys.path`` and
flags; it has no signal handlers (the process's stay the base's).  Closing
the context finalises it (``Py_FinalizeEx``: its atexit handlers run, its
output is flushed) and unloads it with everything it loaded, the extension
modules CPython never closes included; while the caller still has views of
a result's memory it is left running instead, until the process ends, when
its atexit handlers run.  A child forked from the process cannot use it (it
says so).
"""

from __future__ import annotations

import atexit
import collections
import ctypes
import functools
import itertools
import os
import pickle
import queue
import sys
import threading
import weakref
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from vlcs import _own_views
from vlcs._errors import ContextFaultError, RemoteTraceback, UnsupportedPlatformError, VlcsError
from vlcs._interpreter import runtime_library
from vlcs._lib import check, fail, fault_error, lib
from vlcs._own_views import _addresses, _Owner, _views


class _Context(Protocol):
    """What a runtime uses of its VLC."""

    @property
    def _h(self) -> int: ...
    @property
    def _handle(self) -> int | None: ...
    @property
    def name(self) -> str: ...
    @property
    def mode(self) -> str | None: ...
    def getenv(self, name: str) -> str | None: ...
    def setenv(self, name: str, value: str) -> None: ...
    def unsetenv(self, name: str) -> None: ...


@functools.cache
def _bootstrap_code() -> bytes:
    """The runtime's bootstrap, the text of vlcs._own_views then of
    vlcs._own_runtime, compiled here (marshal: the same CPython) so that no
    runtime compiles it again."""
    import marshal

    with open(_own_views.__file__, encoding="utf-8") as f:
        source = f.read()
    # never imported: it runs only as a runtime's __main__
    with open(
        os.path.join(os.path.dirname(_own_views.__file__), "_own_runtime.py"), encoding="utf-8"
    ) as f:
        source += f.read()
    return marshal.dumps(compile(source, "<vlcs runtime>", "exec", dont_inherit=True))


def _context_environ(ctx: _Context) -> dict[str, str]:
    """A copy-mode context's environment, as its runtime's os.environ starts."""
    out, i = {}, 0
    while (entry := lib().vlcs_ctx_env_entry(ctx._h, i)) is not None:
        name, _, value = os.fsdecode(entry).partition("=")
        out[name] = value
        i += 1
    return out


def _dumps(obj: Any, buffers: list[pickle.PickleBuffer]) -> bytes:
    """obj pickled as for a process pool: by reference where it can be
    imported, by value (cloudpickle) for lambdas and functions of __main__."""
    import cloudpickle  # at first use: import vlcs stays light

    return cloudpickle.dumps(obj, protocol=5, buffer_callback=buffers.append)


class Runtime:
    """The CPython runtime of one context, made at its first call."""

    def __init__(self, ctx: _Context) -> None:
        self._ctx = ctx
        self._lock = threading.Lock()
        self._api: dict[str, Any] | None = None
        self._pid = 0
        self._tokens = itertools.count(1)
        self._lent: dict[int, list[Any]] = {}  # the caller's buffers the runtime's views use
        # the runtime's results no view here uses any more (appended by
        # finalizers, at any time: a deque, never swapped)
        self._dropped: collections.deque[int] = collections.deque()
        # the runtime's results the caller still has views of (their memory
        # is the runtime's: it cannot be finalised while one lives)
        self._viewed: set[int] = set()
        self._calls = 0  # tasks running now
        self._finished = False
        # its object arenas, given back once it is finalised and unloaded
        # (vlcs_arenas_release: Py_FinalizeEx leaves most of them in use)
        self._arenas: int | None = None
        self._code_at = 0  # an address in its libpython, to see that it went
        self._home: _Home | None = None
        # a task faulted: the runtime's GIL stays with the task cut short,
        # and nothing may call into it again (not even its atexit)
        self._broken = False
        self._call_no_args = 0  # its PyObject_CallNoArgs, run through vlcs_ctx_call
        check(lib().vlcs_ctx_set_global_library(ctx._h, runtime_library().encode()))

    @property
    def started(self) -> bool:
        return self._api is not None

    def _start(self) -> dict[str, Any]:
        with self._lock:
            if self._api is not None:
                return self._api
            if self._finished:
                raise VlcsError(f"the Python of context {self._ctx.name!r} was finalised")
            ctx = self._ctx
            handle = lib().vlcs_ctx_load(ctx._h, runtime_library().encode())
            if not handle:
                fail()
            _check_version(handle)
            api = {name: _function(handle, name, *sig) for name, sig in _SIGNATURES.items()}
            self._call_no_args = lib().vlcs_ctx_sym(handle, b"PyObject_CallNoArgs")
            if not self._call_no_args:
                fail()
            # The runtime reads its paths and flags from the context's
            # environment when it starts; they are put back as they were
            # once it runs, so that its own children see the context's.
            given = {
                "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
                "PYTHONHOME": sys.base_prefix,
                "PYTHONNOUSERSITE": "1" if sys.flags.no_user_site else None,
                "PYTHONUTF8": "1" if sys.flags.utf8_mode else "0",
                "PYTHONDONTWRITEBYTECODE": "1" if sys.dont_write_bytecode else None,
            }
            restore = {name: ctx.getenv(name) for name in given}
            for name, value in given.items():
                if value is None:
                    ctx.unsetenv(name)
                else:
                    ctx.setenv(name, value)
            environ = _context_environ(ctx) if ctx.mode == "copies" else None
            # Its vlcs reports progress to this libvlcs (vlcs._lib.host_lib):
            # its tasks' context is this one's, not its own copy's.
            host = (lib()._name, lib()._handle)
            given_now = (sys.executable, runtime_library(), environ, restore, host)
            boot = (
                f"_vlcs_given = {given_now!r}\n"
                f"import marshal as _m\nexec(_m.loads({_bootstrap_code()!r}))\ndel _m\n"
            )
            # No site: the caller's sys.path, with what its .pth files added,
            # is given whole; reading them again costs 35 ms a runtime here.
            no_site = lib().vlcs_ctx_sym(handle, b"Py_NoSiteFlag")
            if no_site:
                ctypes.c_int.from_address(no_site).value = 1
            self._arenas = lib().vlcs_arenas_new()
            if not self._arenas:
                fail()
            arenas = _ArenaAllocator(
                self._arenas, _address("vlcs_arenas_alloc"), _address("vlcs_arenas_free")
            )
            api["PyObject_SetArenaAllocator"](ctypes.byref(arenas))  # copied by CPython
            self._code_at = ctypes.cast(api["Py_InitializeEx"], ctypes.c_void_p).value or 0

            def initialise() -> int:
                check(lib().vlcs_enter(ctx._h))
                try:
                    api["Py_InitializeEx"](0)  # 0: no signal handlers: the process's are the base's
                    failed = api["PyRun_SimpleString"](boot.encode())
                    api["PyEval_SaveThread"]()  # its GIL, free for any thread
                finally:
                    lib().vlcs_leave()
                return failed

            self._home = _Home(f"vlcs-python-{ctx.name}")
            failed = self._home.run(initialise)
            if failed:
                raise VlcsError(
                    f"the Python of context {ctx.name!r} could not start (its error is above)"
                )
            self._api = api
            self._pid = os.getpid()
            _started.add(self)
            return api

    def _view_gone(self, token: int) -> None:
        """The caller's last view of a result is gone (a finalizer: any thread)."""
        self._viewed.discard(token)
        self._dropped.append(token)

    def finish(self) -> bool:
        """Finalise the runtime, on the thread that initialised it (_Home):
        its atexit handlers run and its output is flushed, as at a
        process's exit.  False, and nothing done, while the caller has views
        of a result's memory (or a task runs, or this is a forked child), or
        for a runtime in a namespace (libstdc++ and what binds its unique
        symbols stay loaded whatever is done): it then lives until the
        process ends.  The context, destroyed next, unloads what it loaded."""
        with self._lock:
            api = self._api
            if api is None:
                return True
            if (
                self._broken
                or self._viewed
                or self._calls
                or self._pid != os.getpid()
                or self._ctx.mode != "copies"
            ):
                return False
            self._api = None
            self._finished = True
            _started.discard(self)

            def finalise() -> None:
                check(lib().vlcs_enter(self._ctx._h))
                try:
                    api["PyGILState_Ensure"]()  # the thread state finalising ends with it
                    api["PyRun_SimpleString"](_THREADS_AT_FINALIZE)
                    api["Py_FinalizeEx"]()
                finally:
                    lib().vlcs_leave()

            assert self._home is not None
            try:
                self._home.run(finalise)
            finally:
                self._home.stop()
            self._lent.clear()  # the runtime's views of them went with it
            return True

    def release(self) -> int:
        """Once the context is destroyed: the object arenas a finalised
        runtime left unmapped, if its libpython was unloaded with it (then
        no code that could use those objects is left); the bytes given back."""
        with self._lock:
            if not self._finished or not self._arenas or _loaded(self._code_at):
                return 0
            arenas, self._arenas = self._arenas, None
        return int(lib().vlcs_arenas_release(arenas))

    def call(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
        """fn(*args, **kwargs) run by the context's runtime, on this thread."""
        with self._lock:
            self._calls += 1
        try:
            return self._call(fn, args, kwargs)
        finally:
            with self._lock:
                self._calls -= 1

    def _call(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: Mapping[str, Any]
    ) -> Any:
        api = self._start()
        if self._pid != os.getpid():
            raise VlcsError(
                f"the Python of context {self._ctx.name!r} was made before this process forked, "
                "and a child cannot use it (the threads it had stayed in the parent): make a new "
                "context in the child"
            )
        buffers: list[pickle.PickleBuffer] = []
        payload = _dumps((fn, args, dict(kwargs)), buffers)
        keep: list[Any] = []
        triples = _addresses(buffers, keep)
        del buffers
        with self._lock:
            lent = next(self._tokens) if keep else 0
            if keep:
                self._lent[lent] = keep
            dropped = [self._dropped.popleft() for _ in range(len(self._dropped))]
        del keep
        request = pickle.dumps((lent, triples, payload, dropped), protocol=5)
        if lib().vlcs_enter(self._ctx._h) != 0:
            raise fault_error(self._ctx._h)  # a broken context's error carries its report
        state = api["PyGILState_Ensure"]()
        faulted = False
        try:
            reply = _run_task(api, request, self._ctx._h, self._call_no_args)
        except ContextFaultError:
            # Its GIL and thread state stay with the task cut short.
            faulted = self._broken = True
            raise
        finally:
            if not faulted:
                api["PyGILState_Release"](state)
            lib().vlcs_leave()
        token, triples, data, released = pickle.loads(reply)
        with self._lock:
            for t in released:
                self._lent.pop(t, None)
        owner = _Owner()
        if token:
            self._viewed.add(token)
            weakref.finalize(owner, self._view_gone, token)
        outcome = pickle.loads(data, buffers=_views(triples, owner))
        del owner
        if outcome[0] == "ok":
            return outcome[1]
        _, exc, tb = outcome
        if not isinstance(exc, BaseException):
            exc = VlcsError(f"a task in context {self._ctx.name!r} failed")
        raise exc from RemoteTraceback(tb)


class _Home:
    """The thread a runtime is initialised and finalised on.  CPython 3.13
    crashed finalising a runtime on another thread than the one that had
    initialised it (a thread state with no interpreter, in the collection
    of finalize_modules: 6 runs in 12 of 20 copy-mode workers closed by the
    main thread; 0 in 12 finalised on their initialising threads), and the
    threads that start runtimes (a pool's workers, a context's executor,
    the caller's) may be gone by then."""

    def __init__(self, name: str) -> None:
        from vlcs._isolation.threads import base_thread

        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread = base_thread(threading.Thread(target=self._serve, name=name, daemon=True))
        self._thread.start()

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            fn, done = job
            try:
                done.set_result(fn())
            except BaseException as e:
                done.set_exception(e)

    def run(self, fn: Callable[[], Any]) -> Any:
        """fn() on this thread; its result, or its exception raised here."""
        from concurrent.futures import Future  # here: vlcs's import skips it and logging

        done: Future[Any] = Future()
        self._jobs.put((fn, done))
        return done.result()

    def stop(self) -> None:
        self._jobs.put(None)
        self._thread.join()


# Run before Py_FinalizeEx.  threading's own _shutdown waits for the thread
# that first imported threading in the runtime to end, unless that is the
# finalising thread (bpo-1596321): here it is a host thread that lives on.
# This one does the rest of its work: threading's atexit calls (executors
# joining their workers), then every other non-daemon thread joined.
_THREADS_AT_FINALIZE = b"""
import sys as _s
_t = _s.modules.get("threading")
if _t is not None:
    def _vlcs_shutdown(_t=_t):
        _t._SHUTTING_DOWN = True
        for _f in reversed(getattr(_t, "_threading_atexits", [])):
            _f()
        _me = _t.current_thread()
        for _th in _t.enumerate():
            if _th is not _me and _th is not _t._main_thread and not _th.daemon:
                _th.join()
    _t._shutdown = _vlcs_shutdown
del _s, _t
"""

_started: weakref.WeakSet[Runtime] = weakref.WeakSet()


@atexit.register
def _at_exit() -> None:
    """The runtimes' atexit handlers, and their output flushed, as each
    would at its own exit (those still running: see the module)."""
    for rt in list(_started):
        if rt._pid != os.getpid() or rt._api is None or rt._broken:
            continue
        api = rt._api
        handle = rt._ctx._handle  # None once closed: its namespace stays, unentered
        entered = handle is not None and lib().vlcs_enter(handle) == 0
        if not entered:  # this thread's locale tables of the namespace's libc, as entering sets
            api["__ctype_init"]()
        state = api["PyGILState_Ensure"]()
        try:
            api["PyRun_SimpleString"](
                b"import atexit as _a, sys as _s\n_a._run_exitfuncs()\n"
                b"for _f in (_s.stdout, _s.stderr):\n    _f.flush()\n"
            )
        finally:
            api["PyGILState_Release"](state)
            if entered:
                lib().vlcs_leave()


def _run_task(api: dict[str, Any], request: bytes, ctx: int, call_no_args: int) -> bytes:
    """__main__._vlcs_task(request) in the runtime, its GIL held, through
    vlcs_ctx_call: a fault in the runtime's code (its libpython, its libc
    in a namespace, the extension modules and libraries it loaded) raises
    ContextFaultError here instead of ending the process."""
    main = api["PyImport_AddModule"](b"__main__")  # borrowed
    call = api["PyObject_GetAttrString"](main, b"_vlcs_call")
    arg = api["PyBytes_FromStringAndSize"](request, len(request))
    api["PyObject_SetAttrString"](main, b"_vlcs_request", arg)
    api["Py_DecRef"](arg)
    out = ctypes.c_void_p()
    if lib().vlcs_ctx_call(ctx, call_no_args, call, ctypes.byref(out)) != 0:
        raise fault_error(ctx)  # what the task held is the broken runtime's
    api["Py_DecRef"](call)
    reply = out.value
    if not reply:
        api["PyErr_Print"]()
        raise VlcsError("the worker runtime failed outside the task (its error is above)")
    try:
        data, size = ctypes.c_char_p(), ctypes.c_ssize_t()
        api["PyBytes_AsStringAndSize"](reply, ctypes.byref(data), ctypes.byref(size))
        return ctypes.string_at(data, size.value)
    finally:
        api["Py_DecRef"](reply)


class _ArenaAllocator(ctypes.Structure):
    """CPython's PyObjectArenaAllocator."""

    _fields_ = (("ctx", ctypes.c_void_p), ("alloc", ctypes.c_void_p), ("free", ctypes.c_void_p))


def _address(name: str) -> int:
    """The address of one of libvlcs's functions."""
    return ctypes.cast(getattr(lib(), name), ctypes.c_void_p).value or 0


class _DlInfo(ctypes.Structure):
    _fields_ = (
        ("dli_fname", ctypes.c_char_p),
        ("dli_fbase", ctypes.c_void_p),
        ("dli_sname", ctypes.c_char_p),
        ("dli_saddr", ctypes.c_void_p),
    )


def _loaded(address: int) -> bool:
    """Whether a loaded object holds address (dladdr)."""
    dladdr = ctypes.CDLL(None).dladdr
    dladdr.argtypes = (ctypes.c_void_p, ctypes.POINTER(_DlInfo))
    return bool(dladdr(address, ctypes.byref(_DlInfo())))


_P = ctypes.c_void_p
_SIGNATURES: dict[str, tuple[Any, ...]] = {
    "Py_InitializeEx": (None, ctypes.c_int),
    "Py_FinalizeEx": (ctypes.c_int,),
    "PyEval_SaveThread": (_P,),
    "PyGILState_Ensure": (ctypes.c_int,),
    "PyGILState_Release": (None, ctypes.c_int),
    "PyRun_SimpleString": (ctypes.c_int, ctypes.c_char_p),
    "PyImport_AddModule": (_P, ctypes.c_char_p),
    "PyObject_GetAttrString": (_P, _P, ctypes.c_char_p),
    "PyBytes_FromStringAndSize": (_P, ctypes.c_char_p, ctypes.c_ssize_t),
    "PyBytes_AsStringAndSize": (
        ctypes.c_int,
        _P,
        ctypes.POINTER(ctypes.c_char_p),
        ctypes.POINTER(ctypes.c_ssize_t),
    ),
    "PyObject_SetAttrString": (ctypes.c_int, _P, ctypes.c_char_p, _P),
    "Py_DecRef": (None, _P),
    "PyErr_Print": (None,),
    "PyObject_SetArenaAllocator": (None, _P),
    "__ctype_init": (None,),  # the namespace's libc's, found through libpython's dependencies
}


def _check_version(handle: int) -> None:
    """Refuse a libpython of another version than this interpreter's (its
    stdlib, its bytecode and vlcs's bootstrap are this one's):
    Py_GetVersion answers before the runtime is initialised."""
    version = _function(handle, "Py_GetVersion", ctypes.c_char_p)().decode()
    mine = f"{sys.version_info.major}.{sys.version_info.minor}"
    if not version.startswith(mine + "."):
        raise UnsupportedPlatformError(
            f"python='own' needs a libpython {mine} like this interpreter, and "
            f"{runtime_library()} is {version.split()[0]}: install the libpython{mine} of this "
            "interpreter's distribution"
        )


def _function(handle: int, name: str, restype: Any, *argtypes: Any) -> Any:
    """A C function of the runtime's libpython, called without the host's GIL."""
    address = lib().vlcs_ctx_sym(handle, name.encode())
    if not address:
        fail()
    return ctypes.CFUNCTYPE(restype, *argtypes)(address)

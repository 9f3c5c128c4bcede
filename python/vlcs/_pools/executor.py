"""A process pool without processes: ``vlcs.ContextPoolExecutor``.

A drop-in for :class:`concurrent.futures.ProcessPoolExecutor` whose workers
are contexts of this process instead of child processes: each worker is a
context (its own copies of the libraries and Python packages its tasks
import, its own CPUs) with one thread that runs the tasks inside it.

Tasks are handed over as a process pool hands them over, by pickle: the
function and its arguments are pickled in the caller and unpickled inside
the worker's context, so functions and classes are resolved by module and
name there, to the context's own numpy, scipy, h5py...  Results come back
the same way, to the caller's modules.  Pickle protocol 5's out-of-band
buffers make numpy arrays (and anything that pickles its memory that way)
cross as views of the same memory; ``bytes`` of 64 KiB or more and
``memoryview`` objects cross as themselves.  Nothing is copied, so a task
that writes into an array argument writes into the caller's array, as a
thread would.  Functions and classes defined in ``__main__`` (a script, a
notebook) are pickled by value (cloudpickle), with the names they use
resolved in the context, as a forked worker would see them.

>>> import os
>>> from vlcs import ContextPoolExecutor
>>> with ContextPoolExecutor(max_workers=2) as pool:
...     sorted(pool.map(abs, [-1, -2, 3]))
[1, 2, 3]
>>> with ContextPoolExecutor(max_workers=1, cpus="0") as pool:
...     pool.submit(os.sched_getaffinity, 0).result()
{0}

What differs from processes, on purpose: the workers share one
interpreter, so pure-Python work takes turns on the GIL (native code that
releases it, as BLAS, LAPACK, HDF5 and torch do, runs in parallel).  A
task that crashes in native code (a segmentation fault, ``abort()``) fails
with :class:`BrokenContextPool` and its worker goes on in a fresh context,
when the crash is in code of the worker's own (its private libraries and
extension modules; with ``python="own"`` its whole Python); a crash in code
it shares with the process (the base's libpython and libc) still ends the
process, as with threads (docs/faults.md).
"""

from __future__ import annotations

import atexit
import concurrent.futures
import functools
import importlib
import io
import itertools
import os
import pickle
import queue
import threading
import traceback
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures.process import BrokenProcessPool
from typing import Any, NamedTuple

from vlcs._context import _MODE_COPIES, PYTHONS, VLC
from vlcs._cpus import CpuList, split_gpus
from vlcs._errors import RemoteTraceback as _RemoteTraceback
from vlcs._errors import VlcsLimitError
from vlcs._isolation.imports import share as _share
from vlcs._isolation.threads import base_thread
from vlcs._lib import check, lib
from vlcs._topo import worker_homes
from vlcs._trace import mark as _mark

__all__ = ["BrokenContextPool", "ContextPoolExecutor"]

# glibc has 16 linker namespaces; the base holds one.
_MAX_NAMESPACES = 15
# bytes at least this long are handed over as the same object (immutable)
_BYTES_BY_REFERENCE = 1 << 16


class BrokenContextPool(BrokenProcessPool):
    """A worker's context cannot go on.  A subclass of
    :class:`concurrent.futures.process.BrokenProcessPool`, so code written
    for a process pool catches it.

    A task that faults in native code (a segmentation fault, ``abort()``)
    fails with this, its :class:`vlcs.ContextFaultError` as ``__cause__``;
    the worker gets a fresh context and the pool goes on, as loky replaces
    a worker that died.  When the pool itself cannot go on (a worker's
    initializer raised, or no fresh context could be made), pending tasks
    fail with this and ``submit`` raises it."""


# --- handing objects over -------------------------------------------------------------


class _Payload(NamedTuple):
    data: bytes
    buffers: list[pickle.PickleBuffer]  # out-of-band: the same memory on both sides
    refs: list[Any]  # objects handed over as themselves


class _PicklerMixin:
    """What vlcs adds to cloudpickle's Pickler: large bytes and memoryviews
    handed over as themselves."""

    _refs: list[Any]

    def persistent_id(self, obj: Any) -> int | None:
        kind = type(obj)
        if kind is bytes:
            if len(obj) < _BYTES_BY_REFERENCE:
                return None
        elif kind is memoryview:
            obj = memoryview(obj)  # a view of its own: the caller may release theirs
        else:
            return None
        self._refs.append(obj)
        return len(self._refs) - 1


# The pickler of each owner's cloudpickle.  A context that unpickles a
# function pickled by value imports a cloudpickle of its own; its results
# must then be pickled by that copy, whose lookups are the context's (the
# base's copy looks names up in the base's modules).
_picklers: weakref.WeakKeyDictionary[Any, type] = weakref.WeakKeyDictionary()


def _pickler(file: io.BytesIO, payload: _Payload) -> Any:
    module = importlib.import_module("cloudpickle")  # the calling thread's owner's
    cls = _picklers.get(module)
    if cls is None:
        cls = _picklers[module] = type("_Pickler", (_PicklerMixin, module.Pickler), {})
    p = cls(file, protocol=5, buffer_callback=payload.buffers.append)
    p._refs = payload.refs
    return p


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, payload: _Payload) -> None:
        super().__init__(file, buffers=payload.buffers)
        self._refs = payload.refs

    def persistent_load(self, pid: Any) -> Any:
        return self._refs[pid]


def dumps(obj: Any) -> _Payload:
    """obj pickled for another owner: protocol 5, buffers out of band."""
    f = io.BytesIO()
    payload = _Payload(b"", [], [])
    _pickler(f, payload).dump(obj)
    return payload._replace(data=f.getvalue())


def loads(payload: _Payload) -> Any:
    """The objects of payload, resolved by the calling thread's owner."""
    return _Unpickler(io.BytesIO(payload.data), payload).load()


def _failure(exc: BaseException) -> _Payload:
    """A task's exception with its traceback, pickled in its context; if the
    exception itself cannot be pickled, the pickling error takes its place
    (as ProcessPoolExecutor does), its text naming the original."""
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    exc.__traceback__ = None  # the context's frames are not kept alive by it
    try:
        return dumps((exc, tb))
    except Exception as e:
        text = f"{e} (pickling the exception of a task: {exc!r})"
        try:
            stand_in: BaseException = type(e)(text)
            return dumps((stand_in, tb))
        except Exception:
            return dumps((RuntimeError(text), tb))


def _outcome(
    payload: _Payload, run: Callable[[Any, tuple[Any, ...], dict[str, Any]], Any]
) -> tuple[bool, _Payload]:
    """The task of payload run by run(fn, args, kwargs): (True, its result
    pickled) or (False, its failure pickled)."""
    try:
        fn, args, kwargs = loads(payload)
        result = run(fn, args, kwargs)
    except BaseException as e:
        return False, _failure(e)
    try:
        return True, dumps(result)
    except BaseException as e:
        return False, _failure(e)


def _unpack(outcome: tuple[bool, _Payload]) -> tuple[bool, Any]:
    """(True, the result) or (False, the exception, the context's traceback
    as its __cause__); unpickling that fails gives (False, its error)."""
    ok, payload = outcome
    try:
        value = loads(payload)
    except BaseException as e:
        return False, e
    if ok:
        return True, value
    exc, tb = value
    exc.__cause__ = _RemoteTraceback(tb)
    return False, exc


# --- the workers --------------------------------------------------------------------------


class _WorkItem(NamedTuple):
    future: concurrent.futures.Future[Any]
    payload: _Payload
    name: str = "task"  # the function's, for the trace


class _Worker:
    """One context and the thread that runs tasks inside it."""

    def __init__(self, pool: ContextPoolExecutor, index: int, ctx: VLC) -> None:
        self.pool = pool
        self.index = index
        self.ctx = ctx
        # the base's, whichever context makes the pool: it enters its own
        self.thread = base_thread(
            threading.Thread(target=self._run, name=f"vlcs-{pool._name}-{index}", daemon=True)
        )

    def _run(self) -> None:
        pool = self.pool
        try:
            if not self._initialise():
                return
            done = 0
            while True:
                item = pool._queue.get()
                if item is None:
                    return
                if not item.future.set_running_or_notify_cancel():
                    continue
                _mark(f"task {item.name}", "B")
                faulted = False
                try:
                    outcome = self._call(item.payload)
                except BaseException as e:  # vlcs's part failed (the context was closed)
                    item.future.set_exception(e)
                else:
                    faulted = self.ctx.fault is not None
                    if faulted:
                        # a fresh context takes the broken one's place
                        # before the caller hears of the fault
                        error = self._fault(item.name, outcome)
                        renewed = self._renew()
                        item.future.set_exception(error)
                        if not renewed:
                            return
                    else:
                        self._deliver(item.future, outcome)
                _mark(f"task {item.name}", "E")
                item = outcome = None  # the payloads go before the next wait
                done += 1
                if faulted:
                    done = 0
                elif pool._max_tasks_per_child is not None and done >= pool._max_tasks_per_child:
                    if not self._renew():
                        return
                    done = 0
        finally:
            pool._worker_exited()

    def _call(self, payload: _Payload) -> tuple[bool, _Payload]:
        """Unpickle, run and pickle the outcome inside the context (in a
        context with a Python of its own, its runtime runs the task, handed
        on by pickle)."""
        own = self.ctx._own
        if own is not None:
            return _outcome(payload, own.call)
        ctx = self.ctx
        with ctx:  # unpickled and pickled inside too: names resolve to its modules
            return _outcome(payload, lambda fn, args, kwargs: ctx.call(fn, *args, **kwargs))

    def _fault(self, name: str, outcome: tuple[bool, _Payload]) -> BrokenContextPool:
        """What the future of a task that faulted raises: BrokenContextPool,
        as a process pool's task whose worker died, the ContextFaultError
        (its report) as its cause."""
        _, cause = _unpack(outcome)
        first = (self.ctx.fault or "").partition("\n")[0]
        err = BrokenContextPool(
            f"task {name} faulted in worker {self.index}'s context ({first}); the worker goes "
            "on in a fresh context, and the pool's other tasks are unaffected"
        )
        err.__cause__ = cause
        return err

    @staticmethod
    def _deliver(future: concurrent.futures.Future[Any], outcome: tuple[bool, _Payload]) -> None:
        """The outcome unpickled by the caller's side (the base), outside the context."""
        ok, value = _unpack(outcome)
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def _initialise(self) -> bool:
        pool = self.pool
        own = self.ctx._own
        if own is not None:
            # Started now, at the pool's first submit, by every worker at
            # once: a runtime's start is not on the path of the first task
            # each worker takes.
            try:
                own._start()
            except BaseException as e:
                pool._break(
                    f"worker {self.index}'s Python could not start ({type(e).__name__}: {e}); "
                    "the pool is not usable anymore",
                    e,
                )
                return False
        if pool._initializer is None:
            return True
        ok, exc = _unpack(self._call(pool._initializer))
        if ok:
            return True
        pool._break(
            f"the initializer raised in worker {self.index}'s context "
            f"({type(exc).__name__}: {exc}); the pool is not usable anymore",
            exc,
        )
        return False

    def _renew(self) -> bool:
        """max_tasks_per_child: a fresh context for the next tasks."""
        pool = self.pool
        old = self.ctx
        old._close(warn=False)
        try:
            self.ctx = pool._make_context(self.index)
        except VlcsLimitError as e:
            self.ctx = old  # closed already: closing it again at the end does nothing
            pool._break(
                f"max_tasks_per_child={pool._max_tasks_per_child}: no fresh context could be "
                f"made for worker {self.index} ({e}); a context that imported extension modules "
                "keeps its namespace when closed, so such workers cannot be renewed for ever: "
                "use max_tasks_per_child=None",
                e,
            )
            return False
        return self._initialise()


# --- the executor -------------------------------------------------------------------------

_live: weakref.WeakSet[ContextPoolExecutor] = weakref.WeakSet()
_exiting = False


class ContextPoolExecutor(concurrent.futures.Executor):
    """``ProcessPoolExecutor`` with contexts as its workers.

    max_workers: how many workers (contexts), by default one per CPU of
        ``cpus``.  The first 15 get linker namespaces of their own (fewer
        without ``vlcs run``), the others renamed copies of their libraries
        (copy mode, docs/copy-mode.md), ``python="own"`` too.
    mp_context: accepted for drop-in use and ignored (there are no processes).
    initializer, initargs: run as ``initializer(*initargs)`` in each
        worker's context before its first task (the workers start with the
        first submit, as ProcessPoolExecutor's processes do, so that the
        futures of the first tasks, never submit itself, report an
        initializer that raised); if it raises, the pool is broken
        (:class:`BrokenContextPool`).
    max_tasks_per_child: after that many tasks a worker's context is closed
        and a fresh one made (its modules imported afresh).  A context that
        imported extension modules keeps its namespace (or its copies), so
        each renewal keeps that memory for the rest of the process; with
        ``python="own"`` the worker's runtime is finalised (its atexit
        handlers run) and unloaded with what it imported (its workers are
        copy-mode contexts, docs/copy-mode.md), unless a library keeps a
        thread of its own running (pyarrow) or marks itself not to be
        unloaded (OpenSSL's libcrypto, through hashlib), or the caller
        still has views of a result's memory (the runtime lives on).
    cpus: the CPUs of the pool, split evenly among the workers (a CPU list
        like "0-3" or CPU ids; default: every CPU the process may use), or
        one CPU list per worker (["0", "1"]); places like "numa:0" too.
    places: split the CPUs along the machine's topology ("l3", "numa",
        "package", "core", "pu"): each worker's CPUs inside one such domain
        where they fit, hardware threads of a core together (hwloc).
    env: environment variables set in every worker's context, or one
        mapping per worker.
    share: top-level packages kept shared (one copy, the caller's; see
        :func:`vlcs.share`), for objects that must be the same in the
        caller and the tasks.
    elastic: let a busy worker borrow the CPUs of idle ones (every worker
        elastic over the pool's CPUs; see ``VLC.set_elastic``).
    gpus: the GPUs of the pool ("0-3" or ids), split among the workers as
        CPUs are: one each when there are as many, taken in turn when there
        are fewer; or one GPU list per worker (["0", "1"]).  Each worker's
        code sees its share as devices 0, 1, ... (``VLC.set_gpus``);
        default: every worker sees the process's GPUs.
    python: "shared" (the default): the workers run tasks on this
        interpreter, taking turns on its GIL for pure-Python work; "own":
        each worker is a context with a CPython runtime of its own (see
        ``VLC(python="own")``), so pure-Python tasks run in parallel too.
    name: workers' contexts and threads are called name-0, name-1...
    """

    def __init__(
        self,
        max_workers: int | None = None,
        mp_context: Any = None,
        initializer: Callable[..., Any] | None = None,
        initargs: tuple[Any, ...] = (),
        *,
        max_tasks_per_child: int | None = None,
        cpus: CpuList | Sequence[CpuList] | None = None,
        env: Mapping[str, str] | Sequence[Mapping[str, str]] | None = None,
        share: Iterable[str] = (),
        elastic: bool = False,
        name: str = "worker",
        places: str | None = None,
        python: str = "shared",
        gpus: str | Iterable[int] | Sequence[str | Iterable[int]] | None = None,
    ) -> None:
        if python not in PYTHONS:
            raise ValueError(f"python must be one of {', '.join(PYTHONS)}; got {python!r}")
        if max_workers is not None and (
            not isinstance(max_workers, int) or isinstance(max_workers, bool)
        ):
            raise TypeError(f"max_workers must be an int; got {max_workers!r}")
        if max_workers is not None and max_workers <= 0:
            raise ValueError("max_workers must be greater than 0")
        if max_tasks_per_child is not None:
            if not isinstance(max_tasks_per_child, int):
                raise TypeError("max_tasks_per_child must be an integer")
            if max_tasks_per_child <= 0:
                raise ValueError("max_tasks_per_child must be >= 1")
        if initializer is not None and not callable(initializer):
            raise TypeError("initializer must be a callable")
        homes, every = worker_homes(cpus, max_workers, places)
        n = len(homes)
        if env is None or isinstance(env, Mapping):
            envs: list[Mapping[str, str]] = [env or {}] * n
        else:
            envs = list(env)
            if len(envs) != n:
                raise ValueError(f"env gives {len(envs)} mappings for {n} workers (one per worker)")
        names = list(share)
        if names:
            _share(*names)
        self._homes = homes
        self._gpus = split_gpus(gpus, n)
        self._envs = envs
        self._elastic = every if elastic else None
        self._name = name
        self._python = python
        self._max_workers = n
        self._max_tasks_per_child = max_tasks_per_child
        self._initializer = (
            dumps((initializer, tuple(initargs), {})) if initializer is not None else None
        )
        self._queue: queue.SimpleQueue[_WorkItem | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._broken: str | None = None
        self._shutdown = False
        self._workers: list[_Worker] = []
        contexts = self._make_contexts()
        self._workers = [_Worker(self, i, c) for i, c in enumerate(contexts)]
        self._running = len(self._workers)
        self._started = False
        _live.add(self)

    def _start_workers(self) -> None:
        """Start the workers' threads, once (under _lock)."""
        if not self._started:
            self._started = True
            for w in self._workers:
                w.thread.start()

    def _make_context(self, i: int) -> VLC:
        ctx = VLC(
            cpus=self._homes[i],
            env=self._envs[i],
            name=f"{self._name}-{i}",
            python=self._python,
            gpus=self._gpus[i],
        )
        try:
            if self._python == "own" and self._max_tasks_per_child is not None:
                # renewed runtimes are unloaded whole only as copies: in a
                # namespace, libstdc++ and whatever binds its unique symbols
                # (numpy's core) stay for good
                check(lib().vlcs_ctx_set_mode(ctx._h, _MODE_COPIES))
            if self._elastic is not None:
                ctx.set_elastic(self._elastic)
            # the namespace now, so that a pool that does not fit says so here
            ctx._load_handle("libc.so.6")
        except BaseException:
            ctx._close(warn=False)
            raise
        return ctx

    def _make_contexts(self) -> list[VLC]:
        made: list[VLC] = []
        try:
            for i in range(self._max_workers):
                made.append(self._make_context(i))
        except VlcsLimitError as e:
            _close_all(made)
            tuned = "glibc.rtld.nns" in os.environ.get("GLIBC_TUNABLES", "")
            how = (
                f", or start the program with `vlcs run -- PROGRAM` (up to {_MAX_NAMESPACES})"
                if e.raised_by_vlcs_run and not tuned
                else ""
            )
            raise VlcsLimitError(
                f"ContextPoolExecutor(max_workers={self._max_workers}): this process has room for "
                f"{len(made)} more contexts (the limit of {e.limit} is reached); use "
                f"max_workers={max(len(made), 1)} or fewer, close contexts no longer "
                f"needed{how}",
                limit=e.limit_code,
            ) from e
        except BaseException:
            _close_all(made)
            raise
        return made

    def _worker_exited(self) -> None:
        """The last worker to stop closes every context, newest first."""
        with self._lock:
            self._running -= 1
            last = self._running == 0
        if last:
            _close_all([w.ctx for w in self._workers])

    # --- the Executor API -------------------------------------------------------------
    def submit(
        self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any
    ) -> concurrent.futures.Future[Any]:
        """Schedule fn(*args, **kwargs) in a worker's context; a Future.

        What cannot be pickled fails the future with pickle's exception, as
        with ProcessPoolExecutor."""
        with self._lock:
            if self._broken is not None:
                raise BrokenContextPool(self._broken)
            if self._shutdown:
                raise RuntimeError("cannot schedule new futures after shutdown")
            if _exiting:
                raise RuntimeError("cannot schedule new futures after interpreter shutdown")
            future: concurrent.futures.Future[Any] = concurrent.futures.Future()
            try:
                payload = dumps((fn, args, kwargs))
            except Exception as e:
                future.set_exception(e)
                return future
            name = getattr(fn, "__qualname__", None) or type(fn).__name__
            _mark(f"queued {name}", "i", pool=self._name)
            self._queue.put(_WorkItem(future, payload, name))
            self._start_workers()
            return future

    def map(
        self,
        fn: Callable[..., Any],
        *iterables: Iterable[Any],
        timeout: float | None = None,
        chunksize: int = 1,
    ) -> Iterator[Any]:
        """Like ProcessPoolExecutor.map: chunksize items are handed to a
        worker at a time, results come in order."""
        if chunksize < 1:
            raise ValueError("chunksize must be >= 1.")
        if chunksize == 1:
            return super().map(fn, *iterables, timeout=timeout)
        results = super().map(
            functools.partial(_process_chunk, fn),
            _chunks(*iterables, chunksize=chunksize),
            timeout=timeout,
        )
        return itertools.chain.from_iterable(results)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop the workers once the tasks submitted ran (the pending ones
        cancelled first with cancel_futures=True), then close their
        contexts; wait=True returns when that is done."""
        with self._lock:
            if cancel_futures:
                self._drain(lambda f: f.cancel())
            self._stop_workers()
            unstarted = not self._started
            if unstarted:  # nothing was ever submitted: no worker is left to close them
                self._started = True
                self._running = 0
        if unstarted:
            _close_all([w.ctx for w in self._workers])
        elif wait:
            for w in self._workers:
                # ident: None for the threads of a pool shut down before any submit
                if w.thread.ident is not None and w.thread is not threading.current_thread():
                    w.thread.join()

    # --- more than a process pool -------------------------------------------------------
    @property
    def contexts(self) -> list[VLC]:
        """The workers' contexts (for info(), threadpools(), set_num_threads())."""
        return [w.ctx for w in self._workers]

    @property
    def worker_cpus(self) -> list[list[int]]:
        """Each worker's home CPUs."""
        return [list(h) for h in self._homes]

    @property
    def worker_gpus(self) -> list[list[int] | None]:
        """Each worker's GPUs (None: the process's)."""
        return [None if g is None else list(g) for g in self._gpus]

    # --- failures -----------------------------------------------------------------------
    def _drain(self, fail: Callable[[concurrent.futures.Future[Any]], Any]) -> None:
        """Take every pending task off the queue (the workers' stops put back)."""
        stops = 0
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is None:
                stops += 1
            else:
                fail(item.future)
        for _ in range(stops):
            self._queue.put(None)

    def _break(self, message: str, cause: BaseException | None) -> None:
        """A worker cannot go on: the pool is broken, pending tasks fail."""

        def fail(f: concurrent.futures.Future[Any]) -> None:
            err = BrokenContextPool(message)
            err.__cause__ = cause
            if f.set_running_or_notify_cancel():
                f.set_exception(err)

        with self._lock:
            if self._broken is None:
                self._broken = message
            self._drain(fail)
            self._stop_workers()

    def _stop_workers(self) -> None:
        """One stop for each worker, behind the tasks queued (once; under _lock)."""
        if not self._shutdown:
            self._shutdown = True
            for _ in self._workers:
                self._queue.put(None)

    def _after_fork(self) -> None:
        self._broken = "the process forked: a ContextPoolExecutor's workers are not in the child"
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        state = "broken" if self._broken else "shut down" if self._shutdown else "running"
        return f"<vlcs.ContextPoolExecutor {self._name!r} workers={self.worker_cpus} {state}>"


def _close_all(contexts: list[VLC]) -> None:
    """Close contexts newest first: glibc takes static TLS back only from
    the end of what is in use, so closing in creation order would leave it
    in pieces too small for the next contexts (measured: 11 contexts closed
    oldest first left room for 1 new one, newest first for 11)."""
    for ctx in reversed(contexts):
        ctx._close(warn=False)


def _process_chunk(fn: Callable[..., Any], chunk: list[tuple[Any, ...]]) -> list[Any]:
    return [fn(*args) for args in chunk]


def _chunks(*iterables: Iterable[Any], chunksize: int) -> Iterator[list[tuple[Any, ...]]]:
    it = zip(*iterables, strict=False)  # map stops at the shortest, as zip
    while chunk := list(itertools.islice(it, chunksize)):
        yield chunk


def _at_exit() -> None:
    """Like concurrent.futures: at exit, the pools left running finish what
    was submitted before the interpreter goes."""
    global _exiting
    _exiting = True
    for pool in list(_live):
        pool.shutdown(wait=True)


def _after_fork_in_child() -> None:
    for pool in list(_live):
        pool._after_fork()


atexit.register(_at_exit)
os.register_at_fork(after_in_child=_after_fork_in_child)

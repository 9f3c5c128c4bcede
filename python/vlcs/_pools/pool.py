"""Reusable contexts: ``vlcs.ContextPool``.

A context that imported numpy can never give its namespace back (an array
made by its numpy may outlive it, and its type lives in that numpy's code),
and glibc has at most 16 namespaces.  A server that wants a clean context
per request therefore takes one from a pool: made once, handed out to one
user at a time, and put back with its CPU set and environment variables as
the pool made them and a reset hook run.  Modules a context imported stay
imported: the second ``import numpy`` of a pooled context is a lookup.

>>> import vlcs
>>> pool = vlcs.ContextPool(cpus=["0", "0"], env={"OMP_NUM_THREADS": "1"})
>>> with pool.context() as ctx:
...     ctx.getenv("OMP_NUM_THREADS")
'1'
>>> pool.submit(sum, [1, 2]).result()
3
>>> pool.close()
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from vlcs._context import PYTHONS, VLC, current
from vlcs._cpus import CpuList, resolve, split_gpus
from vlcs._errors import ContextBusyError, ContextDestroyedError
from vlcs._isolation.threads import starting_in_base
from vlcs._topo import worker_homes


def _homes(cpus: CpuList | Sequence[CpuList] | None, size: int | None) -> list[CpuList | None]:
    """One CPU list (or None: every CPU) per context."""
    if cpus is None or isinstance(cpus, str):
        each: list[CpuList | None] = [cpus] * (size if size is not None else 1)
    else:
        items = list(cpus)
        if items and all(isinstance(c, int) and not isinstance(c, bool) for c in items):
            each = [items] * (size if size is not None else 1)
        else:
            each = items
            if size is not None and size != len(each):
                raise ValueError(
                    f"size={size} but cpus gives {len(each)} CPU lists (one per context)"
                )
    if not each:
        raise ValueError("a ContextPool needs at least one context (size >= 1)")
    return each


class ContextPool:
    """Contexts made once and reused, one user at a time.

    size: how many contexts (made when first needed); default 1, or one per
    entry of cpus when cpus is a list of CPU lists.
    cpus: a CPU list for every context ("0-1", [0, 1]), or one per context
    (["0", "1"]).
    env: environment variables of every context.
    reset: called as reset(ctx) each time a context comes back, after its CPU
    set and the variables changed with setenv/unsetenv are restored (a
    variable the pool did not set goes back to the base's value); clear
    per-request state of the context's modules there.  If it raises, that
    context is closed and a fresh one made when next needed.
    name: the contexts are called name-0, name-1, ...
    places: instead of one CPU list for every context, cpus (default: the
    process's) split among the size contexts along the machine's topology
    ("l3", "numa", "core"...), as ``ContextPoolExecutor(places=)`` does.
    python: "shared" (the process's interpreter) or "own": each context a
    CPython runtime of its own, its GIL too (past glibc's 15 namespaces, a
    renamed copy of libpython); :meth:`submit` then pickles the task into the context's
    runtime, as ``ContextPoolExecutor(python="own")`` does, and
    ``with ctx:`` on a handed-out context is refused (use ``ctx.submit``).
    gpus: the GPUs of the pool split among the contexts, one each when there
    are as many (or one GPU list per context), as ``ContextPoolExecutor(gpus=)``
    splits them; a context comes back with its share.
    """

    def __init__(
        self,
        size: int | None = None,
        *,
        cpus: CpuList | Sequence[CpuList] | None = None,
        env: Mapping[str, str] | None = None,
        reset: Callable[[VLC], Any] | None = None,
        name: str = "pool",
        places: str | None = None,
        python: str = "shared",
        gpus: str | Iterable[int] | Sequence[str | Iterable[int]] | None = None,
    ) -> None:
        if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 1):
            raise ValueError(f"size must be an int >= 1; got {size!r}")
        if python not in PYTHONS:
            raise ValueError(f"python must be one of {', '.join(PYTHONS)}; got {python!r}")
        self._python = python
        if places is not None:  # cpus split among the contexts along the topology
            every = sorted(os.sched_getaffinity(0)) if cpus is None else resolve(cpus)  # type: ignore[arg-type]
            self._homes: list[CpuList | None] = list(worker_homes(every, size or 1, places)[0])
        else:
            self._homes = _homes(cpus, size)
        self._gpus = split_gpus(gpus, len(self._homes))
        self._env = dict(env or {})
        self._reset = reset
        self._name = name
        self._cond = threading.Condition()
        self._idle: collections.deque[VLC] = collections.deque()
        self._slots: list[VLC | None] = [None] * len(self._homes)  # made contexts
        self._slot_of: dict[int, int] = {}  # id(ctx) -> its slot
        self._busy: set[int] = set()
        self._closed = False
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._uses = 0

    @property
    def size(self) -> int:
        return len(self._homes)

    # --- taking and giving back ---------------------------------------------------
    def acquire(self, timeout: float | None = None) -> VLC:
        """A context for the caller alone until :meth:`release`; waits while
        all are in use (TimeoutError after timeout seconds)."""
        with self._cond:
            while True:
                if self._closed:
                    raise RuntimeError("this ContextPool is closed")
                if self._idle:
                    ctx = self._idle.pop()  # the one used last: its caches are warm
                    break
                free = next((i for i, c in enumerate(self._slots) if c is None), None)
                if free is not None:
                    self._slots[free] = ctx = self._make(free)
                    break
                if not self._cond.wait(timeout):
                    raise TimeoutError(f"no context of the pool was free within {timeout} s")
            self._busy.add(id(ctx))
            self._uses += 1
            return ctx

    def _make(self, slot: int) -> VLC:
        ctx = VLC(
            cpus=self._homes[slot],
            env=self._env,
            name=f"{self._name}-{slot}",
            python=self._python,
            gpus=self._gpus[slot],
        )
        self._slot_of[id(ctx)] = slot
        return ctx

    def release(self, ctx: VLC) -> None:
        """Give ctx back: its CPUs and environment as the pool made them,
        then the reset hook.  Raises ContextBusyError if the calling thread
        is still inside it; an exception of the reset hook is raised after
        the context was replaced."""
        if id(ctx) not in self._busy:
            raise ValueError(f"{ctx!r} is not a context this pool handed out")
        if current() is ctx:
            raise ContextBusyError(
                f"release() of context {ctx.name!r} from inside it; "
                "leave it (end the with block) first"
            )
        try:
            self._restore(ctx)
            if self._reset is not None:
                self._reset(ctx)
        except BaseException:
            self._drop(ctx)
            raise
        with self._cond:
            self._busy.discard(id(ctx))
            if self._closed:
                self._slots[self._slot_of.pop(id(ctx))] = None
                ctx._close(warn=False)
            else:
                self._idle.append(ctx)
            self._cond.notify()

    def _restore(self, ctx: VLC) -> None:
        home = self._homes[self._slot_of[id(ctx)]]
        gpus = self._gpus[self._slot_of[id(ctx)]]
        if gpus is not None and ctx.gpus != gpus:
            ctx.set_gpus(gpus)
        if ctx._elastic:  # a user made it elastic: static again
            ctx.set_elastic(None)
        if home is not None:
            ctx.set_allowed_cpus(home)
        elif ctx.home_cpus != sorted(os.sched_getaffinity(0)):
            ctx.set_allowed_cpus(sorted(os.sched_getaffinity(0)))
        for key, value in list(ctx._env.items()):
            want = self._env.get(key, os.environ.get(key))
            if value == want:
                continue
            if want is None:
                ctx.unsetenv(key)
            else:
                ctx.setenv(key, want)

    def _drop(self, ctx: VLC) -> None:
        """A context that could not be reset: closed, its slot made free."""
        with self._cond:
            self._busy.discard(id(ctx))
            self._slots[self._slot_of.pop(id(ctx))] = None
            self._cond.notify()
        with contextlib.suppress(ContextBusyError, ContextDestroyedError):
            ctx._close(warn=False)

    @contextlib.contextmanager
    def context(self, timeout: float | None = None) -> Iterator[VLC]:
        """``with pool.context() as ctx:`` — acquire, and release at the end."""
        ctx = self.acquire(timeout)
        try:
            yield ctx
        finally:
            self.release(ctx)

    # --- running work -------------------------------------------------------------
    def submit(
        self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any
    ) -> concurrent.futures.Future:
        """Run fn(*args, **kwargs) inside a context of the pool, on a thread
        of the pool (concurrent.futures style)."""
        with self._cond:
            if self._closed:
                raise RuntimeError("this ContextPool is closed")
            if self._executor is None:
                self._executor = concurrent.futures.ThreadPoolExecutor(
                    max_workers=self.size, thread_name_prefix=f"vlcs-{self._name}"
                )
            ex = self._executor
        with starting_in_base():  # its threads enter a context per task
            return ex.submit(self._run, fn, args, kwargs)

    def _run(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if self._python == "own":  # into the context's runtime, by pickle
            with self.context() as ctx:
                return ctx.submit(fn, *args, **kwargs).result()
        with self.context() as ctx, ctx:
            return fn(*args, **kwargs)

    def stats(self) -> dict[str, Any]:
        """Contexts made, idle and in use, and how many times one was handed out."""
        with self._cond:
            return {
                "size": self.size,
                "made": sum(c is not None for c in self._slots),
                "idle": len(self._idle),
                "in_use": len(self._busy),
                "uses": self._uses,
                "python": self._python,
            }

    def close(self) -> None:
        """Wait for submitted work, then close every context (one in use is
        closed when it comes back)."""
        with self._cond:
            self._closed = True
            ex, self._executor = self._executor, None
        if ex is not None:
            ex.shutdown(wait=True)
        with self._cond:
            idle, self._idle = list(self._idle), collections.deque()
            for ctx in idle:
                self._slots[self._slot_of.pop(id(ctx))] = None
            self._cond.notify_all()
        for ctx in idle:
            ctx._close(warn=False)  # pooled contexts keep their namespaces by design

    def __enter__(self) -> ContextPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        s = self.stats()
        return f"<vlcs.ContextPool {self._name!r} size={s['size']} in_use={s['in_use']}>"

"""``vlcs.get_reusable_executor``: one pool of contexts kept for the process,
as loky's ``get_reusable_executor`` keeps one pool of processes.

A pool's first job pays for its workers: their contexts, the imports its
tasks make in each (numpy: tens of milliseconds a context), the Python
runtimes of ``python="own"``.  Code that makes a ``ContextPoolExecutor``
per batch (``with ContextPoolExecutor() as ex: ...`` in a loop, a library
that does so per call) pays it each time.  The reusable executor is made
once and handed out again while it is asked for with the same arguments:
a ``with`` block over it waits for the tasks it submitted and leaves the
workers running, with what they imported.  Asked for with other arguments,
the old one finishes its tasks and closes, and a new one is made.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable
from typing import Any

from vlcs._pools.executor import ContextPoolExecutor

__all__ = ["ReusableExecutor", "get_reusable_executor"]


class ReusableExecutor(ContextPoolExecutor):
    """A ContextPoolExecutor that a ``with`` block leaves running: leaving
    the block waits for the tasks submitted (as ``shutdown(wait=True)``
    would), and the workers' contexts wait for the next block.
    ``shutdown()`` closes it; the next :func:`get_reusable_executor` then
    makes a new one."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pending: set[concurrent.futures.Future[Any]] = set()
        self._pending_lock = threading.Lock()

    def submit(
        self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any
    ) -> concurrent.futures.Future[Any]:
        future = super().submit(fn, *args, **kwargs)
        with self._pending_lock:
            self._pending.add(future)
        future.add_done_callback(self._done)
        return future

    def _done(self, future: concurrent.futures.Future[Any]) -> None:
        with self._pending_lock:
            self._pending.discard(future)

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        with self._pending_lock:
            pending = list(self._pending)
        concurrent.futures.wait(pending)
        return False

    def __repr__(self) -> str:
        return super().__repr__().replace("ContextPoolExecutor", "ReusableExecutor", 1)


_lock = threading.Lock()
_executor: ReusableExecutor | None = None
_asked: tuple[tuple[Any, ...], dict[str, Any]] | None = None


def get_reusable_executor(
    max_workers: int | None = None,
    initializer: Callable[..., Any] | None = None,
    initargs: tuple[Any, ...] = (),
    **kwargs: Any,
) -> ContextPoolExecutor:
    """The process's reusable pool of contexts: the one made before when it
    is asked for with the same arguments and still runs, else a new one
    (the old one, if any, finishes its tasks and closes first).

    The arguments are :class:`vlcs.ContextPoolExecutor`'s (``cpus``,
    ``places``, ``env``, ``python``, ``gpus``, ``share``, ``elastic``,
    ``max_tasks_per_child``, ``name``).  A ``with`` block over it waits for
    its tasks and leaves it running; its workers keep their contexts and
    what they imported from one job to the next.

    >>> import vlcs
    >>> with vlcs.get_reusable_executor(2) as ex:
    ...     first = ex.submit(sum, [1, 2]).result()
    >>> vlcs.get_reusable_executor(2) is ex
    True
    >>> ex.shutdown()
    """
    global _executor, _asked
    asked = ((max_workers, initializer, tuple(initargs)), kwargs)
    with _lock:
        old = _executor
        if old is not None and _asked == asked and old._broken is None and not old._shutdown:
            return old
        if old is not None:
            old.shutdown(wait=True)
        _executor = None
        made = ReusableExecutor(max_workers, None, initializer, initargs, **kwargs)
        _executor, _asked = made, asked
        return made

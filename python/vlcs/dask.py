"""Dask: tasks annotated ``executor="vlcs"`` run in contexts on every worker.

Dask places work on machines and worker processes; vlcs partitions each
worker: :class:`ContextWorkers`, registered once with a ``distributed``
client, gives every worker (those that join later too) a
:class:`vlcs.ContextPoolExecutor` named "vlcs", whose contexts split the
worker's CPUs.  Tasks annotated for it run there, each in a context with its
own copies of the packages it imports; other tasks run on the worker's
threads as usual::

    from distributed import Client
    from vlcs.dask import ContextWorkers

    client = Client(cluster)
    client.register_plugin(ContextWorkers())          # contexts = the worker's threads
    with dask.annotate(executor="vlcs"):
        futures = client.map(solve, matrices)

The worker hands a task to its contexts as it hands one to a process pool
(by pickle; arrays cross as views of the same memory).  ``distributed``
itself stays one copy per worker process, the base's (:func:`vlcs.share`):
its wrapper around each task (timing, error messages) runs in the base, and
only the task itself in a context, so results and exceptions reach Dask as
the base's objects.

>>> from vlcs.dask import ContextWorkers
>>> ContextWorkers(2, cpus="0-1").executor
'vlcs'
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

from vlcs._isolation.imports import share
from vlcs._isolation.threads import starting_in_base
from vlcs._pools.executor import ContextPoolExecutor

__all__ = ["ContextWorkers"]


class _InContext:
    """A Dask task that runs in a context of the pool when called."""

    def __init__(self, pool: ContextPoolExecutor, task: Any) -> None:
        self.pool = pool
        self.task = task

    def __call__(self, *args: Any) -> Any:
        return self.pool.submit(self.task, *args).result()


class _WorkerExecutor(concurrent.futures.Executor):
    """What the worker sees as its executor "vlcs".  Dask hands a process
    pool ``_run_task_simple(task, data, delay)``: that wrapper runs here on
    a base thread, the task inside it in a context.  Anything else goes to
    the contexts whole."""

    def __init__(self, pool: ContextPoolExecutor) -> None:
        self.pool = pool
        self.threads = concurrent.futures.ThreadPoolExecutor(
            pool._max_workers, thread_name_prefix="vlcs-dask"
        )

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        wrapper = (
            getattr(fn, "__module__", None) == "distributed.worker"
            and getattr(fn, "__name__", None) == "_run_task_simple"
        )
        if wrapper and args and not kwargs:
            with starting_in_base():  # Dask's wrapper runs in the base, the task in a context
                return self.threads.submit(fn, _InContext(self.pool, args[0]), *args[1:])
        return self.pool.submit(fn, *args, **kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self.threads.shutdown(wait=wait, cancel_futures=cancel_futures)
        self.pool.shutdown(wait=wait, cancel_futures=cancel_futures)

    @property
    def contexts(self) -> list[Any]:
        return self.pool.contexts


class ContextWorkers(WorkerPlugin):  # type: ignore[misc]
    """A ContextPoolExecutor on every worker, as the worker's executor
    ``executor`` (default "vlcs": ``dask.annotate(executor="vlcs")``).

    contexts: contexts per worker (default: the worker's thread count).
    cpus, env, elastic, share, places, python: as for
        :class:`vlcs.ContextPoolExecutor`, on each worker (default: the CPUs
        the worker process may use, split; along the topology with
        places="l3", "numa"...; python="own": each context a CPython runtime
        of its own).
    """

    def __init__(
        self,
        contexts: int | None = None,
        *,
        cpus: str | Iterable[int] | Sequence[str | Iterable[int]] | None = None,
        env: Mapping[str, str] | Sequence[Mapping[str, str]] | None = None,
        elastic: bool = False,
        share: Iterable[str] = (),
        executor: str = "vlcs",
        places: str | None = None,
        python: str = "shared",
    ) -> None:
        if contexts is not None and (not isinstance(contexts, int) or contexts < 1):
            raise ValueError(f"contexts must be an int >= 1; got {contexts!r}")
        self.contexts = contexts
        self.cpus = cpus if cpus is None or isinstance(cpus, str) else list(cpus)
        self.env = env
        self.elastic = elastic
        self.share = list(share)
        self.places = places
        self.python = python
        self.executor = executor
        self.name = f"vlcs-context-workers-{executor}"

    def setup(self, worker: Any) -> None:
        share("distributed")  # the worker's machinery: one copy, the base's
        pool = ContextPoolExecutor(
            self.contexts or worker.state.nthreads,
            cpus=self.cpus,
            env=self.env,
            elastic=self.elastic,
            share=self.share,
            name=f"dask-{self.executor}",
            places=self.places,
            python=self.python,
        )
        worker.executors[self.executor] = _WorkerExecutor(pool)

    def teardown(self, worker: Any) -> None:
        pool = worker.executors.pop(self.executor, None)
        if pool is not None:
            pool.shutdown(wait=True)

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
itself stays one copy per worker process (:func:`vlcs.share`): its code
that wraps each task runs inside the context, the task's own modules are the
context's.

>>> from vlcs.dask import ContextWorkers
>>> ContextWorkers(2, cpus="0-1").executor
'vlcs'
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

from vlcs._executor import ContextPoolExecutor
from vlcs._imports import share

__all__ = ["ContextWorkers"]


class ContextWorkers(WorkerPlugin):  # type: ignore[misc]
    """A ContextPoolExecutor on every worker, as the worker's executor
    ``executor`` (default "vlcs": ``dask.annotate(executor="vlcs")``).

    contexts: contexts per worker (default: the worker's thread count).
    cpus, env, elastic, share: as for :class:`vlcs.ContextPoolExecutor`, on
        each worker (default: the CPUs the worker process may use, split).
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
    ) -> None:
        if contexts is not None and (not isinstance(contexts, int) or contexts < 1):
            raise ValueError(f"contexts must be an int >= 1; got {contexts!r}")
        self.contexts = contexts
        self.cpus = cpus if cpus is None or isinstance(cpus, str) else list(cpus)
        self.env = env
        self.elastic = elastic
        self.share = list(share)
        self.executor = executor
        self.name = f"vlcs-context-workers-{executor}"

    def setup(self, worker: Any) -> None:
        # the worker's machinery once: its task wrapper runs in the contexts
        share("distributed")
        worker.executors[self.executor] = ContextPoolExecutor(
            self.contexts or worker.state.nthreads,
            cpus=self.cpus,
            env=self.env,
            elastic=self.elastic,
            share=self.share,
            name=f"dask-{self.executor}",
        )

    def teardown(self, worker: Any) -> None:
        pool = worker.executors.pop(self.executor, None)
        if pool is not None:
            pool.shutdown(wait=True)

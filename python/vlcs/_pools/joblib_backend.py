"""joblib's backend "vlcs": ``Parallel`` calls run in a ContextPoolExecutor.

``import vlcs`` registers it with joblib (at once if joblib is imported
already, otherwise when joblib is), so scikit-learn's ``n_jobs=`` runs in
contexts with one line::

    with joblib.parallel_config(backend="vlcs", n_jobs=2):
        GridSearchCV(SVC(), grid, n_jobs=2).fit(X, y)

Each worker is a context with its share of the CPUs and its own copies of
the packages its tasks import (scikit-learn, numpy, scipy and their thread
pools); arguments cross as with loky (pickled, cloudpickle for functions of
``__main__``), but numpy arrays cross as views of the same memory instead
of memory-mapped copies.  Keyword arguments of ``parallel_config`` other
than joblib's own (``cpus=``, ``env=``, ``share=``, ``elastic=``,
``places=``) go to
:class:`vlcs.ContextPoolExecutor`.  The pool is kept between ``Parallel``
calls with the same number of jobs (its contexts' imports stay warm).
"""

from __future__ import annotations

import sys
import threading

from vlcs._after_import import when_imported

TYPE_CHECKING = False  # typing is not imported at run time (see vlcs/__init__.py)
if TYPE_CHECKING:
    from typing import Any

BACKEND = "vlcs"
# what parallel_config(backend="vlcs", ...) passes on to ContextPoolExecutor
_OPTIONS = {"cpus", "env", "share", "elastic", "places", "python"}

_lock = threading.Lock()
_pools: dict[tuple[Any, ...], Any] = {}  # (n_jobs, options) -> the ContextPoolExecutor


def _pool(n_jobs: int, options: dict[str, Any]) -> Any:
    """The process-wide pool for n_jobs workers and these options: reused,
    since a context that imported extension modules keeps its namespace
    when closed, and glibc has few."""
    from vlcs._pools.executor import ContextPoolExecutor

    key = (n_jobs, repr(sorted(options.items())))
    with _lock:
        pool = _pools.get(key)
        if pool is None or pool._broken is not None or pool._shutdown:
            for k in [k for k in _pools if k[0] != n_jobs or k == key]:
                _pools.pop(k).shutdown(wait=False)
            pool = _pools[key] = ContextPoolExecutor(n_jobs, name="joblib", **options)
        return pool


def backend_class(joblib: Any) -> type:
    """The backend class for this copy of joblib (the base's, or a context's)."""
    backends = joblib._parallel_backends

    class ContextBackend(backends.ParallelBackendBase):  # type: ignore[misc,name-defined]
        """joblib backend: each job runs in a context of a ContextPoolExecutor."""

        supports_retrieve_callback = True
        supports_inner_max_num_threads = True
        supports_sharedmem = False  # joblib picks threads where sharedmem is required
        default_n_jobs = 1

        def __init__(self, nesting_level: int | None = None, **kwargs: Any) -> None:
            unknown = sorted(set(kwargs) - _OPTIONS - {"inner_max_num_threads"})
            if unknown:
                raise TypeError(
                    f"joblib backend 'vlcs' takes {sorted(_OPTIONS)}; got {', '.join(unknown)}"
                )
            super().__init__(nesting_level=nesting_level, **kwargs)
            self._executor: Any = None
            self._futures: set[Any] = set()

        def effective_n_jobs(self, n_jobs: int | None) -> int:
            if n_jobs == 0:
                raise ValueError("n_jobs == 0 in Parallel has no meaning")
            if n_jobs is None:
                return 1
            if n_jobs < 0:
                from vlcs._isolation import views as _views

                return max(len(_views.real_sched_getaffinity(0)) + 1 + n_jobs, 1)
            return n_jobs

        def configure(
            self,
            n_jobs: int = 1,
            parallel: Any = None,
            prefer: Any = None,
            require: Any = None,
            **kwargs: Any,
        ) -> int:
            n = self.effective_n_jobs(n_jobs)
            if n == 1:
                raise backends.FallbackToBackend(
                    backends.SequentialBackend(nesting_level=self.nesting_level)
                )
            # kwargs are joblib's memory-mapping options: arrays are shared here
            options = dict(self.backend_kwargs)
            if self.inner_max_num_threads is not None:
                env = dict(options.get("env") or {})
                for var in self.MAX_NUM_THREADS_VARS:
                    env.setdefault(var, str(self.inner_max_num_threads))
                options["env"] = env
            self._executor = _pool(n, options)
            self.parallel = parallel
            return n

        def submit(self, func: Any, callback: Any = None) -> Any:
            future = self._executor.submit(func)
            self._futures.add(future)
            future.add_done_callback(self._futures.discard)
            if callback is not None:
                future.add_done_callback(callback)
            return future

        def retrieve_result_callback(self, future: Any) -> Any:
            return future.result()

        def abort_everything(self, ensure_ready: bool = True) -> None:
            # tasks not started are cancelled; running ones finish (threads
            # cannot be killed); the pool stays for the next call
            for f in list(self._futures):
                f.cancel()

        def terminate(self) -> None:
            self._futures.clear()  # the pool stays, warm, for the next call

        def get_nested_backend(self) -> Any:
            # inside a worker's context: its CPUs are its own already
            level = (self.nesting_level or 0) + 1
            return backends.SequentialBackend(nesting_level=level), None

    return ContextBackend


def register(joblib: Any) -> None:
    """Register the backend "vlcs" with this copy of joblib."""
    cls = backend_class(joblib)
    joblib.register_parallel_backend(BACKEND, cls)


# --- registering when joblib is imported ------------------------------------------


def _register_if_joblib(joblib: Any) -> None:
    if hasattr(joblib, "register_parallel_backend"):
        try:
            register(joblib)
        except Exception as e:  # a joblib too old or too new: joblib itself unharmed
            print(f"vlcs: joblib backend 'vlcs' not registered: {e}", file=sys.stderr)


def install() -> None:
    """Register now if joblib is imported, else when it is (once)."""
    when_imported("joblib", _register_if_joblib)

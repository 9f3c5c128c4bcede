"""ContextPoolExecutor, joblib's backend and Dask's plugin with real packages,
each case in a fresh interpreter (python pool_scenarios.py NAME) so that a
crash fails one test and every case starts with all namespaces free.  Each
prints one JSON object of facts; test_executor.py asserts on them.  Every
case ends by checking the base: its modules, and its numpy still working."""

from __future__ import annotations

import concurrent.futures
import json
import os
import resource
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "data"))

import pool_tasks  # noqa: E402  (the base's copy)
import vlcs  # noqa: E402


def _base_facts(before: dict) -> dict:
    """The base after the pool: the modules it had are the same objects,
    and its numpy (imported first by every case) still computes."""
    import numpy as np

    return {
        "base_modules_kept": all(sys.modules.get(k) is v for k, v in before.items()),
        "base_numpy_works": float(np.linalg.norm(np.eye(3))) == 3**0.5,
        "base_in_no_context": vlcs.current() is None,
    }


def h5py_eigsh_case() -> dict:
    import h5py  # noqa: F401  (the base's: the contexts must get their own)
    import numpy as np  # noqa: F401

    tmp = tempfile.mkdtemp()
    paths = [os.path.join(tmp, f"{w}-{i}.h5") for w in ("p", "c") for i in (0, 1)]
    args = [(20000, 6, 1), (20000, 6, 2)]
    # the process pool first, before this process has any context or thread
    with concurrent.futures.ProcessPoolExecutor(2) as procs:
        p_h5 = list(procs.map(pool_tasks.h5_job, paths[:2], [1, 2]))
        p_eig = list(procs.map(pool_tasks.eigsh_job, *zip(*args, strict=True)))
    before = dict(sys.modules)
    with vlcs.ContextPoolExecutor(2) as pool:
        c_h5 = list(pool.map(pool_tasks.h5_job, paths[2:], [1, 2]))
        c_eig = list(pool.map(pool_tasks.eigsh_job, *zip(*args, strict=True)))
        # submitted at once, so that both workers take some (one after the
        # other, a busy machine let one worker take them all)
        copies = [f.result() for f in [pool.submit(pool_tasks.where) for _ in range(64)]]
        worker_cpus = pool.worker_cpus
    import h5py as base_h5py

    return {
        "h5_equal": [r["total"] for r in c_h5] == [r["total"] for r in p_h5],
        "eigsh_equal": [r["values"] for r in c_eig] == [r["values"] for r in p_eig],
        "h5py_copies": len({r["h5py"] for r in c_h5} | {id(base_h5py)}),
        "module_copies": len({r["module"] for r in copies} | {id(pool_tasks)}),
        "worker_cpus": worker_cpus,
        "base_h5py_works": base_h5py.File(paths[0], "r")["d0"].shape == (200, 500),
        **_base_facts(before),
    }


def old_scipy_case() -> dict:
    """scipy < 1.16 runs ARPACK behind one lock per copy of scipy: two
    solves on threads take turns, two in contexts run at once."""
    import numpy as np  # noqa: F401
    import scipy

    args = [(40000, 6, 1), (40000, 6, 2)]
    with concurrent.futures.ProcessPoolExecutor(2) as procs:
        p_eig = list(procs.map(pool_tasks.eigsh_job, *zip(*args, strict=True)))
    before = dict(sys.modules)
    with concurrent.futures.ThreadPoolExecutor(2) as threads:
        t_eig = list(threads.map(pool_tasks.eigsh_job, *zip(*args, strict=True)))
    with vlcs.ContextPoolExecutor(2) as pool:
        pool.submit(pool_tasks.eigsh_job, 400, 2, 0).result()  # both import scipy first
        pool.submit(pool_tasks.eigsh_job, 400, 2, 0).result()
        c_eig = list(pool.map(pool_tasks.eigsh_job, *zip(*args, strict=True)))

    def overlap(rs: list[dict]) -> bool:
        a, b = rs
        return a["start"] < b["end"] and b["start"] < a["end"]

    return {
        "base_scipy": scipy.__version__,
        "context_scipy": [r["scipy"] for r in c_eig],
        "equal": [r["values"] for r in c_eig] == [r["values"] for r in p_eig],
        "scipy_copies": len({r["scipy_id"] for r in c_eig} | {id(scipy)}),
        "threads_overlap": overlap(t_eig),
        "contexts_overlap": overlap(c_eig),
        **_base_facts(before),
    }


def big_array_case() -> dict:
    """A 1 GiB argument crosses as a view; a view comes back as one."""
    import numpy as np

    before = dict(sys.modules)
    a = np.ones(1 << 27)  # 1 GiB, touched
    with vlcs.ContextPoolExecutor(1) as pool:
        pool.submit(pool_tasks.where).result()  # the context's numpy imported
        pool.submit(np.ones, 3).result()
        peak0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        facts = pool.submit(pool_tasks.array_facts, a).result()
        back = pool.submit(pool_tasks.head, a, 1000).result()
        peak1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {
        "same_address": facts["address"] == a.__array_interface__["data"][0],
        "context_sees_its_own_ndarray": facts["is_own_ndarray"],
        "context_ndarray_distinct": facts["ndarray"] != id(np.ndarray),
        "write_seen_by_caller": bool(a[0] == 42.0),
        "total": facts["total"],
        "peak_growth_mib": (peak1 - peak0) / 2**20,
        "back_is_base_ndarray": type(back) is np.ndarray,
        "back_same_memory": back.__array_interface__["data"][0] == a.__array_interface__["data"][0],
        **_base_facts(before),
    }


def errors_case() -> dict:
    import numpy as np

    before = dict(sys.modules)
    out: dict = {}
    with vlcs.ContextPoolExecutor(2) as pool:
        try:
            pool.submit(np.linalg.inv, np.zeros((3, 3))).result()
        except np.linalg.LinAlgError as e:  # the base's class: resolved back by name
            out["linalg"] = [str(e), type(e.__cause__).__name__, "inv" in str(e.__cause__)]
        try:
            pool.submit(pool_tasks.fail, "no good").result()
        except pool_tasks.TaskError as e:
            out["own_class"] = [str(e), "pool_tasks.py" in str(e.__cause__)]
        # what pickle refuses, as a process pool refuses it
        mine = pool.submit(len, threading.Lock()).exception()
        unpicklable_result = pool.submit(threading.Lock).exception()
        out["after_errors"] = pool.submit(sum, [1, 2, 3]).result()
    with concurrent.futures.ProcessPoolExecutor(1) as procs:
        theirs = procs.submit(len, threading.Lock()).exception()
    out["unpicklable"] = [type(mine).__name__, str(mine)]
    out["unpicklable_process_pool"] = [type(theirs).__name__, str(theirs)]
    out["unpicklable_result"] = type(unpicklable_result).__name__
    out.update(_base_facts(before))
    return out


def main_function_case() -> dict:
    """Functions and classes of __main__ (this script): pickled by value,
    their globals resolved in the worker's context."""
    import numpy as np

    before = dict(sys.modules)
    with vlcs.ContextPoolExecutor(2) as pool:
        r = pool.submit(_uses_global_numpy, 3).result()
        lam = pool.submit(lambda x: x * 2, 21).result()
        box = pool.submit(_Box(5).doubled).result()
    return {
        "main_function_numpy_is_contexts": r["ndarray"] != id(np.ndarray),
        "main_function_result": r["sum"],
        "lambda": lam,
        "main_class": box,
        **_base_facts(before),
    }


def _uses_global_numpy(n: int) -> dict:
    return {"ndarray": id(np.ndarray), "sum": float(np.ones(n).sum())}  # noqa: F821


class _Box:
    def __init__(self, v: int) -> None:
        self.v = v

    def doubled(self) -> int:
        return self.v * 2


def segfault_case() -> dict:
    import ctypes

    with vlcs.ContextPoolExecutor(1) as pool:
        print("submitting", flush=True)
        pool.submit(ctypes.string_at, 0).result()  # reads address 0 in the context
    return {"survived": True}


def sklearn_case() -> dict:
    """GridSearchCV(n_jobs=2) under joblib's backend "vlcs" and under loky:
    same best parameters and scores; loky still works after the contexts
    imported their own scikit-learn (and loky)."""
    import joblib  # imported after vlcs: registered by the import hook
    import numpy as np
    from sklearn.datasets import make_classification
    from sklearn.model_selection import GridSearchCV
    from sklearn.svm import SVC

    before = dict(sys.modules)
    x, y = make_classification(n_samples=300, n_features=12, random_state=0)
    grid = {"C": [0.1, 1, 10], "gamma": [0.01, 0.1]}
    with joblib.parallel_config(backend="vlcs", n_jobs=2):
        g_vlcs = GridSearchCV(SVC(), grid, n_jobs=2).fit(x, y)
        with joblib.parallel_config(backend="vlcs", n_jobs=2):
            flags = np.zeros(4, dtype=np.int64)  # each pair of tasks runs on both workers
            who = joblib.Parallel(batch_size=1)(
                joblib.delayed(pool_tasks.where_paired)(flags, i) for i in range(4)
            )
    from vlcs._pools import joblib_backend as _joblib

    pools = list(_joblib._pools.values())
    packages = [sorted(c.info()["python_packages"]) for p in pools for c in p.contexts]
    g_loky = GridSearchCV(SVC(), grid, n_jobs=2).fit(x, y)
    return {
        "best_equal": g_vlcs.best_params_ == g_loky.best_params_,
        "scores_equal": list(g_vlcs.cv_results_["mean_test_score"])
        == list(g_loky.cv_results_["mean_test_score"]),
        "contexts_have_sklearn": all("sklearn" in p for p in packages) and len(packages) == 2,
        "ran_in": sorted({w["context"] for w in who}),
        **_base_facts(before),
    }


def joblib_first_case() -> dict:
    """joblib imported before vlcs: registered at import vlcs."""
    import joblib
    import vlcs as _  # noqa: F401  (already imported: the registration ran then)

    with joblib.parallel_config(backend="vlcs", n_jobs=2):
        r = joblib.Parallel()(joblib.delayed(pool_tasks.where)() for _ in range(2))
    return {"ran_in_contexts": all(w["context"] for w in r)}


def dask_case() -> dict:
    import dask
    import numpy as np  # noqa: F401
    from distributed import Client, LocalCluster
    from vlcs.dask import ContextWorkers

    before = dict(sys.modules)
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=2, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        client.register_plugin(ContextWorkers())
        with dask.annotate(executor="vlcs"):
            annotated = client.gather(client.map(pool_tasks.where, range(6), pure=False))
        plain = client.gather(client.map(pool_tasks.where, range(4), pure=False))
        with dask.annotate(executor="vlcs"):
            err = client.submit(pool_tasks.fail, "in dask", pure=False)
            try:
                err.result()
                raised = None
            except pool_tasks.TaskError as e:
                raised = str(e)
    return {
        "annotated_contexts": sorted({w["context"] for w in annotated}),
        "annotated_cpus": sorted({tuple(w["cpus"]) for w in annotated}),
        "plain_contexts": sorted({str(w["context"]) for w in plain}),
        "raised": raised,
        **_base_facts(before),
    }


def many_workers_case() -> dict:
    """More workers than glibc has namespaces: those past them hold renamed
    copies (copy mode), each with its own numpy, and run case 6's
    thread-unsafe work (ARPACK through scipy, HDF5 through h5py) at once."""
    import tempfile

    import numpy as np  # noqa: F401

    before = dict(sys.modules)
    n = 32
    started_r, started_w = os.pipe()
    go_r, go_w = os.pipe()
    folder = tempfile.mkdtemp()
    with vlcs.ContextPoolExecutor(n, env={"OPENBLAS_NUM_THREADS": "1"}) as pool:
        futures = [
            pool.submit(
                pool_tasks.worker_facts, started_w, go_r, os.path.join(folder, f"{k}.h5"), k
            )
            for k in range(n)
        ]
        for _ in range(n):  # every worker holds one task: one per worker
            os.read(started_r, 1)
        os.write(go_w, b"g" * n)
        facts = [f.result() for f in futures]
    for fd in (started_r, started_w, go_r, go_w):
        os.close(fd)
    out: dict = {
        "workers": len({f["name"] for f in facts}),
        "modes": sorted({f["mode"] for f in facts}),
        "copy_mode_workers": sum(f["mode"] == "copies" for f in facts),
        "numpys": len({f["numpy"] for f in facts} | {id(np)}),
        "dots": sorted({f["dot"] for f in facts}),
        "threads": sorted({f["threads"] for f in facts}),
        "eigsh_h5_exact": sorted({f["eigsh_h5_exact"] for f in facts}),
    }
    out["contexts_left"] = len(vlcs.info()["contexts"])
    out.update(_base_facts(before))
    return out


if __name__ == "__main__":
    if sys.argv[1] == "main_function":
        import numpy as np  # the global _uses_global_numpy reads
    print(json.dumps(globals()[sys.argv[1] + "_case"]()))
    sys.stdout.flush()

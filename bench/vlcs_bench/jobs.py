"""The jobs the benchmarks hand to pools and contexts: case 6's h5py and
eigsh solves, case 12's workloads, `vlcs bench own`'s loops.  A module of
its own that imports nothing at its top (the packages a job needs, it
imports when it runs), so that a fresh worker (a spawned process, a Python
of a context's own) imports only what the job needs, as a user's module
of tasks would."""

from __future__ import annotations

TYPE_CHECKING = False  # typing itself takes a fresh interpreter 5-10 ms to import
if TYPE_CHECKING:
    from typing import Any


def python_loop(n: int) -> int:
    """Pure Python: the GIL is held throughout."""
    s = 0
    for i in range(n):
        s += i * i % 7
    return s


def _three_gemms(n: int) -> float:
    """numpy_and_loop's first phase: three GEMMs of n x n."""
    import numpy as np

    a = np.random.default_rng(0).random((n, n)) / n
    for _ in range(3):
        a = a @ a
    return float(a.sum())


def numpy_and_loop(n: int, steps: int | None = None) -> float:
    """Three GEMMs of n x n (BLAS lets go of the GIL), then a Python loop
    of `steps` steps (2 n^2 by default)."""
    return _three_gemms(n) + python_loop(2 * n * n if steps is None else steps)


def numpy_and_loop_timed(n: int) -> dict[str, Any]:
    """numpy_and_loop's work, timed by phase on the wall clock (time.time,
    which every worker shares), with the BLAS threads the worker's numpy
    runs: where a pool's tasks wait for each other shows in the spans."""
    import time

    t0 = time.time()
    _three_gemms(n)
    t1 = time.time()
    python_loop(2 * n * n)
    t2 = time.time()
    try:
        from threadpoolctl import threadpool_info

        blas = sorted({p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"})
    except ImportError:
        blas = []
    return {"start": t0, "gemms_done": t1, "end": t2, "blas_threads": blas}


def data_task(a: Any) -> float:
    """A large array in, a small result out (a reduction over all of it)."""
    return float(a.sum())


def h5_job(h5py: Any, np: Any, path: str, data: Any) -> float:
    """Write datasets gzip-compressed, read them back; a checksum."""
    with h5py.File(path, "w") as f:
        for i in range(8):
            f.create_dataset(f"d{i}", data=data + i, compression="gzip", compression_opts=6)
    total = 0.0
    with h5py.File(path, "r") as f:
        for i in range(8):
            total += float(f[f"d{i}"][...].sum())
    return total


def h5_child(path: str, data: Any) -> float:
    import h5py
    import numpy as np

    return h5_job(h5py, np, path, data)


def eigsh_job(sp: Any, spla: Any, np: Any, n: int, k: int, seed: int, sparse: bool) -> list[float]:
    """The k largest eigenvalues of a symmetric matrix with ARPACK.

    dense: an n x n random matrix, the products are BLAS GEMVs (threaded);
    sparse: a 2-D five-point operator with a random diagonal, n unknowns,
    the products are scipy's sparse matvec (one thread): eigsh's usual use."""
    rng = np.random.default_rng(seed)
    if sparse:
        m = int(n**0.5)
        one = np.ones(n)
        a = sp.diags(
            [4 + rng.random(n), -one[1:], -one[1:], -one[m:], -one[m:]],
            [0, 1, -1, m, -m],
            format="csr",
        )
    else:
        a = rng.random((n, n))
        a = (a + a.T) / 2
    vals = spla.eigsh(a, k=k, which="LA", return_eigenvectors=False, tol=1e-8, ncv=4 * k)
    return [round(float(v), 5) for v in sorted(vals)]


def eigsh_child(n: int, k: int, seed: int, sparse: bool) -> list[float]:
    import numpy as np
    import scipy.sparse as sp
    import scipy.sparse.linalg as spla

    return eigsh_job(sp, spla, np, n, k, seed, sparse)


def grid_child(x: Any, y: Any, cs: list[float]) -> tuple[float, float]:
    """scikit-learn's GridSearchCV over one share of a grid (n_jobs=1:
    the pool is the parallelism); its best (mean score, C)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV

    search = GridSearchCV(LogisticRegression(max_iter=300), {"C": cs}, cv=5, n_jobs=1)
    search.fit(x, y)
    return round(float(search.best_score_), 6), float(search.best_params_["C"])

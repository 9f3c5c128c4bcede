"""Pieces the cases share: running callables on plain threads, splitting
the CPUs between two contexts, and case 6's h5py and eigsh jobs (here, in a
module that imports neither vlcs nor numpy, so that the worker processes of
case 12's process pools import only what the jobs need)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


def on_threads(*calls: Callable[[], Any]) -> list[Any]:
    """Run the calls on one plain thread each; results in order."""
    out: list[Any] = [None] * len(calls)
    errors: list[BaseException] = []

    def one(i: int) -> None:
        try:
            out[i] = calls[i]()
        except BaseException as e:  # re-raised below, on the caller's thread
            errors.append(e)

    ts = [threading.Thread(target=one, args=(i,)) for i in range(len(calls))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]
    return out


def split_cpus(ncpu: int, first: int) -> tuple[str, str]:
    """CPU lists for two contexts: `first` CPUs, then the rest."""
    first = max(1, min(first, ncpu - 1))
    a = "0" if first == 1 else f"0-{first - 1}"
    b = str(first) if first == ncpu - 1 else f"{first}-{ncpu - 1}"
    return a, b


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

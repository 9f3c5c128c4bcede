"""Tasks for ContextPoolExecutor's tests: module-level functions, so that a
worker resolves them by name in its context (its own copy of this module and
of what it imports), as a process pool's worker would."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

CALLS = 0  # per copy of this module: per context


class TaskError(Exception):
    """An exception class of the tasks' own module."""


def where(*_: object) -> dict:
    """Which context, CPUs and module copies this task ran with (arguments
    ignored: map passes an item)."""
    import vlcs

    ctx = vlcs.current()
    numpy = sys.modules.get("numpy")
    return {
        "context": ctx.name if ctx is not None else None,
        "cpus": sorted(os.sched_getaffinity(0)),
        "module": id(sys.modules[__name__]),
        "numpy": id(numpy) if numpy is not None else None,
        "env": os.environ.get("POOL_TEST"),
    }


def where_paired(flags: Any, i: int) -> dict:
    """where(), once task i ^ 1 has started too (flags: an array each task
    marks, which arrives as a view of the caller's): a pool of two workers
    runs tasks 2k and 2k + 1 one each, where one quick worker could take
    them all (the GIL's switch interval lets the partner's worker run)."""
    flags[i] = 1
    deadline = time.monotonic() + 60  # bounds a failure only
    while not flags[i ^ 1] and time.monotonic() < deadline:
        pass
    return where()


def count() -> int:
    global CALLS
    CALLS += 1
    return CALLS


def set_calls(n: int) -> None:
    """An initializer: state of this worker's copy of the module."""
    global CALLS
    CALLS = n


def fail_init() -> None:
    raise TaskError("initializer refused")


def fail(message: str) -> None:
    raise TaskError(message)


def array_facts(a) -> dict:
    """The buffer address of an array argument as this context's numpy sees
    it, the type's identity, and a write into it (seen by the caller)."""
    import numpy as np

    a[0] = 42.0
    return {
        "address": a.__array_interface__["data"][0],
        "is_own_ndarray": type(a) is np.ndarray,
        "ndarray": id(np.ndarray),
        "total": float(a[:1000].sum()),
    }


def head(a, n: int):
    """A contiguous view of the argument: crosses back without a copy."""
    return a[:n]


def handshake(started_fd: int, go_fd: int) -> bytes:
    """Tell the caller it runs, then wait for its go (pipes: no sleeps)."""
    os.write(started_fd, b"s")
    return os.read(go_fd, 1)


def worker_facts(started_fd: int, go_fd: int, h5_path: str, k: int) -> dict:
    """Its context, its numpy and a product computed with it, and case 6's
    thread-unsafe work (an ARPACK eigen-solve, an HDF5 round trip), once
    every worker runs one (the caller reads a start from each, then lets
    all go: pipes, no sleeps)."""
    import numpy
    import vlcs

    os.write(started_fd, b"s")
    os.read(go_fd, 1)
    ctx = vlcs.current()
    return {
        "name": ctx.name,
        "mode": ctx.mode,
        "numpy": id(numpy),
        "dot": float(numpy.arange(10.0) @ numpy.arange(10.0)),
        "threads": ctx.threadpools()[0]["num_threads"],
        "eigsh_h5_exact": _eigsh_h5_exact(h5_path, 1.0 + k),
    }


def _eigsh_h5_exact(path: str, scale: float) -> bool:
    """ARPACK's four largest eigenvalues of a scaled 1-D Laplacian (known:
    scale * (2 - 2 cos(j pi / (n + 1)))), written to HDF5 with gzip and read
    back: both libraries keep process-wide state, one call at a time per copy."""
    import h5py
    import numpy as np
    import scipy.sparse as sp
    import scipy.sparse.linalg as sla

    n = 400
    ones = np.ones(n - 1)
    a = sp.diags([-ones, 2 * np.ones(n), -ones], [-1, 0, 1]) * scale
    vals = np.sort(sla.eigsh(a, k=4, which="LA", return_eigenvectors=False))
    want = np.sort(scale * (2 - 2 * np.cos(np.arange(n - 3, n + 1) * np.pi / (n + 1))))
    with h5py.File(path, "w") as f:
        f.create_dataset("vals", data=vals, compression="gzip")
    with h5py.File(path, "r") as f:
        back = f["vals"][:]
    return bool(np.allclose(vals, want, rtol=1e-8)) and bool((back == vals).all())


def h5_job(path: str, seed: int) -> dict:
    """Write gzip-compressed datasets with this context's h5py, read them back."""
    import h5py
    import numpy as np

    data = np.random.default_rng(seed).random((200, 500))
    with h5py.File(path, "w") as f:
        for i in range(6):
            f.create_dataset(f"d{i}", data=data + i, compression="gzip", compression_opts=6)
    total = 0.0
    with h5py.File(path, "r") as f:
        for i in range(6):
            total += float(f[f"d{i}"][...].sum())
    return {"total": round(total, 6), "h5py": id(h5py), "hdf5": h5py.version.hdf5_version}


def eigsh_job(n: int, k: int, seed: int) -> dict:
    """The k largest eigenvalues of a sparse symmetric operator with ARPACK
    (scipy.sparse.linalg.eigsh), and when the solve ran."""
    import numpy as np
    import scipy
    import scipy.sparse as sp
    import scipy.sparse.linalg as spla

    rng = np.random.default_rng(seed)
    m = int(n**0.5)
    one = np.ones(n)
    a = sp.diags(
        [4 + rng.random(n), -one[1:], -one[1:], -one[m:], -one[m:]],
        [0, 1, -1, m, -m],
        format="csr",
    )
    calls: list[float] = []  # when ARPACK asked for products: while it ran

    def matvec(x):
        calls.append(time.perf_counter())
        return a @ x

    op = spla.LinearOperator(a.shape, matvec=matvec, dtype=a.dtype)
    vals = spla.eigsh(op, k=k, which="LA", return_eigenvectors=False, tol=1e-8, ncv=4 * k)
    return {
        "values": [round(float(v), 6) for v in sorted(vals)],
        "scipy": scipy.__version__,
        "scipy_id": id(scipy),
        "start": calls[0],
        "end": calls[-1],
    }


def buffer_ids(b: bytes, mv: memoryview) -> list:
    """What a bytes and a memoryview argument are on the worker's side."""
    mv[0] = 7  # a memoryview is a view: the caller's bytearray changes
    return [id(b), id(mv.obj), len(b)]

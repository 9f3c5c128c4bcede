"""Tasks for tests/python/test_tune.py, run by vlcs tune inside contexts."""

from __future__ import annotations

import ctypes


def gemm_series(n: int = 400, reps: int = 6) -> float:
    """A numpy (OpenBLAS) GEMM series; returns a checksum."""
    import numpy as np

    a = np.random.default_rng(0).random((n, n))
    s = 0.0
    for _ in range(reps):
        s += float((a @ a)[0, 0])
    return s


def stencil(library: str, n: int = 80, iters: int = 30) -> float:
    """An OpenMP 3-D stencil from a compiled library (tune_stencil.c)."""
    lib = ctypes.CDLL(library)
    lib.stencil.restype = ctypes.c_double
    lib.stencil.argtypes = [ctypes.c_int, ctypes.c_int]
    return float(lib.stencil(n, iters))


def fails() -> None:
    """A task that always fails."""
    1 / 0  # noqa: B018

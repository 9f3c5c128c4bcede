"""The evaluation's tasks as ``vlcs tune`` runs them: functions importable by
name, each doing one side of a case's workload in a fresh process (the
tuner's trials), with the work the case times."""

from __future__ import annotations

import ctypes


def _kernels(library: str) -> ctypes.CDLL:
    from vlcs_bench.evaluation.contention import _bind

    return _bind(ctypes.CDLL(library))


def stencil(library: str, n: int, iters: int) -> float:
    return float(_kernels(library).stencil3d(n, iters))


def kmeans(library: str, points: int, iters: int) -> float:
    return float(_kernels(library).kmeans(points, 8, 16, iters))


def cfd(library: str, cells: int, iters: int) -> float:
    return float(_kernels(library).cfd(cells, iters))


def contended(library: str, n: int, iters: int) -> float:
    return float(_kernels(library).contended(n, iters))


def cholesky_series(n: int, reps: int) -> float:
    import numpy as np

    from vlcs_bench.evaluation.contention import _cholesky, spd_matrix

    return _cholesky(np, spd_matrix(np, n), reps)


def gemm_series(n: int, reps: int) -> float:
    import numpy as np

    from vlcs_bench.evaluation.contention import _gemm

    return _gemm(np, np.random.default_rng(0).random((n, n)), reps)


def mlp_training(steps: int) -> float:
    import torch

    from vlcs_bench.evaluation.contention import _train_mlp

    return _train_mlp(torch, steps)


def large_gemm(n: int) -> float:
    import numpy as np

    a = np.random.default_rng(0).random((n, n))
    return float((a @ a).trace())


def small_gemms(count: int) -> float:
    import numpy as np

    xs = [np.random.default_rng(i).random((64, 64)) for i in range(64)]
    return float(sum((xs[i % 64] @ xs[i % 64])[0, 0] for i in range(count)))

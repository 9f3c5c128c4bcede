"""Case 4 (paper Fig. 8): parallel runtimes composed in one process."""

from __future__ import annotations

import ctypes
import os
import time
from pathlib import Path
from typing import Any

from vlcs.evaluation._build import build
from vlcs.evaluation._harness import Strategy, measure, ncpus, say
from vlcs.evaluation._tasks import on_threads, split_cpus

TITLE = "Contention and load balance (paper Fig. 8)"
MODELS = (
    "an application that runs two parallel libraries at the same time, each "
    "sized for the whole machine by default: OpenMP kernels (a 7-point 3-D stencil "
    "like Hotspot3D, k-means) with libgomp's default spin-then-sleep waiting, beside "
    "OpenBLAS work through numpy (Cholesky, GEMM). Composed without contexts each "
    "runtime starts a thread per core; with contexts each gets its share of the cores."
)


def build_kernels() -> Path:
    """The OpenMP kernels as a shared library (compiled once, cached)."""
    return build("omp_kernels", ["omp_kernels.c"], ["-O2", "-fopenmp", "-shared", "-fPIC"])


def _bind(lib: ctypes.CDLL) -> ctypes.CDLL:
    lib.stencil3d.restype = ctypes.c_double
    lib.stencil3d.argtypes = [ctypes.c_int, ctypes.c_int]
    lib.kmeans.restype = ctypes.c_double
    lib.kmeans.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
    return lib


def _cholesky(np: Any, m: Any, reps: int) -> float:
    s = 0.0
    for _ in range(reps):
        s += float(np.linalg.cholesky(m).trace())
    return s


def _gemm(np: Any, m: Any, reps: int) -> float:
    s = 0.0
    for _ in range(reps):
        s += float((m @ m)[0, 0])
    return s


def run(quick: bool) -> dict[str, Any]:
    import numpy as np

    import vlcs

    n = ncpus()
    say("contention: compiling the OpenMP kernels")
    path = build_kernels()
    base = _bind(ctypes.CDLL(str(path)))
    ca, cb = split_cpus(n, n // 2)
    omp_ctx, blas_ctx = vlcs.VLC(cpus=ca, name="openmp"), vlcs.VLC(cpus=cb, name="openblas")
    ctx_lib = _bind(omp_ctx.load(str(path)))
    with blas_ctx:
        import numpy as np_c

    size = 1200 if quick else 2000
    rng = np.random.default_rng(0)
    g = rng.random((size, size))
    spd = g @ g.T + size * np.eye(size)
    spd_c, g_c = np_c.asarray(spd), np_c.asarray(g)
    sten = (140, 50) if quick else (180, 80)
    km = (200000, 8, 16, 40) if quick else (400000, 8, 16, 60)
    reps = 8 if quick else 16

    groups = []
    for title, omp_call, blas_fn, blas_in, blas_in_c in [
        (
            f"stencil3d {sten[0]}³ x{sten[1]} + numpy Cholesky {size}² x{reps}",
            lambda lib: lib.stencil3d(*sten),
            _cholesky,
            spd,
            spd_c,
        ),
        (
            f"k-means {km[0]} points + numpy GEMM {size}² x{reps}",
            lambda lib: lib.kmeans(*km),
            _gemm,
            g,
            g_c,
        ),
    ]:

        def sequential(omp_call=omp_call, blas_fn=blas_fn, blas_in=blas_in) -> list[float]:
            return [omp_call(base), blas_fn(np, blas_in, reps)]

        def composed(omp_call=omp_call, blas_fn=blas_fn, blas_in=blas_in) -> list[float]:
            return on_threads(lambda: omp_call(base), lambda: blas_fn(np, blas_in, reps))

        def contexts(omp_call=omp_call, blas_fn=blas_fn, blas_in_c=blas_in_c) -> list[float]:
            fa = omp_ctx.submit(omp_call, ctx_lib)
            fb = blas_ctx.submit(blas_fn, np_c, blas_in_c, reps)
            return [fa.result(), fb.result()]

        # The makespan lower bound: each task's work measured on one core (in
        # its one-CPU context), spread over every core, and no shorter than
        # the longer task alone on its faster of one core or every core.
        t = time.perf_counter()
        omp_call(base)
        t_omp = time.perf_counter() - t
        t = time.perf_counter()
        blas_fn(np, blas_in, reps)
        t_blas = time.perf_counter() - t
        t = time.perf_counter()
        omp_ctx.submit(omp_call, ctx_lib).result()
        w_omp = time.perf_counter() - t
        t = time.perf_counter()
        blas_ctx.submit(blas_fn, np_c, blas_in_c, reps).result()
        w_blas = time.perf_counter() - t
        ideal = max((w_omp + w_blas) / n, min(t_omp, w_omp), min(t_blas, w_blas))
        groups.append(
            measure(
                title,
                [
                    Strategy("sequential, all cores each", sequential),
                    Strategy("composed on threads, no contexts", composed),
                    Strategy(f"vlcs contexts ({ca} | {cb})", contexts),
                ],
                3 if quick else 5,
                ideal_s=ideal,
                note=f"Alone with all cores: OpenMP kernel {t_omp:.2f} s, OpenBLAS part "
                f"{t_blas:.2f} s; on one core {w_omp:.2f} s and {w_blas:.2f} s. Where both "
                "scale perfectly sequential already reaches the bound; a partition wins "
                "only where a library leaves cores idle or the two fight over them.",
            )
        )
    return {
        "groups": groups,
        "notes": [
            "Not run yet: the CFD-like kernel and the small torch DNN of the paper's "
            "compositions; GESV is exercised by case 3's workloads instead.",
            f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'unset (libgomp default)')}.",
        ],
    }

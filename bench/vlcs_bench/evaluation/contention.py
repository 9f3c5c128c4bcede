"""Case 4 (paper Fig. 8): parallel runtimes composed in one process."""

from __future__ import annotations

import ctypes
import os
import time
from functools import partial
from pathlib import Path
from typing import Any

from vlcs_bench._build import build
from vlcs_bench.evaluation._harness import (
    Strategy,
    baseline_row,
    bound_runs,
    bound_runs_text,
    measure,
    ncpus,
    say,
    set_ideal,
    timed_runs,
)
from vlcs_bench.evaluation._tasks import (
    on_threads,
    progress_reporters,
    same_sizes,
    split_cpus,
    tuned_partition,
)

TITLE = "Contention and load balance (paper Fig. 8)"
MODELS = (
    "an application that runs two parallel libraries at the same time, each "
    "sized for the whole machine by default: OpenMP kernels (a 7-point 3-D stencil "
    "like Hotspot3D, k-means, a CFD-like unstructured finite-volume update like Rodinia's "
    "euler3d) with libgomp's default spin-then-sleep waiting, beside OpenBLAS work "
    "through numpy (Cholesky, GEMM) or a small torch MLP training. Composed without contexts each "
    "runtime starts a thread per core; with contexts each gets its share of the cores."
)


def build_kernels() -> Path:
    """The OpenMP kernels as a shared library (compiled once, cached)."""
    return build(
        "omp_kernels", ["omp_kernels.c"], ["-O2", "-fopenmp", "-shared", "-fPIC"], libs=("-lm",)
    )


def _bind(lib: ctypes.CDLL) -> ctypes.CDLL:
    """The kernels' types; the _p forms take a progress reporter's address
    (0: none) after the other arguments."""
    args = {"stencil3d": 2, "kmeans": 4, "cfd": 2, "contended": 2}
    for name, n in args.items():
        for fn, extra in ((getattr(lib, name), []), (getattr(lib, name + "_p"), [ctypes.c_void_p])):
            fn.restype = ctypes.c_double
            fn.argtypes = [ctypes.c_int] * n + extra
    return lib


def _nothing() -> None:
    pass


def spd_matrix(np: Any, size: int) -> Any:
    """The case's symmetric positive definite operand (and its GEMM's: the
    generator's first draw)."""
    g = np.random.default_rng(0).random((size, size))
    return g @ g.T + size * np.eye(size)


def _on_numpy_in(ctx: Any, fn: Any, m: Any, reps: int) -> Any:
    """fn(np, m, reps) as a call of no arguments, np the context's own numpy
    and m a copy of the operand in it."""
    with ctx:
        import numpy

    return partial(fn, numpy, numpy.asarray(m), reps)


def _torch_in(ctx: Any) -> Any:
    """The context's own torch."""
    with ctx:
        import torch

    return torch


def _cholesky(np: Any, m: Any, reps: int, report: Any = _nothing) -> float:
    s = 0.0
    for _ in range(reps):
        s += float(np.linalg.cholesky(m).trace())
        report()
    return s


def _gemm(np: Any, m: Any, reps: int, report: Any = _nothing) -> float:
    s = 0.0
    for _ in range(reps):
        s += float((m @ m)[0, 0])
        report()
    return s


def _train_mlp(torch: Any, steps: int, report: Any = _nothing) -> float:
    """A small DNN trained with SGD on fixed random data; the final loss.
    Its own generator, so concurrent trainings draw the same numbers;
    `report` is called after each step (vlcs.progress in elastic contexts)."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2048, 256, generator=g)
    y = torch.randn(2048, 16, generator=g)
    layers = []
    for i, o in ((256, 512), (512, 512), (512, 16)):
        lin = torch.nn.Linear(i, o)
        with torch.no_grad():
            lin.weight.copy_(torch.randn(o, i, generator=g) / i**0.5)
            lin.bias.zero_()
        layers += [lin, torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers[:-1])
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        report()
    return round(float(loss.detach()), 4)


def _fastest(call: Any) -> float:
    """The shortest of bound_runs() timed calls, in seconds."""
    best = float("inf")
    for _ in range(bound_runs()):
        t = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - t)
    return best


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
    # The same split, elastic: the first to finish lends its CPUs to the
    # other (made elastic before loading, so libgomp starts with dynamic
    # teams).
    every = f"0-{n - 1}"
    omp_el = vlcs.VLC(cpus=ca, elastic=every, name="openmp-elastic")
    blas_el = vlcs.VLC(cpus=cb, elastic=every, name="openblas-elastic")
    el_lib = _bind(omp_el.load(str(path)))
    report, report_c = progress_reporters()
    with blas_el:
        import numpy as np_e

    size = 1200 if quick else 2000
    g = np.random.default_rng(0).random((size, size))
    spd = spd_matrix(np, size)
    spd_c, g_c = np_c.asarray(spd), np_c.asarray(g)
    spd_e, g_e = np_e.asarray(spd), np_e.asarray(g)
    sten = (140, 50) if quick else (180, 80)
    km = (200000, 8, 16, 40) if quick else (400000, 8, 16, 60)
    reps = 8 if quick else 16

    # What vlcs tune runs for each pair (fresh processes), and the other
    # side's call in a context of the tuned partition, made of that
    # context's own numpy or torch.
    tmod = "vlcs_bench.evaluation.tunable"
    lib_path = str(path)

    def tasks(kernel: str, kernel_args: dict[str, int], other: str, **other_args: int) -> list[Any]:
        """The pair as vlcs tune runs it: the kernel, and the other side."""
        return [
            vlcs.Task("openmp", call=f"{tmod}:{kernel}", args={"library": lib_path, **kernel_args}),
            vlcs.Task("other", call=f"{tmod}:{other}", args=other_args),
        ]

    tune_tasks = [
        tasks("stencil", {"n": sten[0], "iters": sten[1]}, "cholesky_series", n=size, reps=reps),
        tasks("kmeans", {"points": km[0], "iters": km[3]}, "gemm_series", n=size, reps=reps),
    ]
    tuned_other: list[Any] = [
        lambda c: _on_numpy_in(c, _cholesky, spd, reps),
        lambda c: _on_numpy_in(c, _gemm, g, reps),
    ]

    pairs: list[tuple[str, Any, Any, Any, Any]] = [
        (
            f"stencil3d {sten[0]}³ x{sten[1]} + numpy Cholesky {size}² x{reps}",
            lambda lib, rp=0: lib.stencil3d_p(*sten, rp),
            lambda: _cholesky(np, spd, reps),
            lambda: _cholesky(np_c, spd_c, reps),
            lambda report=_nothing: _cholesky(np_e, spd_e, reps, report),
        ),
        (
            f"k-means {km[0]} points + numpy GEMM {size}² x{reps}",
            lambda lib, rp=0: lib.kmeans_p(*km, rp),
            lambda: _gemm(np, g, reps),
            lambda: _gemm(np_c, g_c, reps),
            lambda report=_nothing: _gemm(np_e, g_e, reps, report),
        ),
    ]
    if not quick:
        # The paper's third composition; torch twice (base and context) costs
        # some seconds of imports, so in full mode only.
        import torch

        with blas_ctx:
            import torch as torch_c
        with blas_el:
            import torch as torch_e
        cells, steps = (400000, 60), 60
        pairs.append(
            (
                f"CFD-like {cells[0]} cells x{cells[1]} + torch MLP training x{steps}",
                lambda lib, rp=0: lib.cfd_p(*cells, rp),
                lambda: _train_mlp(torch, steps),
                lambda: _train_mlp(torch_c, steps),
                lambda report=_nothing: _train_mlp(torch_e, steps, report),
            )
        )
        tune_tasks.append(
            tasks("cfd", {"cells": cells[0], "iters": cells[1]}, "mlp_training", steps=steps)
        )
        tuned_other.append(lambda c: partial(_train_mlp, _torch_in(c), steps))
    # A library past its scaling, made plain: a loop whose every term takes
    # one critical section runs slower on two threads than on one, so a
    # lend of the GEMMs' CPU slows it (what lends judged by progress are
    # for; on the 16-core node OpenBLAS's Cholesky did this from 8 to 16).
    # The GEMMs beside it are fewer and smaller than the other pairs', so
    # that they end first and the loop is the one lent a CPU.
    crit, small, small_reps = (100000, 400 if quick else 800), 1000, 6
    gs = g[:small, :small].copy()
    gs_c, gs_e = np_c.asarray(gs), np_e.asarray(gs)
    pairs.append(
        (
            f"OpenMP critical-section loop {crit[0]} x{crit[1]} + numpy GEMM {small}² "
            f"x{small_reps}",
            lambda lib, rp=0: lib.contended_p(*crit, rp),
            lambda: _gemm(np, gs, small_reps),
            lambda: _gemm(np_c, gs_c, small_reps),
            lambda report=_nothing: _gemm(np_e, gs_e, small_reps, report),
        )
    )
    tune_tasks.append(
        tasks(
            "contended", {"n": crit[0], "iters": crit[1]}, "gemm_series", n=small, reps=small_reps
        )
    )
    tuned_other.append(lambda c: _on_numpy_in(c, _gemm, gs, small_reps))

    groups = []
    for k, (title, omp_call, other, other_c, other_e) in enumerate(pairs):

        def sequential(omp_call=omp_call, other=other) -> list[float]:
            return [omp_call(base), other()]

        def composed(omp_call=omp_call, other=other) -> list[float]:
            return on_threads(lambda: omp_call(base), other)

        def contexts(omp_call=omp_call, other_c=other_c) -> list[float]:
            fa = omp_ctx.submit(omp_call, ctx_lib)
            fb = blas_ctx.submit(other_c)
            return [fa.result(), fb.result()]

        def elastic(omp_call=omp_call, other_e=other_e) -> list[float]:
            fa = omp_el.submit(omp_call, el_lib)
            fb = blas_el.submit(other_e)
            return [fa.result(), fb.result()]

        def judged(omp_call=omp_call, other_e=other_e) -> list[float]:
            fa = omp_el.submit(omp_call, el_lib, report_c)
            fb = blas_el.submit(other_e, report)
            return [fa.result(), fb.result()]

        # The partition vlcs tune finds on this machine; where it is not the
        # halves, contexts of its own run it, with their own imports (made
        # before the timing, as a user's would be).
        say(f"contention: {title}: vlcs tune's partition on this machine")
        plan, tuning = tuned_partition(tune_tasks[k], quick)
        ta, tb = (t["cpus"] for t in plan["tasks"])
        tuned_rows = []
        halves = f"vlcs contexts ({ca} | {cb})"
        if same_sizes(plan, (ca, cb)):
            halves = f"vlcs contexts ({ca} | {cb}; vlcs tune chose these sizes)"
        else:
            t_omp, t_other = vlcs.VLC.from_plan(plan, "openmp"), vlcs.VLC.from_plan(plan, "other")
            t_lib = _bind(t_omp.load(lib_path))
            call_t = tuned_other[k](t_other)  # imports what the pair needs into t_other

            def tuned(
                omp_call=omp_call, t_omp=t_omp, t_lib=t_lib, t_other=t_other, call=call_t
            ) -> list[float]:
                fa = t_omp.submit(omp_call, t_lib)
                fb = t_other.submit(call)
                return [fa.result(), fb.result()]

            tuned_rows = [Strategy(f"vlcs contexts, vlcs tune's ({ta} | {tb})", tuned)]

        lent = f"vlcs elastic contexts ({ca} | {cb}, lending)"
        grp = measure(
            title,
            [
                Strategy("sequential, all cores each", sequential),
                Strategy("composed on threads, no contexts", composed),
                Strategy(halves, contexts),
                *tuned_rows,
                Strategy(lent, elastic),
                Strategy(f"vlcs elastic contexts ({ca} | {cb}, lends judged by progress)", judged),
            ],
            timed_runs(quick),
            timeline=lent,
        )
        # The makespan lower bound, timed after the warm-up above (a first
        # torch call is twice as slow): each task's work measured on one core
        # (in its one-CPU context), spread over every core, and no shorter
        # than the longer task alone on its faster of one core or every core.
        # Each part is the fastest of three runs in full mode: a bound from one slow run on
        # a noisy machine could exceed sequential, which is itself a schedule.
        t_omp_s = _fastest(lambda omp_call=omp_call: omp_call(base))
        t_blas = _fastest(other)
        w_omp = _fastest(lambda omp_call=omp_call: omp_ctx.submit(omp_call, ctx_lib).result())
        w_blas = _fastest(lambda other_c=other_c: blas_ctx.submit(other_c).result())
        ideal = max((w_omp + w_blas) / n, min(t_omp_s, w_omp), min(t_blas, w_blas))
        set_ideal(grp, min(ideal, baseline_row(grp)["min_s"]))
        grp["note"] = (
            f"Alone with all cores ({bound_runs_text()}): OpenMP kernel {t_omp_s:.2f} s, other "
            f"library's part {t_blas:.2f} s; on one core {w_omp:.2f} s and {w_blas:.2f} s. "
            "Where both scale perfectly sequential already reaches the bound; a partition "
            "wins only where a library leaves cores idle or the two fight over them. " + tuning
        )
        groups.append(grp)
    return {
        "groups": groups,
        "notes": [
            "The CFD-like kernel + torch MLP composition runs in full mode only (it imports "
            "torch three times); GESV is exercised by case 3's workloads.",
            "Elastic contexts: the same homes, each may grow to every CPU; the task that "
            "finishes first lends its CPUs to the other (OpenBLAS resized, libgomp's "
            "dynamic teams, threads moved) until the next run enters it again. Lends judged "
            "by progress: the same, each task reporting its iterations (vlcs.progress, "
            "vlcs_ctx_progress from the kernels), so that a borrower keeps a lend only where "
            "its rate rose 5 % or more with it.",
            f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'unset (libgomp default)')}.",
        ],
    }

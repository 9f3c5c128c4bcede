"""Case 9 (nOS-V's co-execution): four unequal tasks at once."""

from __future__ import annotations

import ctypes
import time
from typing import Any

from vlcs_bench.evaluation._harness import (
    Strategy,
    baseline_row,
    bound_runs_text,
    measure,
    ncpus,
    say,
    set_ideal,
    timed_runs,
)
from vlcs_bench.evaluation._tasks import on_threads, progress_reporters
from vlcs_bench.evaluation.contention import _bind, _fastest, _gemm, _train_mlp, build_kernels

TITLE = "Four unequal tasks: static and elastic contexts (nOS-V co-execution)"
MODELS = (
    "an application that runs four parallel libraries at once with unequal work: two "
    "OpenMP kernels (a 3-D stencil, k-means), a numpy GEMM series on OpenBLAS and a torch "
    "MLP training. Plain threads oversubscribe the cores (every runtime starts a thread "
    "per core); static contexts give each task a fixed share, which sits idle once its "
    "task ends; elastic contexts lend an idle task's cores to the tasks still running."
)


def homes(n: int, k: int = 4) -> list[str]:
    """k CPU lists covering n CPUs: contiguous near-equal groups, or CPU
    i % n for task i when there are fewer CPUs than tasks.

    >>> homes(16)
    ['0-3', '4-7', '8-11', '12-15']
    >>> homes(2)
    ['0', '1', '0', '1']
    """
    if n < k:
        return [str(i % n) for i in range(k)]
    out, start = [], 0
    for i in range(k):
        size = n // k + (1 if i < n % k else 0)
        end = start + size - 1
        out.append(str(start) if size == 1 else f"{start}-{end}")
        start = end + 1
    return out


def run(quick: bool) -> dict[str, Any]:
    import numpy as np
    import torch
    import vlcs

    n = ncpus()
    every = f"0-{n - 1}"
    say("four tasks: compiling the OpenMP kernels, importing numpy and torch into contexts")
    path = build_kernels()
    base = _bind(ctypes.CDLL(str(path)))
    names = ["stencil", "kmeans", "gemm", "torch"]
    cpus = homes(n)
    # One context per task, elastic from the start (libgomp reads
    # OMP_DYNAMIC when it loads); the static strategy turns lending off.
    ctx = {
        name: vlcs.VLC(cpus=c, elastic=every, name=name)
        for name, c in zip(names, cpus, strict=True)
    }
    stencil_lib = _bind(ctx["stencil"].load(str(path)))
    kmeans_lib = _bind(ctx["kmeans"].load(str(path)))
    with ctx["gemm"]:
        import numpy as np_c
    with ctx["torch"]:
        import torch as torch_c

    sten = (120, 40) if quick else (160, 90)
    km = (100000, 8, 16, 30) if quick else (300000, 8, 16, 60)
    size, reps = (1000, 4) if quick else (1500, 10)
    steps = 15 if quick else 50
    g = np.random.default_rng(0).random((size, size))
    g_c = np_c.asarray(g)

    base_calls = [
        lambda: base.stencil3d(*sten),
        lambda: base.kmeans(*km),
        lambda: _gemm(np, g, reps),
        lambda: _train_mlp(torch, steps),
    ]
    ctx_calls = [
        (ctx["stencil"], lambda: stencil_lib.stencil3d(*sten)),
        (ctx["kmeans"], lambda: kmeans_lib.kmeans(*km)),
        (ctx["gemm"], lambda: _gemm(np_c, g_c, reps)),
        (ctx["torch"], lambda: _train_mlp(torch_c, steps)),
    ]
    # The same, each task reporting its iterations.
    report, report_c = progress_reporters()
    reporting_calls = [
        (ctx["stencil"], lambda: stencil_lib.stencil3d_p(*sten, report_c)),
        (ctx["kmeans"], lambda: kmeans_lib.kmeans_p(*km, report_c)),
        (ctx["gemm"], lambda: _gemm(np_c, g_c, reps, report)),
        (ctx["torch"], lambda: _train_mlp(torch_c, steps, report)),
    ]

    def lending(on: bool) -> None:
        for name in names:
            ctx[name].set_elastic(every if on else None)

    def sequential() -> list[Any]:
        return [call() for call in base_calls]

    def threads() -> list[Any]:
        return on_threads(*base_calls)

    def submit_all(calls: list[tuple[Any, Any]] = ctx_calls) -> list[Any]:
        futures = [c.submit(call) for c, call in calls]
        return [f.result() for f in futures]

    def static() -> list[Any]:
        lending(False)
        try:
            return submit_all()
        finally:
            lending(True)

    def elastic() -> list[Any]:
        return submit_all()

    def judged() -> list[Any]:
        return submit_all(reporting_calls)

    title = (
        f"stencil3d {sten[0]}³ x{sten[1]} + k-means {km[0]} points + numpy GEMM {size}² "
        f"x{reps} + torch MLP x{steps}"
    )
    homes_s = " | ".join(cpus)
    lent = f"vlcs elastic contexts ({homes_s}, lending)"
    group = measure(
        title,
        [
            Strategy("sequential, all cores each", sequential),
            Strategy("four threads, no contexts", threads),
            Strategy(f"vlcs static contexts ({' | '.join(cpus)})", static),
            Strategy(lent, elastic),
            Strategy(f"vlcs elastic contexts ({homes_s}, lends judged by progress)", judged),
        ],
        timed_runs(quick),
        # each task's first call (torch's lazy start, four runtimes' pools)
        # took 15-25x the tasks' work on 16 cores, all of it landing on the
        # strategies timed first
        warm_when_quick=True,
        timeline=lent,
    )
    # The makespan lower bound, as in case 4: each task's work on its home
    # (one context alone, lending off), spread over every core, and no
    # shorter than the longest task alone on its faster of home or all cores.
    say("four tasks: timing each task alone for the makespan bound")
    lending(False)
    alone_home = [_fastest(lambda c=c, call=call: c.submit(call).result()) for c, call in ctx_calls]
    lending(True)
    alone_all = [_fastest(call) for call in base_calls]
    home_cpus = [len(ctx[name].home_cpus) for name in names]
    work = sum(t * k for t, k in zip(alone_home, home_cpus, strict=True))
    ideal = max(work / n, max(min(a, h) for a, h in zip(alone_all, alone_home, strict=True)))
    set_ideal(group, min(ideal, baseline_row(group)["min_s"]))
    group["note"] = (
        f"Alone ({bound_runs_text()}), with all cores / on its home: "
        + ", ".join(
            f"{name} {a:.2f} / {h:.2f} s"
            for name, a, h in zip(names, alone_all, alone_home, strict=True)
        )
        + f". Bound: max(work on homes x home sizes / {n} cores, the longest task alone)."
    )
    return {
        "groups": [group],
        "notes": [
            "Static contexts are the same four contexts with lending off "
            "(set_elastic(None)); elastic contexts may each grow to every CPU while others "
            "are idle. Where there are fewer CPUs than tasks, two homes share a CPU. Lends "
            "judged by progress: the same, each task reporting its iterations, so that a "
            "borrower keeps a lend only where its rate rose 5 % or more with it.",
        ],
    }


if __name__ == "__main__":  # a quick look: python -m vlcs_bench.evaluation.four_tasks
    t = time.perf_counter()
    print(run(quick=True)["groups"][0]["rows"], time.perf_counter() - t)

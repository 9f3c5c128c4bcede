"""Case 5 (paper Fig. 9): nested parallelism, one large GEMM beside many small."""

from __future__ import annotations

import os
import subprocess
from typing import Any

from vlcs_bench.evaluation._harness import Strategy, measure, ncpus, say, summarise, timed_runs
from vlcs_bench.evaluation._tasks import (
    on_threads,
    progress_reporters,
    same_sizes,
    split_cpus,
    tuned_partition,
)
from vlcs_bench.evaluation.contention import _fastest, _nothing
from vlcs_bench.programs import launch

TITLE = "Nested parallelism (paper Fig. 9)"
MODELS = (
    "an application with two parallel phases at once: one large matrix product, "
    "which scales with cores, beside thousands of small ones, which OpenBLAS runs "
    "single-threaded; what users do today is run them one after the other, or on "
    "two threads sharing one OpenBLAS, optionally capped with threadpoolctl / "
    "openblas_set_num_threads (process-wide)."
)


def _big(np: Any, a: Any) -> float:
    return float((a @ a).trace())


def _small(np: Any, xs: list[Any], report: Any = _nothing) -> float:
    """The small products; `report` is called after every 64 of them
    (vlcs.progress where the lends are judged)."""
    total = 0.0
    for i, x in enumerate(xs, 1):
        total += float((x @ x)[0, 0])
        if i % 64 == 0:
            report()
    return total


def _python(quick: bool) -> dict[str, Any]:
    import numpy as np
    import vlcs
    from threadpoolctl import threadpool_limits

    n = ncpus()
    big_n, count = (1800, 24000) if quick else (2500, 64000)
    rng = np.random.default_rng(0)
    a = rng.random((big_n, big_n))
    xs = [rng.random((64, 64)) for _ in range(64)] * (count // 64)
    cb, cs = split_cpus(n, n - 1)
    big_ctx, small_ctx = vlcs.VLC(cpus=cb, name="big"), vlcs.VLC(cpus=cs, name="small")
    with big_ctx:
        import numpy as np_big
    with small_ctx:
        import numpy as np_small
    a_big = np_big.asarray(a)
    xs_small = [np_small.asarray(x) for x in xs[:64]] * (count // 64)
    # The same homes, elastic: whichever finishes first lends its CPUs to
    # the other (OpenBLAS takes a new count at its next call, so the large
    # GEMM, one call, keeps the count it started with).
    every = f"0-{n - 1}"
    big_el = vlcs.VLC(cpus=cb, elastic=every, name="big-elastic")
    small_el = vlcs.VLC(cpus=cs, elastic=every, name="small-elastic")
    with big_el:
        import numpy as np_big_el
    with small_el:
        import numpy as np_small_el
    a_big_el = np_big_el.asarray(a)
    xs_small_el = [np_small_el.asarray(x) for x in xs[:64]] * (count // 64)

    def sequential() -> list[float]:
        return [_big(np, a), _small(np, xs)]

    def threads() -> list[float]:
        return on_threads(lambda: _big(np, a), lambda: _small(np, xs))

    def limited() -> list[float]:
        with threadpool_limits(limits=max(1, n // 2), user_api="blas"):
            return on_threads(lambda: _big(np, a), lambda: _small(np, xs))

    def contexts() -> list[float]:
        fb = big_ctx.submit(_big, np_big, a_big)
        fs = small_ctx.submit(_small, np_small, xs_small)
        return [fb.result(), fs.result()]

    def elastic(report: Any = _nothing) -> list[float]:
        fb = big_el.submit(_big, np_big_el, a_big_el)
        fs = small_el.submit(_small, np_small_el, xs_small_el, report)
        return [fb.result(), fs.result()]

    # The same, the small products reporting their progress: a lend of the
    # large GEMM's CPUs that does not speed them up goes back (the large
    # GEMM is one call, with nothing to report until it ends).
    report, _ = progress_reporters()

    # The partition vlcs tune finds on this machine; where it is not the
    # static one above, contexts of its own run it.
    say("nested: vlcs tune's partition on this machine")
    tmod = "vlcs_bench.evaluation.tunable"
    plan, tuning = tuned_partition(
        [
            vlcs.Task("big", call=f"{tmod}:large_gemm", args={"n": big_n}),
            vlcs.Task("small", call=f"{tmod}:small_gemms", args={"count": count}),
        ],
        quick,
    )
    tb, ts = (t["cpus"] for t in plan["tasks"])
    static = f"vlcs contexts ({cb} | {cs})"
    tuned_rows = []
    if same_sizes(plan, (cb, cs)):
        static = f"vlcs contexts ({cb} | {cs}; vlcs tune chose these sizes)"
    else:
        big_t, small_t = vlcs.VLC.from_plan(plan, "big"), vlcs.VLC.from_plan(plan, "small")
        with big_t:
            import numpy as np_big_t
        with small_t:
            import numpy as np_small_t
        a_big_t = np_big_t.asarray(a)
        xs_small_t = [np_small_t.asarray(x) for x in xs[:64]] * (count // 64)

        def tuned() -> list[float]:
            fb = big_t.submit(_big, np_big_t, a_big_t)
            fs = small_t.submit(_small, np_small_t, xs_small_t)
            return [fb.result(), fs.result()]

        tuned_rows = [Strategy(f"vlcs contexts, vlcs tune's ({tb} | {ts})", tuned)]

    # The makespan lower bound: the work measured on one core each, spread
    # over every core, but no shorter than the large GEMM with every core.
    # Each part is the fastest of three runs in full mode (as in case 4): one slow run on
    # a noisy machine would put the bound above what a strategy reached.
    with threadpool_limits(limits=1, user_api="blas"):
        w_big = _fastest(lambda: _big(np, a))
        w_small = _fastest(lambda: _small(np, xs))
    big_all = _fastest(lambda: _big(np, a))
    ideal = max((w_big + w_small) / n, big_all, w_small)
    lent = f"vlcs elastic contexts ({cb} | {cs}, lending)"
    group = measure(
        f"Python: one {big_n}² GEMM + {count} of 64² (numpy)",
        [
            Strategy("sequential, all cores each", sequential),
            Strategy("threads, one OpenBLAS", threads),
            Strategy(f"threads + threadpoolctl ({max(1, n // 2)} each)", limited),
            Strategy(static, contexts),
            *tuned_rows,
            Strategy(lent, elastic),
            Strategy(
                f"vlcs elastic contexts ({cb} | {cs}, lends judged by progress)",
                lambda: elastic(report),
            ),
        ],
        repeats=timed_runs(quick),
        timeline=lent,
        ideal_s=ideal,
        note="threadpoolctl's limit is process-wide: the large GEMM is capped too. "
        f"Work on one core: large {w_big:.3f} s, small {w_small:.3f} s; the large GEMM "
        f"alone with all cores {big_all:.3f} s. Ideal makespan = "
        f"max(one-core work / {n} cores, large GEMM "
        "with all cores, small ones on one core). " + tuning,
    )
    return group


def _cpp(quick: bool) -> dict[str, Any]:
    reps = timed_runs(quick)
    say(f"nested: C++ demo, {reps} runs of each strategy")
    env = dict(os.environ, VLCS_DEMO_TIMES="1")
    out = subprocess.run(
        launch("vlcs-demo-nested-gemm", str(reps)),
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout
    line = next(x for x in out.splitlines() if x.startswith("TIMES "))
    times = {
        k: [float(v) for v in vs.split(",")] for k, vs in (p.split("=") for p in line.split()[1:])
    }
    head = out.splitlines()[0]
    names = {
        "sequential": "sequential, all cores each",
        "threads": "threads, one OpenBLAS",
        "limited": "threads + openblas_set_num_threads(cores/2)",
        "contexts": "vlcs contexts (tailored cores)",
    }
    return summarise(
        f"C++: {head.split(': ', 1)[1]}",
        {names[k]: times[k] for k in names},
        ideal_speedup=min(2.0, ncpus()),
        note="Run by the C++ demo (demo/nested_gemm.cpp), strategies interleaved per repeat; "
        "results are not compared there. Ideal: the 2x ceiling of two tasks on two cores.",
    )


def run(quick: bool) -> dict[str, Any]:
    return {"groups": [_cpp(quick), _python(quick)]}

"""Case 11: ``vlcs tune``'s grid against its smart search."""

from __future__ import annotations

import tempfile
from typing import Any

from vlcs_bench.evaluation._harness import ncpus, say, table

TITLE = "Auto-tuning: grid versus smart search (vlcs tune)"
MODELS = (
    "a user who tunes the CPU partition of two concurrent tasks before a long run: case "
    "4's k-means (OpenMP) beside a numpy GEMM series, and case 5's one large GEMM beside "
    "many small ones. The paper's tuner measures every partition (its grid: 64 runs and "
    "about 10 minutes for two OpenBLAS kernels on 24 cores); vlcs tune's smart search "
    "profiles each task alone, fits its scaling and measures only the promising partitions."
)


def run(quick: bool) -> dict[str, Any]:
    import vlcs

    from vlcs_bench.evaluation.contention import build_kernels

    n = ncpus()
    lib = str(build_kernels())
    mod = "vlcs_bench.evaluation.tunable"
    workloads = {
        "k-means + GEMM series (case 4)": [
            vlcs.Task(
                "kmeans",
                call=f"{mod}:kmeans",
                args={"library": lib, "points": 100000 if quick else 300000, "iters": 20},
            ),
            vlcs.Task(
                "gemm", call=f"{mod}:gemm_series", args={"n": 800 if quick else 1500, "reps": 4}
            ),
        ],
        "one large GEMM + many small (case 5)": [
            vlcs.Task("large", call=f"{mod}:large_gemm", args={"n": 1200 if quick else 2000}),
            vlcs.Task("small", call=f"{mod}:small_gemms", args={"count": 8000 if quick else 30000}),
        ],
    }
    rows = []
    for title, tasks in workloads.items():
        plans = {}
        for method in ("grid", "smart"):
            say(f"tuning search: {title}, {method}")
            with tempfile.TemporaryDirectory() as d:
                plans[method] = vlcs.tune(
                    tasks, method=method, out=d, progress=False, repeats=1 if quick else 3
                )
        best = plans["grid"]["makespan_s"]
        # The quality of a choice, free of the noise between two tunings:
        # what the grid measured for the chosen partition, over its best.
        by_cpus = {tuple(m["cpus"]): m["makespan_s"] for m in plans["grid"]["measured"]}
        for method, p in plans.items():
            rows.append(
                [
                    title,
                    method + (" (measured the grid)" if p["searched"] != method else ""),
                    p["runs"],
                    p["grid_runs"],
                    round(p["tuning_s"], 1),
                    " / ".join(t["cpus"] for t in p["tasks"]),
                    round(p["makespan_s"], 3),
                    round(by_cpus[tuple(t["cpus"] for t in p["tasks"])] / best, 3),
                ]
            )
    return {
        "groups": [
            table(
                "vlcs tune on two workloads: runs, tuning time, the chosen partition",
                [
                    "workload",
                    "method",
                    "runs",
                    "grid runs",
                    "tuning s",
                    "chosen CPUs",
                    "makespan s",
                    "choice vs grid's best",
                ],
                rows,
                note=f"{n} CPUs. Runs include the two baselines (all tasks on every CPU; one "
                "after another), each trial a fresh process, its makespan the median of "
                f"{2 if quick else 3} runs. With two tasks on 6 CPUs or fewer "
                "the grid is no larger than three profiles, so smart measures it whole; "
                "the comparison the paper makes needs more cores. Choice vs grid's best: the "
                "grid's makespan of the partition chosen, over the grid's best (1 = the optimum).",
            )
        ]
    }

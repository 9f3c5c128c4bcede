"""Case 12: process pools against ContextPoolExecutor.

Every run is a whole job in a fresh interpreter (python -m
vlcs_bench.evaluation.pools STRATEGY WORKLOAD): it makes its inputs, starts
its pool, maps two tasks, shuts the pool down and prints its timings; this
process samples the memory of the job's whole process tree meanwhile (PSS,
so pages a forked worker shares with its parent count once)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

from vlcs_bench.jobs import (
    data_task,
    eigsh_child,
    grid_child,
    h5_child,
    numpy_and_loop,
    python_loop,
)

TITLE = "A process pool without processes: ContextPoolExecutor"
MODELS = (
    "a user who reaches for a process pool because a library is not thread-safe or "
    "oversubscribes: two tasks mapped over a pool of two workers, the pool started and "
    "shut down inside the job, as a script does. Workloads: case 6's h5py jobs and "
    "eigsh solves, and a data-heavy one where each task receives a large array and "
    "returns a small result, pure Python (a CPU-bound loop, where the GIL decides), a "
    "numpy + Python mix (GEMMs, then a Python loop) and scikit-learn's GridSearchCV (each "
    "task searches half of the grid; scikit-learn's Python holds the GIL much of the time). "
    "Strategies: sequential, threads, ProcessPoolExecutor (fork and spawn), loky "
    "(joblib's reusable executor), vlcs.ContextPoolExecutor with the shared Python and "
    'with a Python of its own per worker (python="own").'
)

STRATEGIES = {
    "sequential": "sequential",
    "threads": "threads",
    "ProcessPoolExecutor (fork)": "fork",
    "ProcessPoolExecutor (spawn)": "spawn",
    "loky": "loky",
    "vlcs ContextPoolExecutor": "contexts",
    "vlcs ContextPoolExecutor, own Python": "own",
}


# --- the tasks: module-level, so every kind of worker finds them by name ------------
# (in vlcs_bench.jobs)


def _inputs(workload: str, quick: bool, tmp: str) -> tuple[Any, list[tuple[Any, ...]]]:
    import numpy as np

    if workload == "h5py":
        rows = 300 if quick else 1200
        data = [np.random.default_rng(s).random((rows, 1000)) for s in (1, 2)]
        return h5_child, [(os.path.join(tmp, f"{i}.h5"), d) for i, d in enumerate(data)]
    if workload == "eigsh":
        n = 20000 if quick else 50000
        return eigsh_child, [(n, 6, 1, True), (n, 6, 2, True)]
    if workload == "python":
        n = 2_000_000 if quick else 8_000_000
        return python_loop, [(n,), (n + 1,)]
    if workload == "mix":
        n, steps = (300, 200_000) if quick else (1000, 6_000_000)
        return numpy_and_loop, [(n, steps), (n, steps + 1)]
    if workload == "gridsearch":
        from sklearn.datasets import make_classification

        x, y = make_classification(
            n_samples=500 if quick else 1000, n_features=20, n_informative=8, random_state=0
        )
        cs = [float(c) for c in np.logspace(-3, 2, 12 if quick else 120)]
        return grid_child, [(x, y, cs[0::2]), (x, y, cs[1::2])]
    gib = 1 / 16 if quick else 1.0
    n = int(gib * 2**30) // 8
    return data_task, [(np.full(n, float(i + 1)),) for i in range(2)]


def _pool_maker(mode: str) -> Any:
    """What makes the strategy's pool, its module imported now: a script
    imports it at the top, so the job's time starts after."""
    import concurrent.futures
    import functools
    import multiprocessing

    if mode == "threads":
        return functools.partial(concurrent.futures.ThreadPoolExecutor, 2)
    if mode in ("fork", "spawn"):
        import concurrent.futures.process  # noqa: F401

        return functools.partial(
            concurrent.futures.ProcessPoolExecutor, 2, mp_context=multiprocessing.get_context(mode)
        )
    if mode == "loky":
        from joblib.externals.loky import get_reusable_executor

        return functools.partial(get_reusable_executor, 2)
    import vlcs

    if mode == "own":
        return functools.partial(vlcs.ContextPoolExecutor, 2, python="own")
    return functools.partial(vlcs.ContextPoolExecutor, 2)


def job(mode: str, workload: str, quick: bool) -> dict[str, Any]:
    """One whole job; its timings and results."""
    with tempfile.TemporaryDirectory() as tmp:
        fn, args = _inputs(workload, quick, tmp)
        make = None if mode == "sequential" else _pool_maker(mode)
        t0 = time.perf_counter()
        if mode == "sequential":
            startup = 0.0
            results = [fn(*a) for a in args]
        else:
            pool = make()
            pool.submit(abs, -1).result()  # started: a task answered
            startup = time.perf_counter() - t0
            results = list(pool.map(fn, *zip(*args, strict=True)))
            pool.shutdown(wait=True)
        total = time.perf_counter() - t0
    return {"total_s": total, "startup_s": startup, "results": results}


# --- measuring from outside ----------------------------------------------------------


def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            continue
    return out


def _pss(pid: int) -> int:
    """PSS of pid's process tree in bytes."""
    total = 0
    for p in _tree(pid):
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1]) * 1024
                        break
        except OSError:
            continue
    return total


def _run_job(mode: str, workload: str, quick: bool) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "vlcs_bench.evaluation.pools", mode, workload]
    if quick:
        cmd.append("--quick")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.wait(0.05):
            peak = max(peak, _pss(proc.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    done.set()
    sampler.join()
    if proc.returncode != 0:
        last = (err.strip().splitlines() or ["no message"])[-1]
        raise RuntimeError(f"pools job {mode} {workload} failed ({proc.returncode}): {last}")
    doc = json.loads(out.strip().splitlines()[-1])
    doc["peak_mib"] = peak / 2**20
    return doc


def run(quick: bool, only: tuple[str, ...] = ()) -> dict[str, Any]:
    """Every workload (or those named in only) with every strategy."""
    from vlcs_bench.evaluation._harness import _same, ncpus, say, summarise, table

    repeats = 1 if quick else 5  # quick: a check that every job runs, not figures
    size = "64 MiB" if quick else "1 GiB"
    workloads = {
        "h5py": "h5py: two jobs writing and reading 8 gzip datasets",
        "eigsh": "scipy eigsh: two sparse solves, k=6",
        "data": f"data-heavy: each task receives a {size} array, returns its sum",
        "python": "pure Python: two CPU-bound loops",
        "mix": "numpy + Python: three GEMMs and a Python loop per task",
        "gridsearch": "scikit-learn GridSearchCV: each task half of a 5-fold grid over C",
    }
    groups = []
    for workload, what in workloads.items():
        if only and workload not in only:
            continue
        times: dict[str, list[float]] = {s: [] for s in STRATEGIES}
        startup: dict[str, list[float]] = {s: [] for s in STRATEGIES}
        peak: dict[str, list[float]] = {s: [] for s in STRATEGIES}
        results: dict[str, Any] = {}
        for r in range(repeats):
            for name, mode in STRATEGIES.items():
                say(f"pools: {workload} run {r + 1}/{repeats} {name}")
                doc = _run_job(mode, workload, quick)
                times[name].append(doc["total_s"])
                startup[name].append(doc["startup_s"])
                peak[name].append(doc["peak_mib"])
                results[name] = doc["results"]
        want = results["sequential"]
        group = summarise(
            f"{what}: the job's time (pool start-up included)",
            times,
            {n: _same(v, want) for n, v in results.items()},
            ideal_speedup=min(2.0, ncpus()),
            note=(
                "Time from making the pool to its shutdown; inputs made and the pool's module "
                "imported before (as a script imports at its top). "
                "Each run a fresh interpreter, strategies interleaved. Ideal: 2x."
            ),
        )
        med = {n: statistics.median(v) for n, v in times.items()}
        rows = [
            [
                name,
                round(med[name], 3),
                round(statistics.median(startup[name]), 3),
                round(statistics.median(peak[name])),
                round(statistics.median(peak[name]) / statistics.median(peak["sequential"]), 2),
            ]
            for name in STRATEGIES
        ]
        groups.append(group)
        groups.append(
            table(
                f"{what}: start-up and memory",
                ["strategy", "job s", "pool start-up s", "peak memory MiB", "vs sequential"],
                rows,
                note="Pool start-up: from making the pool to its first task's answer. Peak "
                "memory: the job's whole process tree (PSS, sampled every 50 ms), inputs "
                "included.",
            )
        )
    ctx, own = "vlcs ContextPoolExecutor", "vlcs ContextPoolExecutor, own Python"
    pools = [n for n in STRATEGIES if n not in ("sequential", "threads", ctx, own)]
    verdict = []
    for g in groups[::2]:
        row = {r["strategy"]: r for r in g["rows"]}
        fastest = min(pools, key=lambda n: row[n]["median_s"])
        best = row[fastest]["median_s"]
        verdict.append(
            f"{g['title'].split(':')[0]}: contexts {best / row[ctx]['median_s']:.2f}x and "
            f"own-Python contexts {best / row[own]['median_s']:.2f}x as fast as the fastest "
            f"process pool ({fastest})"
        )
    return {"groups": groups, "notes": ["; ".join(verdict) + "."]}


def main() -> int:
    mode, workload = sys.argv[1], sys.argv[2]
    quick = "--quick" in sys.argv[3:]
    # the module by its name, not as __main__: the workers find the tasks by it
    from vlcs_bench.evaluation import pools

    print(json.dumps(pools.job(mode, workload, quick)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

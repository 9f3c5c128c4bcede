"""`vlcs bench own`: workers with a Python of their own against the other
ways of running N Python tasks at once.

Two workloads, each N tasks for N workers (one per CPU by default): a
pure-Python loop (the GIL decides), and a mix of numpy (BLAS, which lets
go of the GIL) and a Python loop.  Ways, measured alternately in one run,
median of the repeats: one after another in this interpreter; threads;
``ContextPoolExecutor`` with the shared interpreter; ``ContextPoolExecutor
(python="own")``; ``ProcessPoolExecutor`` with fork and with spawn.  The
pools are made once and warmed up (their start-up is reported apart:
``start_s``, making the pool and running one tiny task per worker).
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

from vlcs_bench.jobs import numpy_and_loop, numpy_and_loop_timed, python_loop

WAYS = (
    "one after another",
    "threads",
    "contexts, shared Python",
    "contexts, own Python",
    "processes (fork)",
    "processes (spawn)",
)


def _pool(way: str, n: int) -> Any:
    from vlcs import ContextPoolExecutor

    if way == "contexts, shared Python":
        return ContextPoolExecutor(max_workers=n)
    if way == "contexts, own Python":
        return ContextPoolExecutor(max_workers=n, python="own")
    if way.startswith("processes"):
        method = "fork" if "fork" in way else "spawn"
        return concurrent.futures.ProcessPoolExecutor(n, multiprocessing.get_context(method))
    return None


def _run(way: str, pool: Any, fn: Callable[[int], Any], arg: int, n: int) -> list[Any]:
    if way == "one after another":
        return [fn(arg) for _ in range(n)]
    if way == "threads":
        out: list[Any] = [None] * n

        def one(i: int) -> None:
            out[i] = fn(arg)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return out
    return list(pool.map(fn, [arg] * n))


def _profile(pools: dict[str, Any], size: int, n: int) -> dict[str, Any]:
    """One more batch of the numpy tasks per way, each task timed by phase:
    the spans (seconds from the batch's start: first and last task to
    start, to finish its GEMMs, to end) say whether the tasks ran side by
    side or waited for each other, and in which phase."""
    out = {}
    for way in WAYS:
        t = time.time()
        tasks = _run(way, pools[way], numpy_and_loop_timed, size, n)
        spans = {
            k: [round(min(x[k] for x in tasks) - t, 3), round(max(x[k] for x in tasks) - t, 3)]
            for k in ("start", "gemms_done", "end")
        }
        spans["blas_threads"] = sorted({c for x in tasks for c in x["blas_threads"]})
        out[way] = spans
    return out


def run(workers: int | None = None, repeats: int = 3, quick: bool = False) -> dict[str, Any]:
    """Every way on both workloads; wall seconds (median) and each way's
    speedup over one after another."""
    n = workers or len(os.sched_getaffinity(0))
    loads = {
        "pure Python": (python_loop, 1_500_000 if quick else 6_000_000),
        "numpy + Python": (numpy_and_loop, 300 if quick else 800),
    }
    pools: dict[str, Any] = {}
    start: dict[str, float] = {}
    try:
        for way in WAYS:
            t = time.perf_counter()
            pools[way] = _pool(way, n)
            if pools[way] is not None:
                # a builtin: the start, not the import of a module of tasks
                list(pools[way].map(abs, range(n)))
            start[way] = time.perf_counter() - t
        result: dict[str, Any] = {"workers": n, "repeats": repeats, "workloads": {}}
        for name, (fn, arg) in loads.items():
            times: dict[str, list[float]] = {w: [] for w in WAYS}
            answers: dict[str, list[Any]] = {}
            for way in WAYS:  # warm-up: imports, first calls
                answers[way] = _run(way, pools[way], fn, arg, n)
            for _ in range(repeats):
                for way in WAYS:
                    t = time.perf_counter()
                    _run(way, pools[way], fn, arg, n)
                    times[way].append(time.perf_counter() - t)
            base = statistics.median(times["one after another"])
            if name == "numpy + Python":
                result["profile"] = _profile(pools, arg, n)
            result["workloads"][name] = {
                way: {
                    "wall_s": statistics.median(times[way]),
                    "speedup": base / statistics.median(times[way]),
                    "same_result": answers[way] == answers["one after another"],
                    "start_s": start[way],
                }
                for way in WAYS
            }
        return result
    finally:
        for pool in pools.values():
            if pool is not None:
                pool.shutdown()


def report(result: dict[str, Any]) -> str:
    lines = [
        f"{result['workers']} tasks on {result['workers']} workers, median of "
        f"{result['repeats']}; speedup over one after another (higher is better)",
    ]
    for name, ways in result["workloads"].items():
        lines += ["", f"{name}:", f"  {'way':28} {'wall s':>8} {'speedup':>8} {'start s':>8}"]
        for way, r in ways.items():
            same = "" if r["same_result"] else "  (a different result!)"
            lines.append(
                f"  {way:28} {r['wall_s']:8.3f} {r['speedup']:7.2f}x {r['start_s']:8.3f}{same}"
            )
    prof = result.get("profile")
    if prof:
        title = "numpy + Python, one batch timed by phase (s from its start, first-last task):"
        lines += ["", title]
        head = f"  {'way':28} {'started':>12} {'GEMMs done':>12} {'ended':>12}"
        lines.append(head + "  BLAS threads")
        for way, p in prof.items():
            spans = [f"{p[k][0]:5.2f}-{p[k][1]:5.2f}" for k in ("start", "gemms_done", "end")]
            cells = " ".join(c.rjust(12) for c in spans)
            lines.append(f"  {way:28} {cells}  {p['blas_threads']}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(run(quick=True)))

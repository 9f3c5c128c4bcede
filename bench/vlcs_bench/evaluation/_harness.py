"""Timing strategies side by side: interleaved repeats, medians, ranges,
speedups over a baseline, the ideal, and nOS-V's performance score
p = best makespan / strategy makespan (1.0 for the best strategy)."""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def say(msg: str) -> None:
    """Progress on stderr: long runs tell what they are doing."""
    print(f"vlcs bench: {msg}", file=sys.stderr, flush=True)


def ncpus() -> int:
    return len(os.sched_getaffinity(0))


def run_json(cmd: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run a benchmark program and parse the JSON line it ends its output
    with; RuntimeError with its last line of stderr when it fails."""
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        raise RuntimeError(
            f"{os.path.basename(cmd[0])} exited with status {proc.returncode}: "
            + (proc.stderr.strip().splitlines() or ["no message"])[-1]
        )
    return json.loads(proc.stdout.strip().splitlines()[-1])


@dataclass
class Strategy:
    """One way of running a case's tasks; `run` returns a checksum."""

    name: str
    run: Callable[[], Any]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(float(a), float(b), rel_tol=1e-6, abs_tol=1e-9)
    return bool(a == b)


# Quick mode (`vlcs bench all --quick`, which ./run test runs) checks that
# every case runs to the end and that every strategy computes what the
# baseline computes; the figures come from the full mode.  So it runs each
# strategy once, without a warm-up (case.py sets QUICK).
QUICK = False


def timed_runs(quick: bool) -> int:
    """How many timed runs of each strategy a case makes."""
    return 1 if quick else 5


def bound_runs() -> int:
    """How many runs a makespan bound's parts take the fastest of: three in
    full mode (one slow run on a noisy machine would raise a bound past what
    a strategy reached), one in quick mode, which checks and does not
    measure (the bound is never above the baseline's time either way)."""
    return 1 if QUICK else 3


def bound_runs_text() -> str:
    """bound_runs() as a report's notes say it."""
    n = bound_runs()
    return "one run" if n == 1 else f"the fastest of {n} runs"


def measure(
    title: str,
    strategies: list[Strategy],
    repeats: int,
    *,
    baseline: str | None = None,
    ideal_speedup: float | None = None,
    ideal_s: float | None = None,
    warmup: bool = True,
    warm_when_quick: bool = False,
    note: str = "",
    timeline: str | None = None,
) -> dict[str, Any]:
    """Run every strategy `repeats` times, interleaved, and summarise.

    ideal_speedup: the ceiling over the baseline (2x for two tasks on two
    cores); ideal_s: a makespan lower bound (total work / cores);
    warm_when_quick: the untimed first run of each strategy even in quick
    mode, where first calls (torch's lazy start, a runtime's pool) would
    otherwise be most of the time of the strategies that run first;
    timeline: the name of a strategy run once more under vlcs.trace, whose
    trace the report draws (where the cores went: lends and reclaims)."""
    if warmup and (warm_when_quick or not QUICK):
        for s in strategies:
            say(f"{title}: warm-up {s.name}")
            s.run()
    times: dict[str, list[float]] = {s.name: [] for s in strategies}
    results: dict[str, Any] = {}
    for r in range(repeats):
        for s in strategies:
            say(f"{title}: run {r + 1}/{repeats} {s.name}")
            t = time.perf_counter()
            results[s.name] = s.run()
            times[s.name].append(time.perf_counter() - t)
    group = summarise(
        title,
        times,
        {n: _same(r, results[baseline or strategies[0].name]) for n, r in results.items()},
        baseline=baseline,
        ideal_speedup=ideal_speedup,
        ideal_s=ideal_s,
        note=note,
    )
    if timeline is not None:
        group["timeline"] = traced(title, next(s for s in strategies if s.name == timeline))
    return group


def traced(title: str, strategy: Strategy) -> dict[str, str]:
    """One more run of strategy, recorded with vlcs.trace into a temporary
    file that report.write moves beside the report (and draws)."""
    import tempfile

    import vlcs

    say(f"{title}: one more run of {strategy.name}, traced")
    path = os.path.join(tempfile.mkdtemp(prefix="vlcs-bench-trace-"), "trace.json")
    with vlcs.trace(path):
        strategy.run()
    return {"strategy": strategy.name, "trace": path}


def summarise(
    title: str,
    times: dict[str, list[float]],
    same: dict[str, bool] | None = None,
    *,
    baseline: str | None = None,
    ideal_speedup: float | None = None,
    ideal_s: float | None = None,
    note: str = "",
) -> dict[str, Any]:
    """Medians, ranges, speedups and p of measured times (name -> seconds,
    in strategy order); `same`: whether each result matched the baseline's."""
    names = list(times)
    base = baseline or names[0]
    med = {n: statistics.median(v) for n, v in times.items()}
    best = min(med.values())
    if ideal_s is not None and ideal_speedup is None:
        ideal_speedup = med[base] / ideal_s
    rows = [
        {
            "strategy": n,
            "median_s": med[n],
            "min_s": min(times[n]),
            "max_s": max(times[n]),
            "speedup": med[base] / med[n],
            "p": best / med[n],
            "same_result": True if same is None else same[n],
        }
        for n in names
    ]
    return {
        "kind": "strategies",
        "title": title,
        "baseline": base,
        "repeats": min(len(v) for v in times.values()),
        "ideal_speedup": ideal_speedup,
        "ideal_s": ideal_s,
        "note": note,
        "rows": rows,
    }


def baseline_row(group: dict[str, Any]) -> dict[str, Any]:
    """The row of a summarised group's baseline strategy."""
    return next(r for r in group["rows"] if r["strategy"] == group["baseline"])


def set_ideal(group: dict[str, Any], ideal_s: float) -> None:
    """Give a summarised group a makespan lower bound measured after it ran
    (once its libraries are warm), as summarise(ideal_s=...) would."""
    group["ideal_s"] = ideal_s
    group["ideal_speedup"] = baseline_row(group)["median_s"] / ideal_s


def table(title: str, columns: list[str], rows: list[list[Any]], note: str = "") -> dict[str, Any]:
    """A plain table (overheads, load times)."""
    return {"kind": "table", "title": title, "columns": columns, "rows": rows, "note": note}

"""`vlcs bench reuse`: how soon a pool's second job starts when the pool is
kept (``vlcs.get_reusable_executor``) against a new pool per job.

Each repeat runs in a fresh interpreter (the base has numpy, as a user's
script does): two jobs one after the other, each a ``with`` block that
runs one short numpy task per worker.  Per way and Python (``shared``,
``own``): the first job's wall time (the workers' contexts, their imports,
their runtimes), the second's, and their ratio; with a new
``ContextPoolExecutor`` per job the second pays again.  loky's reusable
executor (joblib's), where installed, is measured beside, used as loky
is (no ``with`` block: leaving one shuts a loky executor down).
The goal the runtime is held to: the reusable executor's second job starts
at least 10x faster than its first.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from typing import Any

GOAL = 10.0
WAYS = ("reusable", "new pool per job", "loky reusable")


def short_task(_: object = None) -> float:
    """What each worker runs: numpy imported (in its context), a small product."""
    import numpy as np

    a = np.arange(64.0).reshape(8, 8)
    return float((a @ a).trace())


_CHILD = r"""
import json, sys, time
import numpy  # the base has numpy, as a user's script does
from vlcs_bench.reuse import short_task
way, python, n = sys.argv[1], sys.argv[2], int(sys.argv[3])

def pool():
    if way == "reusable":
        import vlcs
        return vlcs.get_reusable_executor(n, python=python)
    if way == "new pool per job":
        import vlcs
        return vlcs.ContextPoolExecutor(n, python=python)
    from joblib.externals.loky import get_reusable_executor
    return get_reusable_executor(n)

times, contexts = [], []
for _ in range(2):
    t = time.perf_counter()
    if way == "loky reusable":  # as loky is used: a with block would shut it down
        ex = pool()
        results = list(ex.map(short_task, range(n)))
    else:
        with pool() as ex:
            results = list(ex.map(short_task, range(n)))
    times.append(time.perf_counter() - t)
    contexts.append([id(c) for c in getattr(ex, "contexts", [])])
assert len(set(results)) == 1
print(json.dumps({"first_s": times[0], "second_s": times[1],
                  "same_workers": contexts[0] == contexts[1] and bool(contexts[0])}))
"""


def _loky() -> bool:
    try:
        import joblib.externals.loky  # noqa: F401
    except ImportError:
        return False
    return True


def run(
    workers: int | None = None, repeats: int = 3, pythons: tuple[str, ...] = ("shared", "own")
) -> dict[str, Any]:
    """Medians of repeats fresh interpreters per way and Python."""
    n = workers or len(os.sched_getaffinity(0))
    result: dict[str, Any] = {"workers": n, "repeats": repeats, "goal": GOAL, "ways": {}}
    for python in pythons:
        for way in WAYS:
            if way == "loky reusable" and (python != "shared" or not _loky()):
                continue  # loky's workers are processes: one row
            runs = []
            for _ in range(repeats):
                p = subprocess.run(
                    [sys.executable, "-c", _CHILD, way, python, str(n)],
                    capture_output=True, text=True, timeout=600,
                )  # fmt: skip
                if p.returncode != 0:
                    last = (p.stderr.strip().splitlines() or ["failed"])[-1]
                    runs = [{"error": last}]
                    break
                runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
            label = way if way == "loky reusable" else f"{way}, {python} Python"
            if "error" in runs[0]:
                result["ways"][label] = runs[0]
                continue
            first = statistics.median(r["first_s"] for r in runs)
            second = statistics.median(r["second_s"] for r in runs)
            result["ways"][label] = {
                "first_ms": round(first * 1e3, 2),
                "second_ms": round(second * 1e3, 2),
                "first_over_second": round(first / second, 1),
                "same_workers": all(r["same_workers"] for r in runs),
            }
    return result


def report(result: dict[str, Any]) -> str:
    lines = [
        f"vlcs bench reuse: two jobs of {result['workers']} short numpy tasks, one after the "
        f"other (medians of {result['repeats']} fresh interpreters)",
        f"goal: the reusable executor's second job >= {result['goal']:.0f}x faster than its first",
        "",
        f"  {'way':34} {'first ms':>9} {'second ms':>10} {'ratio':>7}",
    ]
    for label, r in result["ways"].items():
        if "error" in r:
            lines.append(f"  {label:34} {r['error']}")
            continue
        mark = ""
        if label.startswith("reusable") and r["first_over_second"] < result["goal"]:
            mark = "  under the goal"
        lines.append(
            f"  {label:34} {r['first_ms']:9.1f} {r['second_ms']:10.1f} "
            f"{r['first_over_second']:6.1f}x{mark}"
        )
    return "\n".join(lines)

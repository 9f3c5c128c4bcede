"""Case 2 (paper Table 3): loading 4 private copies vs one plain load."""

from __future__ import annotations

import statistics
from typing import Any

from vlcs_bench.evaluation._harness import say, table, timed_runs
from vlcs_bench.programs import run_json as bench_program
from vlcs_bench.python_imports import import_seconds

TITLE = "Load time (paper Table 3)"
MODELS = (
    "the start-up price of isolation: a program that gives 4 workers their own copy "
    "of a library or Python package, against one ordinary load. Each measurement "
    "starts a fresh process so nothing is cached in memory but the page cache."
)


def run(quick: bool) -> dict[str, Any]:
    say("load time: shared libraries (vlcs-bench-core)")
    core = bench_program("vlcs-bench-core")
    rows = [
        [lib, r["once_ms"], r["four_contexts_ms"], r["ratio"]] for lib, r in core["load"].items()
    ]
    repeats = timed_runs(quick)
    for mod in ("numpy", "scipy.linalg", "torch"):
        say(f"load time: import {mod}, plain vs into 4 contexts, {repeats} fresh interpreters")
        import_seconds(mod)  # page cache
        plain, four = [], []
        for _ in range(repeats):
            plain.append(import_seconds(mod))
            four.append(import_seconds(mod, contexts=4))
        p, f = statistics.median(plain), statistics.median(four)
        rows.append([f"import {mod}", p * 1e3, f * 1e3, f / p])
    return {
        "groups": [
            table(
                "Loading 4 copies vs one plain load (median ms)",
                ["library / package", "once ms", "4 contexts ms", "ratio"],
                rows,
                note="The ideal ratio is 4 (four times the work); below 4 means the copies "
                "share what can be shared (page cache, code objects). The 4-context figure "
                "includes creating each context's namespace (its own libc).",
            )
        ]
    }

"""Case 2 (paper Table 3): loading 4 private copies vs one plain load."""

from __future__ import annotations

import statistics
import subprocess
import sys
from typing import Any

from vlcs.evaluation._harness import say, table
from vlcs.evaluation.overheads import _program

TITLE = "Load time (paper Table 3)"
MODELS = (
    "the start-up price of isolation: a program that gives 4 workers their own copy "
    "of a library or Python package, against one ordinary load. Each measurement "
    "starts a fresh process so nothing is cached in memory but the page cache."
)

_PLAIN = "import time\nt = time.perf_counter()\nimport {mod}\nprint(time.perf_counter() - t)\n"
_FOUR = (
    "import time, vlcs\nctxs = [vlcs.VLC(name=f'c{{i}}') for i in range(4)]\n"
    "t = time.perf_counter()\nfor c in ctxs:\n    with c:\n        import {mod}\n"
    "print(time.perf_counter() - t)\n"
)


def _child(code: str) -> float:
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    return float(out.strip().splitlines()[-1])


def run(quick: bool) -> dict[str, Any]:
    say("load time: shared libraries (vlcs-bench-core)")
    core = _program("vlcs-bench-core")
    rows = [
        [lib, r["once_ms"], r["four_contexts_ms"], r["ratio"]] for lib, r in core["load"].items()
    ]
    repeats = 3 if quick else 5
    for mod in ("numpy", "scipy.linalg", "torch"):
        say(f"load time: import {mod}, plain vs into 4 contexts, {repeats} fresh interpreters")
        _child(_PLAIN.format(mod=mod))  # page cache
        plain, four = [], []
        for _ in range(repeats):
            plain.append(_child(_PLAIN.format(mod=mod)))
            four.append(_child(_FOUR.format(mod=mod)))
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

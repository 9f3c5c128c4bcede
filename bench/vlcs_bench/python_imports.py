"""`vlcs bench python`: what contexts cost a Python user, measured side by
side in one run (medians over alternating repeats; these machines are noisy).

* create: creating a context (the first one also makes libpython a service);
* import: ``import numpy`` into 4 contexts vs one plain ``import numpy``,
  each in a fresh interpreter, alternating;
* workload: the same numpy workload on the base's numpy outside any context
  and on a context's numpy inside it (the context has every CPU).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

_PLAIN = "import time\nt = time.perf_counter()\nimport {mod}\nprint(time.perf_counter() - t)\n"
_CONTEXTS = (
    "import time, vlcs\nctxs = [vlcs.VLC(name=f'c{{i}}') for i in range({n})]\n"
    "t = time.perf_counter()\nfor c in ctxs:\n    with c:\n        import {mod}\n"
    "print(time.perf_counter() - t)\n"
)


def import_seconds(module: str, contexts: int = 0) -> float:
    """Seconds to import `module` in a fresh interpreter: plainly, or into
    `contexts` contexts one after the other (their creation not counted)."""
    code = (_CONTEXTS if contexts else _PLAIN).format(mod=module, n=contexts)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    return float(out.strip().splitlines()[-1])


def _workload(np: Any) -> float:
    rng = np.random.default_rng(0)
    m = rng.random((160, 160))
    t = time.perf_counter()
    acc = 0.0
    for _ in range(40):
        acc += float((m @ m).sum()) + float(np.linalg.norm(m, axis=0).sum())
        m = np.sqrt(np.abs(np.sin(m)))  # elementwise work
    return time.perf_counter() - t


def run(repeats: int = 5, progress: bool = True) -> dict[str, Any]:
    import vlcs

    def say(msg: str) -> None:
        if progress:
            print(f"vlcs bench python: {msg}", file=sys.stderr, flush=True)

    say(f"import numpy plain vs into 4 contexts, {repeats} fresh interpreters each...")
    plain, four = [], []
    for _ in range(repeats):
        plain.append(import_seconds("numpy"))
        four.append(import_seconds("numpy", contexts=4))

    say("creating contexts...")
    first = time.perf_counter()
    ctx = vlcs.VLC(name="bench")
    first = time.perf_counter() - first
    creates = []
    for i in range(20):
        t = time.perf_counter()
        vlcs.VLC(name=f"bench-create-{i}")
        creates.append(time.perf_counter() - t)

    say("numpy workload outside vs inside a context...")
    import numpy as np_base

    with ctx:
        import numpy as np_ctx
    _workload(np_base)
    with ctx:
        _workload(np_ctx)
    outside, inside = [], []
    for _ in range(repeats * 2 + 1):
        outside.append(_workload(np_base))
        with ctx:
            inside.append(_workload(np_ctx))

    def stats(xs: list[float]) -> dict[str, float]:
        return {"median": statistics.median(xs), "min": min(xs), "max": max(xs)}

    imp = {"plain_s": stats(plain), "four_contexts_s": stats(four)}
    imp["ratio"] = imp["four_contexts_s"]["median"] / imp["plain_s"]["median"]
    imp["target_ratio"] = 2.0
    work = {"outside_s": stats(outside), "inside_s": stats(inside)}
    work["ratio"] = work["inside_s"]["median"] / work["outside_s"]["median"]
    work["target_ratio"] = 1.01
    return {
        "suite": "python",
        "python": sys.version.split()[0],
        "numpy": np_base.__version__,
        "cpus": len(os.sched_getaffinity(0)),
        "create_context_ms": {
            "first": first * 1e3,
            **{k: v * 1e3 for k, v in stats(creates).items()},
            "target": 2.0,
        },
        "import_numpy": imp,
        "numpy_workload": work,
    }


def report(r: dict[str, Any]) -> str:
    c, i, w = r["create_context_ms"], r["import_numpy"], r["numpy_workload"]
    return "\n".join(
        [
            f"create a context: {c['median']:.3f} ms median (first one {c['first']:.2f} ms; "
            f"target <= {c['target']} ms)",
            f"import numpy: plain {i['plain_s']['median'] * 1e3:.0f} ms, into 4 contexts "
            f"{i['four_contexts_s']['median'] * 1e3:.0f} ms ({i['ratio']:.2f}x; target <= 2x)",
            f"numpy workload: outside {w['outside_s']['median'] * 1e3:.1f} ms, inside a context "
            f"{w['inside_s']['median'] * 1e3:.1f} ms ({w['ratio']:.3f}x; target <= 1.01x)",
        ]
    )


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))

"""`vlcs demo python`: two tasks that fight when run together, five ways.

Each task writes gzip-compressed datasets with h5py (HDF5 is not
thread-safe: one h5py copy runs every HDF5 call of the process behind one
lock) and solves dense linear systems with numpy (OpenBLAS sizes its pool
to every core: two tasks at once oversubscribe the machine).  The two
tasks run

1. sequentially, each with the whole machine;
2. on two plain threads (one h5py, one OpenBLAS: serialised HDF5, 2x2
   BLAS threads on the cores);
3. on two threads under threadpoolctl limits (1 BLAS thread each; HDF5
   still serialised);
4. in a ProcessPoolExecutor (inputs and results pickled across);
5. in two vlcs contexts, one per core, each with its own h5py and numpy.

It prints wall times and speedups over sequential against this machine's
ceiling (min(2, cores)x for two tasks) and saves the same as a PNG chart.
"""

from __future__ import annotations

import concurrent.futures
import os
import shutil
import sys
import tempfile
import threading
import time
from typing import Any

from vlcs._plots import MISSING, pyplot


def task(h5py: Any, np: Any, path: str, data: Any, mat: Any) -> float:
    """One task: compressed writes then dense solves; returns a checksum."""
    with h5py.File(path, "w") as f:
        for i in range(6):
            f.create_dataset(f"d{i}", data=data + i, compression="gzip", compression_opts=6)
    rhs = np.ones((mat.shape[0], 64))
    total = 0.0
    for k in range(6):
        total += float(np.linalg.solve(mat + k * np.eye(mat.shape[0]), rhs).sum())
    return total


def _task_in_child(path: str, data: Any, mat: Any) -> float:
    import h5py
    import numpy as np

    return task(h5py, np, path, data, mat)


def _inputs(np: Any, seed: int) -> tuple[Any, Any]:
    rng = np.random.default_rng(seed)
    return rng.random((500, 1000)), rng.random((700, 700)) + 700 * np.eye(700)


def run(out_png: str | None = "vlcs-demo.png", repeats: int = 1) -> list[dict[str, Any]]:
    import h5py
    import numpy as np
    import vlcs

    ncpu = len(os.sched_getaffinity(0))
    if ncpu < 2:
        raise SystemExit("vlcs demo python: needs 2 CPUs to show anything")
    tmp = tempfile.mkdtemp(prefix="vlcs-demo-")
    inputs = [_inputs(np, s) for s in (1, 2)]
    paths = [[os.path.join(tmp, f"{s}-{i}.h5") for i in (0, 1)] for s in range(5)]
    print("vlcs demo: two tasks, each writing gzip-compressed HDF5 datasets (h5py) and")
    print(f"solving dense systems (numpy/OpenBLAS), on {ncpu} cores; preparing contexts...")
    half = ncpu // 2
    a = vlcs.VLC(cpus=f"0-{half - 1}", name="task-a")
    b = vlcs.VLC(cpus=f"{half}-{ncpu - 1}", name="task-b")
    mods = []
    for c in (a, b):
        with c:
            import h5py as h5_c
            import numpy as np_c
        mods.append((h5_c, np_c))
    ctx_inputs = [tuple(m[1].asarray(x) for x in inp) for m, inp in zip(mods, inputs, strict=True)]
    pool = concurrent.futures.ProcessPoolExecutor(2)
    list(pool.map(abs, [1, 2]))  # start the workers before timing

    def sequential(p: list[str]) -> list[float]:
        return [task(h5py, np, p[i], *inputs[i]) for i in (0, 1)]

    def threads(p: list[str], limit: bool = False) -> list[float]:
        res: list[float] = [0.0, 0.0]

        def one(i: int) -> None:
            if limit:
                from threadpoolctl import threadpool_limits

                with threadpool_limits(limits=max(1, ncpu // 2), user_api="blas"):
                    res[i] = task(h5py, np, p[i], *inputs[i])
            else:
                res[i] = task(h5py, np, p[i], *inputs[i])

        ts = [threading.Thread(target=one, args=(i,)) for i in (0, 1)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        return res

    def processes(p: list[str]) -> list[float]:
        fs = [pool.submit(_task_in_child, p[i], *inputs[i]) for i in (0, 1)]
        return [f.result() for f in fs]

    def contexts(p: list[str]) -> list[float]:
        fs = [
            c.submit(task, m[0], m[1], p[i], *ctx_inputs[i])
            for i, (c, m) in enumerate(zip((a, b), mods, strict=True))
        ]
        return [f.result() for f in fs]

    strategies = [
        ("sequential", sequential),
        ("threads", threads),
        ("threads + threadpoolctl", lambda p: threads(p, limit=True)),
        ("ProcessPoolExecutor", processes),
        ("vlcs contexts", contexts),
    ]
    times: dict[str, list[float]] = {n: [] for n, _ in strategies}
    checks: dict[str, list[float]] = {}
    for r in range(repeats):
        for s, (name, fn) in enumerate(strategies):
            print(f"  run {r + 1}/{repeats}: {name}...", file=sys.stderr, flush=True)
            t = time.perf_counter()
            checks[name] = fn(paths[s])
            times[name].append(time.perf_counter() - t)
    pool.shutdown()
    ref = checks["sequential"]
    ceiling = min(2.0, ncpu)
    rows = []
    for name, _ in strategies:
        wall = min(times[name])
        same = all(abs(x - y) <= 1e-9 * abs(y) for x, y in zip(checks[name], ref, strict=True))
        rows.append(
            {
                "strategy": name,
                "wall_s": wall,
                "speedup": min(times["sequential"]) / wall,
                "same_results": same,
            }
        )
    print(f"\n{'strategy':<26}{'wall (s)':>10}{'speedup':>10}   (ceiling {ceiling:.1f}x)")
    for row in rows:
        flag = "" if row["same_results"] else "  RESULTS DIFFER"
        print(f"{row['strategy']:<26}{row['wall_s']:>10.2f}{row['speedup']:>9.2f}x{flag}")
    if out_png and pyplot() is None:
        print(f"\nchart skipped: {MISSING}")
    elif out_png:
        _chart(rows, ceiling, out_png)
        print(f"\nchart saved to {out_png}")
    shutil.rmtree(tmp, ignore_errors=True)
    return rows


def _chart(rows: list[dict[str, Any]], ceiling: float, path: str) -> None:
    plt = pyplot()

    fig, ax = plt.subplots(figsize=(7, 3.2))
    names = [r["strategy"] for r in rows]
    ax.barh(names, [r["speedup"] for r in rows], color=["#999"] * (len(rows) - 1) + ["#2a7"])
    ax.axvline(ceiling, color="k", ls="--", lw=1)
    ax.text(ceiling, -0.6, f" ceiling {ceiling:.0f}x", va="bottom")
    ax.axvline(1.0, color="#c33", lw=0.8)
    ax.set_xlim(0, ceiling * 1.2)
    ax.set_xlabel("speedup over sequential (higher is better)")
    ax.invert_yaxis()
    ax.set_title("two h5py + OpenBLAS tasks on this machine")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    run()

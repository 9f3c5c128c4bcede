"""Case 10: two processes on one node, lending through the ledger."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from vlcs_bench.evaluation._harness import ncpus, say, summarise, timed_runs
from vlcs_bench.evaluation._tasks import split_cpus

TITLE = "Two processes on one node: node-wide elastic contexts"
MODELS = (
    "two jobs on one machine (two MPI ranks, or two services), each alternating bursts "
    "of BLAS work with idle phases (I/O, waiting for data), their phases shifted. Run "
    "plainly each OpenBLAS starts a thread per core and the bursts that overlap "
    "oversubscribe the node; with static halves each job keeps half the cores, idle or "
    "not; with node-wide elastic contexts (vlcs.init(node=True)) a job's idle cores go "
    "to the other's burst and come back when its own burst starts."
)

# One member process: waits for the common start time, then runs `rounds`
# rounds of (burst, idle), or for the second member (idle, burst) with idle
# phases 0.6 as long, so that the bursts drift in and out of overlap; prints
# its timings as JSON.
MEMBER = r"""
import json, os, sys, time
mode, home, every, shift, rounds, size, reps, idle, start = sys.argv[1:10]
rounds, size, reps, idle, start = int(rounds), int(size), int(reps), float(idle), float(start)
import numpy as base_np
if mode == "plain":
    np, ctx = base_np, None
else:
    import vlcs
    if mode == "node":
        vlcs.init(node=True)
    ctx = vlcs.VLC(cpus=home, elastic=every if mode == "node" else None, name="job")
    with ctx:
        import numpy as np
m = np.asarray(base_np.random.default_rng(0).random((size, size)))
def burst():
    s = 0.0
    for _ in range(reps):
        s += float((m @ m)[0, 0])
    return s
if ctx is not None:
    with ctx:
        burst()  # warm: OpenBLAS's threads started
else:
    burst()
while time.monotonic() < start:
    time.sleep(min(0.01, max(0.0, start - time.monotonic())))
busy, total = 0.0, 0.0
for r in range(rounds):
    for phase in (("idle", "burst") if shift == "1" else ("burst", "idle")):
        if phase == "idle":
            time.sleep(idle * (0.6 if shift == "1" else 1.0))
        else:
            t = time.monotonic()
            if ctx is not None:
                with ctx:
                    total += burst()
            else:
                total += burst()
            busy += time.monotonic() - t
print(json.dumps({"end": time.monotonic(), "burst_s": busy, "checksum": total}))
"""


def _run_pair(mode: str, halves: tuple[str, str], args: list[str], ledger: str) -> dict[str, Any]:
    """Both members once; their end times against the common start."""
    every = f"0-{ncpus() - 1}"
    start = time.monotonic() + 3.0  # time for both to import numpy (and vlcs)
    env = {**os.environ, "VLCS_NODE_LEDGER": ledger}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", MEMBER, mode, home, every, shift, *args, str(start)],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for home, shift in ((halves[0], "0"), (halves[1], "1"))
    ]
    outs = []
    for p in procs:
        out, _ = p.communicate(timeout=600)
        if p.returncode != 0:
            raise RuntimeError(f"a {mode} member exited with status {p.returncode}")
        outs.append(json.loads(out.strip().splitlines()[-1]))
    late = [o["end"] - start for o in outs]
    if min(late) < 0:
        raise RuntimeError("a member started late: raise the start delay")
    return {
        "makespan": max(late),
        "each": late,
        "burst_s": [o["burst_s"] for o in outs],
        "checksum": [round(o["checksum"], 3) for o in outs],
    }


def run(quick: bool) -> dict[str, Any]:
    n = ncpus()
    halves = split_cpus(n, n // 2)
    rounds, size, reps, idle = (4, 1200, 2, 0.25) if quick else (8, 1500, 3, 0.5)
    args = [str(rounds), str(size), str(reps), str(idle)]
    strategies = {
        "plain processes (each OpenBLAS on every core)": "plain",
        f"static halves ({halves[0]} | {halves[1]})": "static",
        f"node-wide elastic contexts ({halves[0]} | {halves[1]}, lending)": "node",
    }
    repeats = timed_runs(quick)
    times: dict[str, list[float]] = {s: [] for s in strategies}
    each: dict[str, list[list[float]]] = {s: [] for s in strategies}
    bursts: dict[str, list[list[float]]] = {s: [] for s in strategies}
    same: dict[str, bool] = {}
    want: Any = None
    with tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as d:
        ledger = os.path.join(d, "ledger")
        for r in range(repeats):
            for name, mode in strategies.items():
                say(f"node-wide: run {r + 1}/{repeats} {name}")
                got = _run_pair(mode, halves, args, ledger)
                times[name].append(got["makespan"])
                each[name].append(got["each"])
                bursts[name].append(got["burst_s"])
                want = got["checksum"] if want is None else want
                same[name] = same.get(name, True) and got["checksum"] == want
    idle_total = rounds * idle
    group = summarise(
        f"two processes, {rounds} rounds each of {reps} GEMMs {size}² and {idle:.2f} s idle "
        f"(the second: idle first, {0.6 * idle:.2f} s)",
        times,
        same,
        note="Makespan from the common start to the later member's end (medians of "
        f"{repeats}); the members sleep {idle_total:.2f} s and {0.6 * idle_total:.2f} s in "
        "total. Per member "
        "(median end, median time in bursts): "
        + "; ".join(
            f"{name}: "
            + ", ".join(
                f"{statistics.median(e[i] for e in each[name]):.2f} s "
                f"({statistics.median(b[i] for b in bursts[name]):.2f} s bursts)"
                for i in range(2)
            )
            for name in strategies
        ),
    )
    return {
        "groups": [group],
        "notes": [
            "Each member is its own interpreter; the node-wide members share a ledger in "
            "/dev/shm made for this run (VLCS_NODE_LEDGER). The static members use the same "
            "contexts without lending.",
        ],
    }

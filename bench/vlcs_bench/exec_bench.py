"""`vlcs bench exec`: N instances of a thread-unsafe solver in one process
(``vlcs exec``), against N processes at once and against the same program
run N times one after another.

The program is case 6's ARPACK solve as a plain program, linked against
Debian's arpack-ng (kernels/arpack_prog.c; no vlcs in it), each instance
solving the same problems with one OpenBLAS thread.  Per way, measured
alternately in one run (median of the repeats): wall time of the whole,
the wall time of a tiny problem (start-up, per instance), and peak memory
(the one process's maximum RSS for ``vlcs exec``; the sum of the N
processes' for processes; the largest for one after another).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from typing import Any

from vlcs_bench._build import KERNELS, build

WAYS = ("vlcs exec", "processes", "one after another")


def _program() -> str:
    return str(
        build(
            "arpack_prog",
            ["arpack_prog.c"],
            ["-O2", f"-I{KERNELS}"],
            libs=("-l:libarpack.so.2", "-lm"),
        )
    )


def _wait(procs: list[subprocess.Popen[bytes]]) -> list[int]:
    """Each process's peak RSS in KiB, once it ended (failing if it failed)."""
    peaks = []
    for p in procs:
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(map(str, p.args))} exited {p.returncode}")  # type: ignore[arg-type]
        peaks.append(usage.ru_maxrss)
    return peaks


def _once(way: str, prog: str, n: int, size: int, rounds: int) -> tuple[float, int]:
    """Wall seconds and peak KiB of one run of way."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    args = [prog, str(size), str(rounds)]
    quiet = {"stdout": subprocess.DEVNULL, "env": env}
    t = time.perf_counter()
    if way == "vlcs exec":
        cmd = [sys.executable, "-m", "vlcs", "exec", "-n", str(n), "--output", "plain", "--", *args]
        peak = _wait([subprocess.Popen(cmd, **quiet)])[0]  # type: ignore[call-overload]
    elif way == "processes":
        peak = sum(_wait([subprocess.Popen(args, **quiet) for _ in range(n)]))  # type: ignore[call-overload]
    else:
        peak = max(_wait([subprocess.Popen(args, **quiet)])[0] for _ in range(n))  # type: ignore[call-overload]
    return time.perf_counter() - t, peak


def run(
    instances: int | None = None,
    repeats: int = 3,
    size: int = 1000,
    rounds: int = 4,
    progress: bool = True,
) -> dict[str, Any]:
    n = instances or len(os.sched_getaffinity(0))
    prog = _program()
    samples: dict[str, dict[str, list[float]]] = {
        w: {"wall_s": [], "startup_s": [], "peak_kib": []} for w in WAYS
    }
    for r in range(repeats):
        if progress:
            print(
                f"vlcs bench exec: round {r + 1} of {repeats}, {n} instances each way...",
                file=sys.stderr,
                flush=True,
            )
        for way in WAYS:  # alternately, so that the machine's drift is shared
            wall, peak = _once(way, prog, n, size, rounds)
            tiny, _ = _once(way, prog, n, 50, 1)
            samples[way]["wall_s"].append(wall)
            samples[way]["startup_s"].append(tiny / n)
            samples[way]["peak_kib"].append(peak)
    out: dict[str, Any] = {
        "instances": n,
        "problem": {"n": size, "solves": rounds},
        "program": prog,
        "ways": {},
    }
    base = statistics.median(samples["processes"]["wall_s"])
    for way in WAYS:
        s = samples[way]
        wall = statistics.median(s["wall_s"])
        out["ways"][way] = {
            "wall_s": round(wall, 3),
            "wall_vs_processes": round(wall / base, 2),
            "startup_s_per_instance": round(statistics.median(s["startup_s"]), 4),
            "peak_mib": round(statistics.median(s["peak_kib"]) / 1024, 1),
        }
    return out


def report(result: dict[str, Any]) -> str:
    p = result["problem"]
    lines = [
        f"vlcs bench exec: {result['instances']} instances of an ARPACK solve program "
        f"(n={p['n']}, {p['solves']} solves each, one OpenBLAS thread)",
        f"  {'way':20} {'wall s':>8} {'x procs':>8} {'start-up s/inst':>16} {'peak MiB':>9}",
    ]
    for way, w in result["ways"].items():
        lines.append(
            f"  {way:20} {w['wall_s']:>8} {w['wall_vs_processes']:>8} "
            f"{w['startup_s_per_instance']:>16} {w['peak_mib']:>9}"
        )
    lines.append(
        "  (vlcs exec: one process, the Python launcher included in its start-up and memory)"
    )
    return "\n".join(lines)

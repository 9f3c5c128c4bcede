"""`vlcs bench all`: the paper's evaluation, side by side with what users
would pick instead, on whatever machine it runs.

Each case runs in a fresh interpreter (``python -m vlcs_bench.evaluation.case``)
so that one case's libraries, contexts or crash cannot touch another's.
The result is one JSON document, a Markdown report with a table per case,
and PNG charts.

Example::

    $ vlcs bench all --quick --out /tmp/vlcs-eval      # about 5 minutes on 2 cores
    $ vlcs bench all --out bench/results                # the full mode: about 30 minutes
    $ vlcs bench all --cases 5,6 --json
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from vlcs_bench.evaluation._harness import say
from vlcs_bench.machine import cpu_model as _cpu_model

#: case number -> its module under vlcs_bench.evaluation; each module's
#: TITLE and MODELS say what it models (the table: bench/README.md)
CASES: dict[int, str] = {
    1: "overheads",
    2: "load_time",
    3: "adoption",
    4: "contention",
    5: "nested",
    6: "thread_unsafe",
    7: "tuning",
    8: "versus_mpi",
    9: "four_tasks",
    10: "node_wide",
    11: "tuning_search",
    12: "pools",
}


def _version(module: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(module)
    except metadata.PackageNotFoundError:
        return None


def _open_mpi() -> str | None:
    """Open MPI's version from mpirun, or None where it is missing."""
    try:
        out = subprocess.run(
            ["mpirun", "--version"], capture_output=True, text=True, check=False, timeout=30
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    first = out.splitlines()[0] if out else ""
    return first.rsplit(" ", 1)[-1] if "Open MPI" in first else None


def machine() -> dict[str, Any]:
    """The machine and the library versions a reader needs to weigh the figures."""
    from vlcs import __version__

    return {
        "cpu_model": _cpu_model(),
        "cpus": len(os.sched_getaffinity(0)),
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "kernel": platform.release(),
        "glibc": " ".join(platform.libc_ver()),
        "python": platform.python_version(),
        "vlcs": __version__,
        "libraries": {
            **{m: _version(m) for m in ("numpy", "scipy", "h5py", "torch", "threadpoolctl")},
            "open_mpi": _open_mpi(),
        },
    }


def run_case(number: int, quick: bool) -> dict[str, Any]:
    """One case in a fresh interpreter; a failure is reported, not raised."""
    module = CASES[number]
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    cmd = [sys.executable, "-m", "vlcs_bench.evaluation.case", module, "--out", out]
    if quick:
        cmd.append("--quick")
    t = time.perf_counter()
    proc = subprocess.run(cmd, check=False, stdout=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - t
    try:
        if proc.returncode != 0:
            tail = proc.stdout.strip().splitlines()[-1:] if proc.stdout else []
            return {
                "case": number,
                "name": module,
                "error": f"the case exited with status {proc.returncode}"
                + (f": {tail[0]}" if tail else "")
                + " (its output is above)",
                "elapsed_s": elapsed,
            }
        result = json.loads(Path(out).read_text())
    finally:
        Path(out).unlink(missing_ok=True)
    result.update(case=number, name=module, elapsed_s=elapsed)
    return result


def run_all(cases: list[int], quick: bool) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "suite": "all",
        "mode": "quick" if quick else "full",
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": machine(),
        "cases": [],
    }
    for n in cases:
        say(f"case {n} ({CASES[n]})...")
        doc["cases"].append(run_case(n, quick))
    return doc

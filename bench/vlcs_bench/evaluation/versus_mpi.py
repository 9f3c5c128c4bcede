"""Case 8 (paper Fig. 11, on CPU): a domain split in two, as MPI ranks or
as vlcs contexts."""

from __future__ import annotations

import os
import shutil
import time
from typing import Any

from vlcs import program_path

from vlcs_bench._build import build, vlcs_args
from vlcs_bench.evaluation._harness import (
    bound_runs,
    bound_runs_text,
    ncpus,
    run_json,
    say,
    summarise,
    timed_runs,
)
from vlcs_bench.evaluation._tasks import split_cpus

TITLE = "Versus MPI (paper Fig. 11, on CPU)"
MODELS = (
    "a solver written the MPI way, its part of the domain in globals: an explicit 3-D "
    "heat equation (7-point Jacobi, OpenMP inside each part) split along z in two "
    "halves that exchange one plane of halo each way before every step. Two MPI ranks "
    "(Open MPI from Debian, MPI_Sendrecv through shared memory, each rank bound to "
    "half the cores) against two vlcs contexts in one process (each with its own copy "
    "of the solver and of libgomp on half the cores, halos copied with memcpy, one "
    "barrier per step). The same shared object runs in all strategies; the whole box "
    "in one process with every core is the reference for time and result."
)

SOLVER_FLAGS = ["-O2", "-fopenmp", "-shared", "-fPIC"]


def _programs() -> dict[str, str]:
    """Build the solver and both drivers; paths by role."""
    missing = [p for p in ("mpicc", "mpirun") if shutil.which(p) is None]
    if missing:
        raise RuntimeError(
            f"case 8 needs Open MPI ({' and '.join(missing)} not found): "
            "apt-get install openmpi-bin libopenmpi-dev, or run ./run test once"
        )
    return {
        "solver": str(build("heat3d", ["heat3d.c"], SOLVER_FLAGS)),
        "mpi": str(
            build("heat3d_mpi", ["heat3d_mpi.c"], ["-O2"], libs=("-ldl",), compiler="mpicc")
        ),
        "contexts": str(
            build(
                "heat3d_contexts",
                ["heat3d_contexts.c"],
                ["-O2", *vlcs_args()],
                libs=("-lvlcs", "-lpthread", "-ldl"),
            )
        ),
    }


def mpi_env(omp_threads: int) -> dict[str, str]:
    """The environment for mpirun: OpenMP threads per rank, and root allowed
    (Open MPI refuses root unless told; containers often run as root)."""
    return dict(
        os.environ,
        OMPI_ALLOW_RUN_AS_ROOT="1",
        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
        OMP_NUM_THREADS=str(omp_threads),
    )


def run(quick: bool) -> dict[str, Any]:
    n = ncpus()
    half = max(1, n // 2)
    say("versus MPI: compiling the solver and the MPI and contexts drivers")
    prog = _programs()
    ca, cb = split_cpus(n, half)
    launcher = str(program_path("vlcs-run"))
    env = mpi_env(half)

    # A large box (compute-bound, halo small beside a step) and a small one
    # with many steps (exchange and synchronisation weigh).
    boxes = (
        [(192, 192, 192, 40), (48, 48, 48, 4000)]
        if quick
        else [(256, 256, 256, 100), (48, 48, 48, 10000)]
    )
    repeats = timed_runs(quick)
    groups = []
    for nx, ny, nz, steps in boxes:
        size = [str(nx), str(ny), str(nz), str(steps)]
        strategies = {
            "one process, whole box, all cores": [launcher, "--", prog["contexts"], prog["solver"]]
            + size
            + ["whole"],
            f"2 MPI ranks x {half} cores (Open MPI)": [
                "mpirun",
                "-np",
                "2",
                "--map-by",
                f"slot:PE={half}",
                "--bind-to",
                "core",
                "-x",
                "OMP_NUM_THREADS",
                prog["mpi"],
                prog["solver"],
                *size,
            ],
            f"2 vlcs contexts ({ca} | {cb})": [launcher, "--", prog["contexts"], prog["solver"]]
            + size
            + [ca, cb],
        }
        title = f"heat equation {nx}x{ny}x{nz}, {steps} steps"
        loop: dict[str, list[float]] = {s: [] for s in strategies}
        wall: dict[str, list[float]] = {s: [] for s in strategies}
        out: dict[str, dict[str, Any]] = {}
        for r in range(repeats + 1):  # the first round warms caches and is dropped
            for name, cmd in strategies.items():
                say(f"{title}: {'warm-up' if r == 0 else f'run {r}/{repeats}'} {name}")
                t = time.perf_counter()
                out[name] = run_json(cmd, env=env if "MPI" in name else None)
                if r > 0:
                    wall[name].append(time.perf_counter() - t)
                    loop[name].append(out[name]["loop_s"])
        # The makespan lower bound: the box's work on one core, over every
        # core; the fastest of 3 runs in full mode, as in case 4 (one slow run
        # would raise it).
        say(f"{title}: the whole box on one core, {bound_runs_text()} (for the ideal)")
        one_core_s = min(
            run_json([launcher, "--", prog["contexts"], prog["solver"], *size, "0"])["loop_s"]
            for _ in range(bound_runs())
        )
        ideal_s = one_core_s / n
        ref = out[next(iter(strategies))]["checksum"]
        same = {s: out[s]["checksum"] == ref for s in strategies}
        threads = "; ".join(f"{s}: {out[s]['threads']}" for s in strategies)
        baseline = next(s for s in strategies if "MPI" in s)
        groups.append(
            summarise(
                f"{title}: time-step loop",
                loop,
                same,
                baseline=baseline,
                ideal_s=ideal_s,
                note="Timed inside the programs from the first step to the last "
                "(barrier to barrier); speedup over the MPI ranks. Results compared "
                f"bit for bit with the whole box (checksum {ref:.17g}). OpenMP threads "
                f"per part: {threads}. Ideal: the box on one core "
                f"({one_core_s:.2f} s, {bound_runs_text()}) over {n} cores.",
            )
        )
        groups.append(
            summarise(
                f"{title}: whole run, launch included",
                wall,
                same,
                baseline=baseline,
                note="Wall time of the command as a user runs it: mpirun's start-up "
                "of two processes against one process creating two contexts "
                "(vlcs run -- ...), setup and result gathering included.",
            )
        )
    return {
        "groups": groups,
        "notes": [
            "The halves' work is the whole box's: a split can at best match the whole "
            "box with every core; what it adds is its exchange and synchronisation cost."
        ],
    }

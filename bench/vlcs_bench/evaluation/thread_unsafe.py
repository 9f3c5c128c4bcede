"""Case 6 (paper Fig. 10): thread-unsafe libraries, called twice at once."""

from __future__ import annotations

import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vlcs import program_path

from vlcs_bench._build import build, cache_dir, vlcs_args
from vlcs_bench.evaluation._harness import (
    Strategy,
    measure,
    ncpus,
    run_json,
    say,
    summarise,
    timed_runs,
)
from vlcs_bench.evaluation._tasks import on_threads, split_cpus
from vlcs_bench.jobs import eigsh_child, eigsh_job, h5_child, h5_job

TITLE = "Thread-unsafe libraries (paper Fig. 10)"
MODELS = (
    "two independent jobs that each call a library that is not thread-safe: arpack-ng "
    "eigen-solves from C++, HDF5 (h5py serialises every call of the process behind one "
    "lock) writing and reading gzip-compressed datasets, and ARPACK eigen-solves through "
    "scipy.sparse.linalg.eigsh, with current scipy and with the paper's (< 1.16). "
    "Users run them sequentially, on threads (serialised inside the library), or in "
    "a ProcessPoolExecutor (inputs pickled to the workers, as users would)."
)


def _four_ways(
    job: Callable[..., Any],
    mods: tuple[Any, ...],
    child: Callable[..., Any],
    args: list[tuple[Any, ...]],
    pool: concurrent.futures.Executor,
    ctxs: list[Any],
    ctx_mods: list[tuple[Any, ...]],
    ctx_args: list[tuple[Any, ...]],
) -> list[Strategy]:
    """Two jobs, job(*mods, *args[i]), the four ways users would run them:
    one after the other, on threads, in worker processes (child(*args[i]),
    inputs pickled) and each in its context on its own copies (ctx_mods)."""

    def processes() -> list[Any]:
        return [f.result() for f in [pool.submit(child, *a) for a in args]]

    def contexts() -> list[Any]:
        futures = [c.submit(job, *m, *a) for c, m, a in zip(ctxs, ctx_mods, ctx_args, strict=True)]
        return [f.result() for f in futures]

    return [
        Strategy("sequential", lambda: [job(*mods, *a) for a in args]),
        Strategy("threads", lambda: on_threads(*[lambda a=a: job(*mods, *a) for a in args])),
        Strategy("ProcessPoolExecutor", processes),
        Strategy("vlcs contexts", contexts),
    ]


#: the last scipy whose ARPACK runs behind one process-wide lock (the paper's)
OLD_SCIPY = "1.15.3"


def _setup() -> tuple[list[Any], list[tuple[Any, ...]], concurrent.futures.Executor]:
    """Two contexts on halves of the CPUs with their own h5py, numpy and
    scipy, and a pool of two started worker processes."""
    import vlcs

    n = ncpus()
    ca, cb = split_cpus(n, n // 2)
    ctxs = [vlcs.VLC(cpus=ca, name="job-a"), vlcs.VLC(cpus=cb, name="job-b")]
    mods = []
    for c in ctxs:
        with c:
            import h5py as h5_c
            import numpy as np_c
            import scipy.sparse as sp_c
            import scipy.sparse.linalg as spla_c
        mods.append((h5_c, np_c, sp_c, spla_c))
    pool = concurrent.futures.ProcessPoolExecutor(2)
    list(pool.map(abs, [1, 2]))  # workers started before timing
    return ctxs, mods, pool


def _eigsh(
    quick: bool, ctxs: list[Any], mods: list[tuple[Any, ...]], pool: Any
) -> list[dict[str, Any]]:
    """Two eigsh solves, sparse (both modes) and dense (full mode)."""
    import numpy as np
    import scipy
    import scipy.sparse as sp
    import scipy.sparse.linalg as spla

    locked = tuple(int(x) for x in scipy.__version__.split(".")[:2]) < (1, 16)
    why = (
        f"scipy {scipy.__version__} runs ARPACK behind one process-wide lock (_ARPACK_LOCK): "
        "threads take turns; each context imports its own scipy and so has its own lock."
        if locked
        else f"scipy {scipy.__version__} ships a reentrant ARPACK (no global lock, since "
        "1.16), so plain threads can already run two solves at once."
    )
    common = (
        " Each ARPACK iteration returns to Python for one matrix-vector product: with one "
        "interpreter (threads, contexts) the two solves take turns on the GIL thousands of "
        "times, which is the likely cost where they lose against sequential. Ideal: 2x for "
        "two independent solves."
    )
    shapes = [(True, 20000 if quick else 50000, 6)]
    if not quick:
        shapes.append((False, 5000, 10))
    groups = []
    for sparse, size, k in shapes:
        what = f"sparse 2-D operator, {size} unknowns" if sparse else f"dense {size}x{size}"
        detail = (
            " The sparse products run on one thread, but ARPACK's orthogonalisation goes "
            "through OpenBLAS on every core; two worker processes each start a BLAS thread per "
            "core, which spin against each other (measured apart on 2 cores: the pool took "
            "5.5-30 s against 2.7 s sequential, and 3.2-3.8 s against 4.5-5.0 s with "
            "OPENBLAS_NUM_THREADS=1)."
            if sparse
            else " The dense products are memory-bound and sequential already spreads them "
            "over every core (OpenBLAS threads), so a split has little to win; processes "
            "oversubscribe (each OpenBLAS sizes itself to every core)."
        )
        args = [(size, k, seed, sparse) for seed in (1, 2)]
        groups.append(
            measure(
                f"scipy {scipy.__version__} eigsh: two solves, k={k}, {what}",
                _four_ways(
                    eigsh_job,
                    (sp, spla, np),
                    eigsh_child,
                    args,
                    pool,
                    ctxs,
                    [(m[2], m[3], m[1]) for m in mods],
                    args,
                ),
                timed_runs(quick),
                ideal_speedup=min(2.0, ncpus()),
                note=why + detail + common,
            )
        )
    return groups


def run_eigsh(quick: bool) -> dict[str, Any]:
    """The eigsh group alone: run by _old_scipy in an interpreter that
    imports the old scipy first."""
    ctxs, mods, pool = _setup()
    try:
        return {"groups": _eigsh(quick, ctxs, mods, pool)}
    finally:
        pool.shutdown()


def _old_scipy(quick: bool) -> tuple[list[dict[str, Any]], str]:
    """The eigsh group again with scipy OLD_SCIPY, installed once with pip
    into the cache beside (not over) the current one; (groups, note)."""
    target = cache_dir() / f"scipy-{OLD_SCIPY}-py{sys.version_info[0]}{sys.version_info[1]}"
    if not (target / "scipy").is_dir():
        say(
            f"thread-unsafe: installing scipy {OLD_SCIPY} into {target} (once, for the paper's "
            "eigsh with ARPACK behind a lock)"
        )
        tmp = target.with_name(target.name + f".{os.getpid()}.tmp")
        pip = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "-q",
                "--disable-pip-version-check",
                "--no-deps",
                "--target",
                str(tmp),
                f"scipy=={OLD_SCIPY}",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if pip.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            last = (pip.stderr.strip().splitlines() or ["no message"])[-1]
            return [], (
                f"Not run: scipy {OLD_SCIPY} (ARPACK behind a lock) could not be "
                f"installed into {target}: {last}"
            )
        tmp.rename(target)
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(target), *filter(None, [os.environ.get("PYTHONPATH")])]),
    )
    cmd = [
        sys.executable,
        "-m",
        "vlcs_bench.evaluation.case",
        "thread_unsafe",
        "--function",
        "run_eigsh",
        "--out",
        out,
    ] + (["--quick"] if quick else [])
    try:
        proc = subprocess.run(cmd, env=env, check=False)
        if proc.returncode != 0:
            return [], f"The run with scipy {OLD_SCIPY} failed (status {proc.returncode})."
        groups = json.loads(Path(out).read_text())["groups"]
    finally:
        Path(out).unlink(missing_ok=True)
    return groups, (
        f"scipy {OLD_SCIPY} from {target} (pip install --target, numpy as "
        "installed), run in its own interpreter."
    )


def _arpack_cpp(quick: bool, one_blas_thread: bool) -> dict[str, Any]:
    """Two arpack-ng solves from C++ (kernels/arpack_pair.cpp)."""
    prog = build(
        "arpack_pair",
        ["arpack_pair.cpp"],
        ["-std=c++17", "-O2", *vlcs_args()],
        libs=("-lvlcs", "-ldl", "-lpthread", "-lm"),
        compiler=os.environ.get("CXX", "c++"),
    )
    n, solves = (1000, 2) if quick else (1400, 2)
    reps = timed_runs(quick)
    ca, cb = split_cpus(ncpus(), ncpus() // 2)
    env = dict(os.environ)
    if one_blas_thread:
        env["OPENBLAS_NUM_THREADS"] = "1"
    say(
        f"thread-unsafe: C++ arpack-ng pair, {reps} runs of each strategy"
        + (" (OPENBLAS_NUM_THREADS=1)" if one_blas_thread else "")
    )
    doc = run_json(
        [str(program_path("vlcs-run")), "--", str(prog), str(n), str(solves), str(reps), ca, cb],
        env=env,
    )
    names = {
        "sequential": "sequential",
        "threads": "threads + a mutex (one copy)",
        "processes": "fork two processes",
        "contexts": f"vlcs contexts ({ca} | {cb})",
    }
    blas = (
        "OPENBLAS_NUM_THREADS=1 everywhere: only the library's thread-unsafety is measured"
        if one_blas_thread
        else "OpenBLAS as installed (a thread per core of its context or process)"
    )
    return summarise(
        f"C++ arpack-ng: two jobs of {solves} solves, n={n}, "
        + ("one BLAS thread" if one_blas_thread else "default BLAS threads"),
        {names[k]: doc[k]["times"] for k in names},
        {names[k]: bool(doc[k]["exact"]) for k in names},
        ideal_speedup=min(2.0, ncpus()),
        note="arpack-ng keeps a solve's state in Fortran SAVE variables: one copy cannot run "
        "two solves at once, so threads must take turns. Same result = every run's "
        f"eigenvalues exact (known for the 1-D Laplacian). {blas}. Ideal: 2x.",
    )


def run(quick: bool) -> dict[str, Any]:
    import h5py
    import numpy as np

    n = ncpus()
    ctxs, mods, pool = _setup()
    tmp = tempfile.mkdtemp(prefix="vlcs-eval-h5-")
    rows = 300 if quick else 1200
    data = [np.random.default_rng(s).random((rows, 1000)) for s in (1, 2)]
    ctx_data = [m[1].asarray(d) for m, d in zip(mods, data, strict=True)]
    paths = [os.path.join(tmp, f"{i}.h5") for i in (0, 1)]
    repeats = timed_runs(quick)

    h5 = measure(
        f"h5py: two jobs, each writing and reading 8 gzip datasets of {rows}x1000",
        _four_ways(
            h5_job,
            (h5py, np),
            h5_child,
            [(paths[i], data[i]) for i in (0, 1)],
            pool,
            ctxs,
            [(m[0], m[1]) for m in mods],
            [(paths[i], ctx_data[i]) for i in (0, 1)],
        ),
        repeats,
        ideal_speedup=min(2.0, n),
        note="Ideal: two equal jobs on two cores, 2x.",
    )
    eig = _eigsh(quick, ctxs, mods, pool)
    pool.shutdown()
    shutil.rmtree(tmp, ignore_errors=True)
    old, old_note = _old_scipy(quick)
    cpp = [_arpack_cpp(quick, one_blas_thread=False)]
    if not quick:
        cpp.append(_arpack_cpp(quick, one_blas_thread=True))
    return {"groups": [*cpp, h5, *eig, *old], "notes": [old_note]}

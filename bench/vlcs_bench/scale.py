"""`vlcs bench scale`: many contexts in one process, namespace mode against
copy mode (docs/copy-mode.md).

For each library (Debian's libgomp; Debian's OpenBLAS with libgfortran and
libquadmath) and each count of contexts (1, 15, 64, 256, 1024; namespace mode
stops at glibc's 15), a fresh process started by ``vlcs run`` makes the
contexts from C (through ctypes: Python's own contexts keep a namespace),
each on one CPU, and loads the library into each one.  Reported per row:
milliseconds to create a context and load the library into it (median), the
extra proportional set size (PSS) per context, the memory the copies'
memfds still hold (once loaded a copy's read-only pages are its original
file's and the rest its own, so only the roots' and the interposer's few
pages stay), and a check that
every copy sizes its pool from its own context (one thread).

Then case 6's thread-unsafe workload at the machine's width: arpack-ng
eigen-solves with one context per CPU, each with its own libarpack and
OpenBLAS, against one copy shared behind a mutex (the one correct way to
call it from several threads), in namespace mode (while the CPUs are at most
15) and in copy mode.  Last (not with --quick), copy-mode contexts with
libgomp until the first limit, of the ASKED: on this VM the kernel's
memory maps stop them past 3,000, with vlcs's one-sentence error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any

from vlcs._paths import program_path

from vlcs_bench._build import build, vlcs_args

COUNTS = (1, 15, 64, 256, 1024)
LIBRARIES = {
    "libgomp": ("libgomp.so.1", "omp_get_max_threads"),
    "openblas": ("libopenblas.so.0", "openblas_get_num_threads"),
}
MODES = {"namespace": 1, "copies": 2}

_CHILD = textwrap.dedent(
    """
    import ctypes, json, os, statistics, sys, time
    from vlcs._lib import lib
    soname, getter, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    L = lib()
    L.vlcs_init()
    def pss_kib():
        for line in open("/proc/self/smaps_rollup"):
            if line.startswith("Pss:"):
                return int(line.split()[1])
    def memfd_kib():  # what copy mode's memfds hold
        total = 0
        for fd in os.listdir("/proc/self/fd"):
            try:
                if os.readlink(f"/proc/self/fd/{fd}").startswith("/memfd:vlcs-copy"):
                    total += os.fstat(int(fd)).st_blocks * 512
            except OSError:
                pass
        return total // 1024
    cpus = sorted(os.sched_getaffinity(0))
    # a first context, not counted and given back: vlcs's own start
    warm = L.vlcs_ctx_create(b"warm")
    L.vlcs_ctx_set_mode(warm, mode)
    L.vlcs_ctx_load(warm, b"libm.so.6")
    L.vlcs_ctx_destroy(warm)
    before, before_fd = pss_kib(), memfd_kib()
    times, handles = [], []
    for i in range(n):
        t = time.perf_counter()
        c = L.vlcs_ctx_create(f"c{i}".encode())
        if not c or L.vlcs_ctx_set_mode(c, mode) != 0:
            raise SystemExit(L.vlcs_error().decode())
        L.vlcs_ctx_set_cpus(c, str(cpus[i % len(cpus)]).encode())
        h = L.vlcs_ctx_load(c, soname.encode())
        times.append(time.perf_counter() - t)
        if not h:
            print(json.dumps({"error": L.vlcs_error().decode(), "contexts": i,
                              "limit": L.vlcs_errlimit(), "seconds": sum(times)}))
            raise SystemExit(0)
        handles.append(h)
    after, after_fd = pss_kib(), memfd_kib()
    threads = set()
    for h in handles:
        f = ctypes.CFUNCTYPE(ctypes.c_int)(L.vlcs_ctx_sym(h, getter.encode()))
        threads.add(f())
    print(json.dumps({"ms_per_context": statistics.median(times) * 1e3,
                      "pss_kib_per_context": (after - before) / n,
                      "memfd_kib_per_context": (after_fd - before_fd) / n,
                      "pool_sizes": sorted(threads)}))
    """
)


def _one(soname: str, getter: str, mode: int, n: int) -> dict[str, Any]:
    argv = [str(program_path("vlcs-run")), "--contexts", str(max(n, 16)), "--", sys.executable]
    argv += ["-c", _CHILD, soname, getter, str(mode), str(n)]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        return {"error": (r.stderr.strip().splitlines() or ["(no output)"])[-1]}
    return json.loads(r.stdout)


def arpack(quick: bool = False, progress: bool = True) -> list[dict[str, Any]]:
    """Case 6's arpack-ng solves, one context per CPU, in each mode that
    holds that many contexts (kernels/arpack_many.cpp)."""
    prog = build(
        "arpack_many",
        ["arpack_many.cpp"],
        ["-std=c++17", "-O2", *vlcs_args()],
        libs=("-lvlcs", "-ldl", "-lpthread", "-lm"),
        compiler=os.environ.get("CXX", "c++"),
    )
    k = len(os.sched_getaffinity(0))
    n, solves = (1000, 1) if quick else (1400, 3)
    rows: list[dict[str, Any]] = []
    for mode in MODES:
        if mode == "namespace" and k > 15:
            continue
        if progress:
            print(f"vlcs bench scale: arpack-ng, {k} contexts, {mode}", file=sys.stderr)
        argv = [str(program_path("vlcs-run")), "--contexts", str(max(k, 16)), "--", str(prog)]
        # one BLAS thread per solve on both sides: the base's copy too
        env = {**os.environ, "VLCS_MODE": mode, "OPENBLAS_NUM_THREADS": "1"}
        argv += [str(n), str(solves), str(k)]
        r = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=900)
        row: dict[str, Any] = {"mode": mode, "contexts": k}
        if r.returncode != 0:
            row["error"] = (r.stderr.strip().splitlines() or ["(no output)"])[-1]
        else:
            row |= json.loads(r.stdout)
            row["speedup"] = row["one_copy_mutex_s"] / row["contexts_s"]
        rows.append(row)
    return rows


# contexts asked for in the full run's last part, more than this VM's
# default vm.max_map_count holds with libgomp
ASKED = 4096


def first_limit(progress: bool = True) -> dict[str, Any]:
    """Copy-mode contexts with libgomp, ASKED of them, until the first
    limit: how many were made, in how long, and the sentence that stopped
    them (the process going on to its end)."""
    if progress:
        print(f"vlcs bench scale: libgomp, up to {ASKED} contexts, until a limit", file=sys.stderr)
    soname, getter = LIBRARIES["libgomp"]
    return {"asked": ASKED} | _one(soname, getter, MODES["copies"], ASKED)


def run(
    counts: tuple[int, ...] = COUNTS, progress: bool = True, quick: bool = False
) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for name, (soname, getter) in LIBRARIES.items():
        for n in counts:
            for mode, code in MODES.items():
                if mode == "namespace" and n > 15:
                    continue
                if progress:
                    print(f"vlcs bench scale: {name}, {n} contexts, {mode}", file=sys.stderr)
                row = {"library": name, "contexts": n, "mode": mode}
                rows.append(row | _one(soname, getter, code, n))
    result = {"rows": rows, "arpack": arpack(quick, progress)}
    if not quick:
        result["first_limit"] = first_limit(progress)
    return result


def report(result: dict[str, Any]) -> str:
    lines = [
        "Contexts in one process: namespace mode (at most 15) against copy mode",
        "",
        "| library | contexts | mode | ms per context (create + load) | extra PSS per context "
        "(KiB) | + held by memfds (KiB) | pool sizes seen |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        if "error" in r:
            where = f"| {r['library']} | {r['contexts']} | {r['mode']} |"
            lines.append(f"{where} error: {r['error']} |")
            continue
        lines.append(
            f"| {r['library']} | {r['contexts']} | {r['mode']} | {r['ms_per_context']:.2f} | "
            f"{r['pss_kib_per_context']:.0f} | {r['memfd_kib_per_context']:.0f} | "
            f"{r['pool_sizes']} |"
        )
    lines += [
        "",
        "Case 6 at the machine's width: arpack-ng solves, one context per CPU (each its own "
        "libarpack and OpenBLAS, one thread) against one copy behind a mutex",
        "",
        "| contexts | mode | of them copies | ms per context (create + load) | one copy, mutex "
        "(s) | contexts (s) | speed-up | every solve exact |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in result.get("arpack", []):
        if "error" in r:
            lines.append(f"| {r['contexts']} | {r['mode']} | error: {r['error']} |")
            continue
        lines.append(
            f"| {r['contexts']} | {r['mode']} | {r['copies']} | {r['load_ms_per_context']:.1f} | "
            f"{r['one_copy_mutex_s']:.3f} | {r['contexts_s']:.3f} | {r['speedup']:.2f}x | "
            f"{r['exact']} |"
        )
    limit = result.get("first_limit")
    if limit is not None:
        lines.append("")
        if "limit" in limit:
            lines.append(
                f"Asked for {limit['asked']} copy-mode contexts with libgomp: "
                f"{limit['contexts']} made in {limit['seconds']:.1f} s, then: {limit['error']}"
            )
        elif "error" in limit:
            lines.append(f"Asked for {limit['asked']} contexts with libgomp: {limit['error']}")
        else:
            lines.append(f"Asked for {limit['asked']} contexts with libgomp: every one made")
    return "\n".join(lines)

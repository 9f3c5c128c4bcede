"""`vlcs bench scale`: many contexts in one process, namespace mode against
copy mode (docs/copy-mode.md).

For each library (Debian's libgomp; Debian's OpenBLAS with libgfortran and
libquadmath) and each count of contexts (1, 15, 64, 256; namespace mode
stops at glibc's 15), a fresh process started by ``vlcs run`` makes the
contexts from C (through ctypes: Python's own contexts keep a namespace),
each on one CPU, and loads the library into each one.  Reported per row:
milliseconds to create a context and load the library into it (median), the
extra proportional set size (PSS) per context, the memory the copies' files
hold beyond it (their renamed pages and data, in memfds), and a check that
every copy sizes its pool from its own context (one thread).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

from vlcs._paths import program_path

COUNTS = (1, 15, 64, 256)
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
    def memfd_kib():  # copies' bytes kept in memory but not mapped
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
            print(json.dumps({"error": L.vlcs_error().decode(), "contexts": i}))
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


def run(counts: tuple[int, ...] = COUNTS, progress: bool = True) -> dict[str, Any]:
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
    return {"rows": rows}


def report(result: dict[str, Any]) -> str:
    lines = [
        "Contexts in one process: namespace mode (at most 15) against copy mode",
        "",
        "| library | contexts | mode | ms per context (create + load) | extra PSS per context "
        "(KiB) | + copies' unmapped memory (KiB) | pool sizes seen |",
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
    return "\n".join(lines)

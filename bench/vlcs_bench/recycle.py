"""`vlcs bench recycle`: a server that needs a context per request, four
ways, each in a fresh interpreter of this run (same machine, same minute):

* plain: no contexts, the base's numpy (the floor);
* pool: ``vlcs.ContextPool`` of two contexts, ``import numpy`` per request
  (a lookup after the first) and a small numpy call;
* close-C: a new context per request that loads Debian's OpenBLAS, libgomp
  and libm with ``ctx.load``, calls each, and is closed (its namespace goes
  back to glibc);
* close-numpy: a new context per request that imports numpy and is closed:
  its namespace must stay (numpy's objects may outlive it), and past glibc's
  namespaces its copies (copy mode) do: each request keeps its memory, which
  the KiB per request shows; at most CLOSE_NUMPY_REQUESTS requests.

Per way: milliseconds per request (median of the per-request times) and
resident memory per request over the second half of the run.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

_COMMON = """
import contextlib, ctypes, gc, json, statistics, sys, time
import vlcs
N = int(sys.argv[1])
rss = lambda: int(open("/proc/self/statm").read().split()[1]) * 4
times, marks, failed = [], {}, None
"""

_REPORT = """
half, end = N // 2, N
per = (marks[end] - marks[half]) / (end - half) if end in marks and half in marks else None
print(json.dumps({"ms_per_request": statistics.median(times) * 1e3 if times else None,
                  "rss_kib_per_request": per, "requests_done": len(times), "failed": failed}))
"""

_LOOP = """
for i in range(N):
    t = time.perf_counter()
    try:
        request(i)
    except vlcs.VlcsError as e:
        failed = {"request": i + 1, "error": str(e)}
        break
    times.append(time.perf_counter() - t)
    if i + 1 in (N // 2, N):
        gc.collect()
        marks[i + 1] = rss()
"""

_WAYS = {
    "plain": """
import numpy
def request(i):
    a = numpy.arange(100.0)
    assert float(a @ a) == 328350.0
""",
    "pool": """
cpus = ["0", "1"] if len(__import__("os").sched_getaffinity(0)) > 1 else ["0", "0"]
pool = vlcs.ContextPool(cpus=cpus, env={"OPENBLAS_NUM_THREADS": "1"})
def request(i):
    with pool.context() as ctx, ctx:
        import numpy
        a = numpy.arange(100.0)
        assert float(a @ a) == 328350.0
""",
    "close-C": """
D = ctypes.c_double
CPUS = sorted(__import__("os").sched_getaffinity(0))
def request(i):
    made = vlcs.VLC(cpus=[CPUS[i % len(CPUS)]], env={"OMP_NUM_THREADS": "1"})
    with contextlib.closing(made) as ctx:
        blas = ctx.load("libopenblas.so.0")
        blas.cblas_ddot.restype = D
        blas.cblas_ddot.argtypes = [ctypes.c_int, ctypes.POINTER(D), ctypes.c_int,
                                    ctypes.POINTER(D), ctypes.c_int]
        x = (D * 100)(*range(100))
        assert blas.cblas_ddot(100, x, 1, x, 1) == 328350.0
        omp = ctx.load("libgomp.so.1")
        assert omp.omp_get_max_threads() == 1
        m = ctx.load("libm.so.6")
        m.cos.restype, m.cos.argtypes = D, [D]
        assert m.cos(0.0) == 1.0
        del blas, omp, m, x
""",
    "close-numpy": """
import warnings
warnings.simplefilter("ignore", vlcs.NamespaceKeptWarning)
def request(i):
    with contextlib.closing(vlcs.VLC()) as ctx:
        with ctx:
            import numpy
            a = numpy.arange(100.0)
            assert float(a @ a) == 328350.0
""",
}


def run_way(way: str, requests: int) -> dict[str, Any]:
    code = textwrap.dedent(_COMMON) + _WAYS[way] + _LOOP + _REPORT
    p = subprocess.run(
        [sys.executable, "-c", code, str(requests)], capture_output=True, text=True, timeout=1800
    )
    if p.returncode != 0:
        return {"error": p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "crashed"}
    return json.loads(p.stdout.strip().splitlines()[-1])


# Each closed numpy context keeps its copy of numpy (megabytes): a sample.
CLOSE_NUMPY_REQUESTS = 60


def run(requests: int = 1000, progress: bool = True) -> dict[str, Any]:
    ways = {}
    for way in _WAYS:
        n = min(requests, CLOSE_NUMPY_REQUESTS) if way == "close-numpy" else requests
        if progress:
            print(f"vlcs bench recycle: {way}, {n} requests...", file=sys.stderr, flush=True)
        ways[way] = run_way(way, n)
    floor = ways["plain"].get("ms_per_request")
    for r in ways.values():
        ms = r.get("ms_per_request")
        r["ratio_to_plain"] = ms / floor if ms and floor else None
    return {"suite": "recycle", "requests": requests, "ways": ways}


def report(r: dict[str, Any]) -> str:
    lines = [f"{'way':<12} {'ms/request':>11} {'x plain':>8} {'KiB/request':>12}  notes"]
    for way, w in r["ways"].items():
        if "error" in w:
            lines.append(f"{way:<12} error: {w['error']}")
            continue
        kib = "-" if w["rss_kib_per_request"] is None else f"{w['rss_kib_per_request']:.2f}"
        note = ""
        if w["failed"]:
            note = f"stopped at request {w['failed']['request']}: {w['failed']['error'][:90]}..."
        lines.append(
            f"{way:<12} {w['ms_per_request']:>11.3f} {w['ratio_to_plain']:>8.1f} {kib:>12}  {note}"
        )
    return "\n".join(lines)

"""Elastic contexts from Python: ``VLC(cpus=..., elastic=...)`` borrows the
CPUs of idle elastic contexts while a thread is inside it and gives them
back the moment a thread enters their owner; the pools of numpy's and
scipy's OpenBLAS, scikit-learn's OpenMP and torch follow, every thread of
the context moves, and the base is untouched.

Each case runs in a fresh interpreter (its contexts import numpy)."""

from __future__ import annotations

import pytest
import vlcs
from test_imports import needs, needs_two, run_code

# Helpers for the fresh interpreters: the threads whose real affinity is
# exactly `cpus`, and the pools a thread inside a context sees.
HELPERS = """
import os, threading
def threads_on(cpus):
    n = 0
    for tid in os.listdir("/proc/self/task"):
        try:
            n += os.sched_getaffinity(int(tid)) == set(cpus)
        except OSError:  # ended meanwhile
            pass
    return n
def pools():
    from threadpoolctl import threadpool_info
    return sorted((p["internal_api"], p["num_threads"]) for p in threadpool_info())
class Owner(threading.Thread):
    # a thread of the base (started from inside another context, so it opts
    # out of belonging there) that enters ctx, reports where it runs, and
    # stays until released
    def __init__(self, ctx):
        import vlcs
        super().__init__()
        vlcs.base_thread(self)
        self.ctx, self.inside, self.release = ctx, threading.Event(), threading.Event()
    def run(self):
        with self.ctx:
            self.affinity = sorted(os.sched_getaffinity(0))
            self.inside.set()
            self.release.wait()
"""

# Two 1-CPU elastic contexts a (CPU 0) and b (CPU 1), bound to both, after
# the base's numpy and its pools.
TWO_ELASTIC = (
    HELPERS
    + """
import json
import numpy as base_np, vlcs
from threadpoolctl import threadpool_info
base_pools = sorted((p["internal_api"], p["num_threads"]) for p in threadpool_info())
a = vlcs.VLC(cpus="0", elastic="0-1", name="a")
b = vlcs.VLC(cpus="1", elastic="0-1", name="b")
"""
)


@needs_two
@needs("scipy")
@needs("sklearn")
def test_numpy_scipy_sklearn_pools_follow_the_lent_cpus():
    r = run_code(
        TWO_ELASTIC
        + """
out = {}
with b:  # a is idle: b has both CPUs
    import numpy as np, scipy.linalg, sklearn.cluster
    x = np.random.default_rng(0).random((400, 400))
    out["grown"] = {"cpus": b.cpus, "lent": a.lent_cpus, "pools": pools(),
                    "affinity": sorted(os.sched_getaffinity(0))}
    km = sklearn.cluster.KMeans(3, n_init=2, random_state=0).fit(x[:, :8])
    owner = Owner(a)
    owner.start()
    owner.inside.wait()  # a busy: its CPU is back
    out["shrunk"] = {"cpus": b.cpus, "lent": a.lent_cpus, "pools": pools(),
                     "owner": owner.affinity,
                     "on_cpu1": threads_on([1]), "b_threads": b.thread_count}
    product = (x @ x).sum()
    inverse = scipy.linalg.inv(x)
    km2 = sklearn.cluster.KMeans(3, n_init=2, random_state=0).fit(x[:, :8])
    owner.release.set()
    owner.join()
    out["regrown"] = {"cpus": b.cpus, "pools": pools()}
    out["same_kmeans"] = bool((km.labels_ == km2.labels_).all())
    out["inverse_ok"] = bool(np.allclose(inverse @ x, np.eye(400), atol=1e-8))
out["idle"] = {"cpus": b.cpus, "home": b.home_cpus}
bx = base_np.asarray(x)
out["base"] = {
    "distinct_numpy": base_np is not np,
    "product": bool(base_np.isclose((bx @ bx).sum(), product)),
    "pools": sorted((p["internal_api"], p["num_threads"]) for p in threadpool_info()) == base_pools,
    "affinity": sorted(os.sched_getaffinity(0)),
    "env": [k for k in ("OMP_DYNAMIC",) if k in os.environ],
}
print(json.dumps(out))
"""
    )
    grown, shrunk = r["grown"], r["shrunk"]
    assert grown["cpus"] == [0, 1] and grown["lent"] == [0] and grown["affinity"] == [0, 1]
    # numpy's and scipy's OpenBLAS copies resized to both CPUs
    assert [n for api, n in grown["pools"] if api == "openblas"] == [2, 2], grown["pools"]
    assert shrunk["cpus"] == [1] and shrunk["lent"] == [] and shrunk["owner"] == [0]
    assert [n for api, n in shrunk["pools"] if api == "openblas"] == [1, 1], shrunk["pools"]
    # this thread and every thread b's libraries started run on CPU 1 alone
    assert shrunk["on_cpu1"] == shrunk["b_threads"] + 1, shrunk
    assert r["regrown"]["cpus"] == [0, 1]
    assert [n for api, n in r["regrown"]["pools"] if api == "openblas"] == [2, 2]
    assert r["same_kmeans"] and r["inverse_ok"]
    assert r["idle"] == {"cpus": [1], "home": [1]}
    assert r["base"] == {
        "distinct_numpy": True,
        "product": True,
        "pools": True,
        "affinity": [0, 1],
        "env": [],
    }


@needs_two
@needs("torch")
def test_torch_runs_on_the_cpus_of_the_moment():
    r = run_code(
        HELPERS
        + """
import json, vlcs
a = vlcs.VLC(cpus="0", elastic="0-1", name="a")
b = vlcs.VLC(cpus="1", elastic="0-1", name="b")
out = {}
with b:
    import torch
    x = torch.rand(300, 300, generator=torch.Generator().manual_seed(0))
    want = (x @ x).sum().item()
    out["num_threads"] = torch.get_num_threads()
    out["grown"] = sorted(os.sched_getaffinity(0))
    owner = Owner(a)
    owner.start()
    owner.inside.wait()
    got = (x @ x).sum().item()
    torch.nn.functional.relu(torch.rand(1000, 1000)).sum()  # an intra-op parallel op
    out["shrunk"] = {"cpus": b.cpus, "same": abs(got - want) < 1e-3 * abs(want),
                     "on_cpu1": threads_on([1]), "b_threads": b.thread_count}
    owner.release.set()
    owner.join()
print(json.dumps(out))
"""
    )
    assert r["num_threads"] == 2  # OMP_NUM_THREADS: the bound's size
    assert r["grown"] == [0, 1]
    shrunk = r["shrunk"]
    assert shrunk["cpus"] == [1] and shrunk["same"]
    assert shrunk["b_threads"] >= 1 and shrunk["on_cpu1"] == shrunk["b_threads"] + 1, shrunk


@needs_two
@needs("scipy")
def test_a_lend_is_kept_only_where_the_reported_progress_rises(omp_lib):
    r = run_code(
        TWO_ELASTIC
        + f"LIB = {omp_lib!r}\n"
        + """
import ctypes, time
with b:
    import numpy as np, scipy.linalg
omp = b.load(LIB)  # after set_elastic: its libgomp sizes teams by b's CPUs
x = np.random.default_rng(0).random((300, 300)) + 300 * np.eye(300)
def until_judged(unit):
    # units reported one by one until a window on b's home was measured:
    # the lend b got on entering has then been judged (the deadline only
    # bounds a failure)
    deadline = time.monotonic() + 60
    while b.progress_info()["rate_cpus"] != 1 and time.monotonic() < deadline:
        unit()
        vlcs.progress()
    return {**b.progress_info(), "cpus": b.cpus, "lent": a.lent_cpus}
def until_kept(unit):
    # then units until a window on the lend was measured with the lend kept:
    # one window against one can refuse a lend that pays where the VM's
    # other CPU is stolen meanwhile, and vlcs tries it again after 2 s, 4, 8
    deadline = time.monotonic() + 60
    p = b.progress_info()
    while not (p["most_cpus"] == 0 and p["rate_cpus"] == 2) and time.monotonic() < deadline:
        unit()
        vlcs.progress()
        p = b.progress_info()
    return {**p, "cpus": b.cpus, "lent": a.lent_cpus}
teams = []
def contended():
    total = ctypes.c_double()
    teams.append(omp.omp_probe_contended(ctypes.c_long(20000), ctypes.byref(total)))
out = {}
with b:
    out["openmp"] = until_judged(contended)
    contended()
out["teams"] = [teams[0], teams[-1]]
out["after"] = b.progress_info()["most_cpus"]
solved = []
with b:
    def solve():
        solved.append(scipy.linalg.solve(x, x[:, 0]))
    until_judged(solve)
    out["scipy"] = until_kept(solve)
    out["pools"] = pools()
out["right"] = all(bool(np.allclose(x @ s, x[:, 0])) for s in solved)
bx = base_np.asarray(x)
out["base"] = {
    "pools": sorted((p["internal_api"], p["num_threads"]) for p in threadpool_info()) == base_pools,
    "affinity": sorted(os.sched_getaffinity(0)),
    "solve": bool(base_np.allclose(bx @ base_np.linalg.solve(bx, bx[:, 0]), bx[:, 0])),
}
errors = []
for bad in (-1, 1.5, "1"):
    try:
        b.progress(bad)
    except vlcs.InvalidArgumentError as e:
        errors.append(str(e))
out["errors"] = errors
out["units"] = b.progress_info()["units"]
print(json.dumps(out))
"""
    )
    omp, sp = r["openmp"], r["scipy"]
    # the critical section ran slower on a team of two: the lend went back
    assert omp["most_cpus"] == 1 and omp["cpus"] == [1] and omp["lent"] == [], omp
    assert r["teams"] == [2, 1], "a team of two on the lend, of one after"
    assert r["after"] == 0  # leaving forgets the verdict
    # scipy's OpenBLAS ran two threads on the lend and its rate rose: kept
    assert (sp["most_cpus"], sp["rate_cpus"], sp["cpus"], sp["lent"]) == (0, 2, [0, 1], [0]), sp
    assert [n for api, n in r["pools"] if api == "openblas"] == [2, 2], r["pools"]
    assert r["right"]
    assert r["base"] == {"pools": True, "affinity": [0, 1], "solve": True}
    assert len(r["errors"]) == 3 and "whole number >= 0" in r["errors"][0]
    # units add up across the two works; the refused reports added none
    assert r["units"] == sp["units"] > omp["units"] > 0


@needs_two
def test_a_task_in_a_python_of_its_own_reports_progress_to_its_context(omp_lib):
    r = run_code(
        TWO_ELASTIC.replace('name="b")', 'name="b", python="own")')
        + f"LIB = {omp_lib!r}\n"
        + """
def task(lib):
    # runs in b's own Python: its vlcs and libvlcs are that runtime's, its
    # reports must reach b all the same.  It runs until the lend it got on
    # entering went back (a team of one on b's home; the deadline only
    # bounds a failure) and says what it saw.
    import ctypes, os, time
    import vlcs
    omp = ctypes.CDLL(lib)
    omp.omp_probe_contended.argtypes = [ctypes.c_long, ctypes.POINTER(ctypes.c_double)]
    total = ctypes.c_double()
    teams, cpus, units = [], [], 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        teams.append(omp.omp_probe_contended(20000, ctypes.byref(total)))
        cpus.append(sorted(os.sched_getaffinity(0)))
        vlcs.progress()
        units += 1
        if teams[-1] == 1 and teams[0] == 2:
            break
    return {"teams": [teams[0], teams[-1]], "cpus": [cpus[0], cpus[-1]], "units": units}
out = b.submit(task, LIB).result()
out["b"] = b.progress_info()
out["a_units"] = a.progress_info()["units"]
out["base"] = {
    "pools": sorted((p["internal_api"], p["num_threads"]) for p in threadpool_info()) == base_pools,
    "affinity": sorted(os.sched_getaffinity(0)),
}
print(json.dumps(out))
"""
    )
    # on the lend the critical section ran a team of two, slower; b's
    # reports from its own Python judged it, and the lend went back
    assert r["teams"] == [2, 1] and r["cpus"] == [[0, 1], [1]], r
    # every report counted in b (leaving forgot its verdict), none in a
    assert r["b"]["units"] == r["units"] > 1 and r["b"]["most_cpus"] == 0, r
    assert r["a_units"] == 0
    assert r["base"] == {"pools": True, "affinity": [0, 1]}


@needs_two
def test_submitted_tasks_make_a_context_busy():
    a = vlcs.VLC(cpus="0", elastic="0-1", name="ea")
    b = vlcs.VLC(cpus="1", elastic="0-1", name="eb")
    try:
        import os

        assert b.submit(lambda: sorted(os.sched_getaffinity(0))).result() == [0, 1]
        assert b.cpus == [1] and a.lent_cpus == []
        info = {c["name"]: c for c in vlcs.info()["contexts"]}
        assert info["eb"]["elastic"] == [0, 1] and info["eb"]["home_cpus"] == [1]
        b.set_elastic(None)
        assert b.elastic is None
        assert b.submit(lambda: sorted(os.sched_getaffinity(0))).result() == [1]
    finally:
        a.close()
        b.close()
    assert sorted(os.sched_getaffinity(0)) == [0, 1]


def test_bad_elastic_input_is_refused_and_leaves_nothing():
    before = len(vlcs.info()["contexts"])
    with pytest.raises(vlcs.InvalidArgumentError, match="home CPUs 1 are not all in the bound 0"):
        vlcs.VLC(cpus="1", elastic="0")
    with pytest.raises(vlcs.InvalidArgumentError, match="not available to this process"):
        vlcs.VLC(cpus="0", elastic="0-1000")
    with pytest.raises(ValueError, match="weight"):
        vlcs.VLC(cpus="0", elastic="0", weight=-1)
    ctx = vlcs.VLC(cpus="0", elastic="0", name="bounded")
    try:
        with pytest.raises(vlcs.InvalidArgumentError, match="outside its elastic bound 0"):
            ctx.set_allowed_cpus("1")
        assert ctx.home_cpus == [0] and ctx.elastic == [0]
    finally:
        ctx.close()
    assert len(vlcs.info()["contexts"]) == before


def _mkl_libs() -> list[str] | None:
    """oneMKL's layered libraries of the `mkl` wheel (interface, GNU OpenMP
    threading, core), whatever their soname version; None when missing."""
    import sys
    from pathlib import Path

    lib = Path(sys.prefix) / "lib"
    found = []
    for stem in ("libmkl_intel_lp64", "libmkl_gnu_thread", "libmkl_core"):
        names = sorted(lib.glob(f"{stem}.so.*"))
        if not names:
            return None
        found.append(str(names[-1]))
    return found


@needs_two
@pytest.mark.skipif(_mkl_libs() is None, reason="oneMKL (pip install mkl) is not installed")
@pytest.mark.parametrize("mode", ["auto", "copies"])
def test_mkl_follows_the_lent_cpus(tmp_path, mode):
    # A library linked against oneMKL's layered libraries with GNU OpenMP
    # threading, as MKL builds of numpy and applications are; loaded into an
    # elastic context, MKL's own thread count follows its CPUs.  In copy
    # mode too: libmkl_core opens its kernels (libmkl_def.so.3) from the
    # folder dladdr names for it, and they need libmkl_core.so.3 by a name
    # no search path finds (ld.so takes the loaded object's soname).
    import os
    import subprocess

    libs = _mkl_libs()
    assert libs is not None
    lib = os.path.dirname(libs[0])
    probe = tmp_path / "libmklprobe.so"
    src = tmp_path / "probe.c"
    src.write_text("void mkl_probe_anchor(void) {}\n")
    subprocess.run(
        [
            "cc",
            "-shared",
            "-fPIC",
            str(src),
            "-o",
            str(probe),
            f"-Wl,-rpath,{lib}",
            "-Wl,--no-as-needed",
            *libs,
            "-lgomp",
        ],
        check=True,
    )
    r = run_code(
        HELPERS
        + f"""
import ctypes, json
import numpy as np, vlcs
a = vlcs.VLC(cpus="0", elastic="0-1", name="a")
b = vlcs.VLC(cpus="1", elastic="0-1", name="b")
mkl = b.load({str(probe)!r})
# the operands are made in the base, before any context is entered: base
# numpy's lazily imported numpy.random, first touched inside a context,
# would be imported by the context
x = np.random.default_rng(0).random((300, 300))
want = x @ x
def gemm(n=300):
    c = np.zeros((n, n))
    r = ctypes.byref
    i, one, zero = ctypes.c_int(n), ctypes.c_double(1), ctypes.c_double(0)
    p = lambda m: m.ctypes.data_as(ctypes.POINTER(ctypes.c_double))
    mkl.dgemm_(b"N", b"N", r(i), r(i), r(i), r(one), p(x), r(i), p(x), r(i), r(zero), p(c), r(i))
    # column-major x is x.T, and c read back row-major is the transpose: x @ x
    return bool(np.allclose(c, want, atol=1e-9))
out = {{"idle": mkl.MKL_Get_Max_Threads()}}
with b:
    out["grown"] = [mkl.MKL_Get_Max_Threads(), sorted(os.sched_getaffinity(0)), gemm()]
    owner = Owner(a)
    owner.start()
    owner.inside.wait()
    out["shrunk"] = [mkl.MKL_Get_Max_Threads(), sorted(os.sched_getaffinity(0)), gemm(),
                     threads_on([1]) == b.thread_count + 1]
    owner.release.set()
    owner.join()
    out["regrown"] = mkl.MKL_Get_Max_Threads()
out["pools"] = {{p["api"]: p["elastic"] for p in b.threadpools()}}
out["base"] = [sorted(os.sched_getaffinity(0)), os.environ.get("OMP_DYNAMIC")]
out["mode"] = b.mode
print(json.dumps(out))
""",
        VLCS_MODE=mode,
    )
    assert r["mode"] == ("copies" if mode == "copies" else "namespace")
    assert r["idle"] == 1, "loaded while idle: MKL sized to the home"
    assert r["grown"] == [2, [0, 1], True], "b borrows a's CPU: MKL at 2 threads, right product"
    assert r["shrunk"] == [1, [1], True, True], "a entered: MKL back to 1, every thread on CPU 1"
    assert r["regrown"] == 2
    assert "MKL_Set_Num_Threads" in r["pools"].get("mkl", ""), r["pools"]
    assert r["base"] == [[0, 1], None], "the base thread and environment are untouched"

"""Contexts that come and go from Python: ``VLC.close()`` gives the
namespace back, a context whose native code may still be referenced keeps
it and says so, and ``vlcs.ContextPool`` reuses contexts that import numpy.

The loops run in fresh interpreters (a kept namespace stays for the life of
the process); VLCS_SOAK_ROUNDS makes them long (``./run soak``)."""

from __future__ import annotations

import os
import threading

import pytest
import vlcs
from test_imports import needs, needs_two, run_code

SOAK = int(os.environ.get("VLCS_SOAK_ROUNDS", "0"))

# Resident memory in KiB, for the loops' flatness checks.
RSS = 'rss = lambda: int(open("/proc/self/statm").read().split()[1]) * 4'


@needs_two
def test_closed_contexts_give_their_namespaces_back():
    rounds = max(SOAK, 300)
    r = run_code(
        f"""
        import contextlib, ctypes, gc, json, os, sys, threading, warnings
        import vlcs
        {RSS}
        warnings.simplefilter("error")  # a kept namespace would warn
        threads = threading.active_count()
        marks = {{}}
        for i in range({rounds}):
            made = vlcs.VLC(cpus=str(i % 2), env={{"OMP_NUM_THREADS": "1"}})
            with contextlib.closing(made) as ctx:
                m = ctx.load("libm.so.6")
                m.cos.restype, m.cos.argtypes = ctypes.c_double, [ctypes.c_double]
                assert m.cos(0.0) == 1.0
                del m
                if i % 10 == 0:  # pure Python: executed afresh, dropped on close
                    with ctx:
                        from packaging.version import Version
                        assert Version("1.2") < Version("1.10")
                        assert os.sched_getaffinity(0) == {{i % 2}}
            if i + 1 in ({rounds} // 2, {rounds}):
                gc.collect()  # closed modules are reference cycles
                marks[i + 1] = rss()
        import packaging.version
        (half, end), (a, b) = sorted(marks), [marks[k] for k in sorted(marks)]
        print(json.dumps({{
            "closed": ctx.closed,
            "rss_kib_per_round": (b - a) / (end - half),
            "threads_flat": threading.active_count() == threads,
            "contexts_left": vlcs.info()["contexts"],
            "base_module": sys.modules["packaging.version"] is packaging.version,
            "base_affinity": sorted(os.sched_getaffinity(0)) == [0, 1],
        }}))
        """
    )
    assert r["closed"]
    # A namespace left behind holds a libc copy: hundreds of KiB per round.
    assert r["rss_kib_per_round"] <= 2, r
    assert r["threads_flat"]
    assert r["contexts_left"] == []
    assert r["base_module"] and r["base_affinity"]


@needs("numpy")
def test_a_context_that_imported_numpy_keeps_its_namespace_and_says_so():
    r = run_code(
        """
        import ctypes, json, sys, warnings
        import numpy as base_np
        import vlcs
        ctx = vlcs.VLC(cpus="0", name="np")
        with ctx:
            import numpy as np
        arr = np.arange(10.0)
        m = ctx.load("libm.so.6")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ctx.close()
            ctx.close()  # again: nothing
        errors = {}
        uses = [("with", lambda: ctx.__enter__()), ("load", lambda: ctx.load("libm.so.6")),
                ("cpus", lambda: ctx.cpus)]
        for what, call in uses:
            try:
                call()
            except vlcs.ContextDestroyedError as e:
                errors[what] = str(e)
        after = vlcs.VLC(cpus="1")
        m2 = after.load("libm.so.6")
        m2.cos.restype, m2.cos.argtypes = ctypes.c_double, [ctypes.c_double]
        print(json.dumps({
            "warnings": [(w.category.__name__, str(w.message)) for w in caught],
            "array_still_works": float(arr.sum()) == 45.0,  # its code is still mapped
            "errors": errors,
            "repr": repr(ctx),
            "modules_kept": "numpy" in ctx.modules,  # its lazy imports still find them
            "base_numpy": sys.modules["numpy"] is base_np and float(base_np.ones(3).sum()) == 3.0,
            "base_distinct": base_np is not np,
            "another_context_works": m2.cos(0.0) == 1.0,
        }))
        """,
        VLCS_MODE="auto",  # a namespace (also when the suite runs in copy mode)
    )
    assert len(r["warnings"]) == 1, r["warnings"]
    category, message = r["warnings"][0]
    assert category == "NamespaceKeptWarning"
    assert "Context 'np' is destroyed, but its namespace stays loaded" in message
    assert "numpy" in message and "ContextPool" in message
    # the ctypes handle from load() is alive too: named
    assert "libm.so.6" in message
    assert r["array_still_works"]
    assert set(r["errors"]) == {"with", "load", "cpus"}
    assert all("context 'np' is closed" in e for e in r["errors"].values())
    assert r["repr"] == "<vlcs.VLC 'np' closed>"
    assert r["modules_kept"]
    assert r["base_numpy"] and r["base_distinct"] and r["another_context_works"]


def test_close_refuses_while_a_thread_is_inside():
    ctx = vlcs.VLC(cpus="0", name="busy")
    inside, done = threading.Event(), threading.Event()

    def stay() -> None:
        with ctx:
            inside.set()
            done.wait(timeout=60)

    t = threading.Thread(target=stay)
    t.start()
    try:
        assert inside.wait(timeout=60)
        with pytest.raises(vlcs.ContextBusyError, match="1 thread"):
            ctx.close()
        assert not ctx.closed
        assert ctx.load("libm.so.6").cos  # still usable, nothing lost
    finally:
        done.set()
        t.join()
    ctx.close()
    assert ctx.closed


def test_close_waits_for_submitted_tasks_and_executors_stop_working():
    ctx = vlcs.VLC(cpus="0")
    futures = [ctx.submit(os.sched_getaffinity, 0) for _ in range(20)]
    ex = ctx.executor(max_workers=1)
    assert ex.submit(vlcs.current).result() is ctx
    ctx.close()
    assert all(f.done() and f.result() == {0} for f in futures)
    with pytest.raises(vlcs.ContextDestroyedError):
        ex.submit(os.getpid).result()
    ex.shutdown()
    assert vlcs.current() is None


def test_the_namespace_limit_names_close_and_the_pool():
    r = run_code(
        """
        import json
        import vlcs
        made, message = [], None
        try:
            for i in range(40):
                c = vlcs.VLC()
                c.load("libm.so.6")
                made.append(c)
        except vlcs.VlcsLimitError as e:
            message = str(e)
        made.pop().close()  # one given back: loads work again
        again = vlcs.VLC()
        again.load("libm.so.6")
        print(json.dumps({"made": len(made), "message": message}))
        """,
        VLCS_MODE="namespace",  # else the contexts past the limit hold copies
    )
    assert r["message"] is not None and r["made"] >= 3
    assert "close() contexts no longer needed" in r["message"]
    assert "vlcs.ContextPool" in r["message"]


@needs_two
@needs("numpy")
def test_a_pool_serves_numpy_requests_from_two_contexts_with_flat_memory():
    requests = max(SOAK, 2000)
    r = run_code(
        f"""
        import json, os, threading
        import vlcs
        {RSS}
        resets = []
        pool = vlcs.ContextPool(cpus=["0", "1"], env={{"OPENBLAS_NUM_THREADS": "1"}},
                                reset=lambda ctx: resets.append(ctx.name))
        gate = threading.Barrier(2)

        def request(i):
            import numpy  # per request: the pooled context's own copy
            if i < 2:
                gate.wait(timeout=60)  # the first two at once: both contexts made
            ctx = vlcs.current()
            ctx.setenv("REQUEST", str(i))  # undone on release
            a = numpy.arange(100.0)
            return id(numpy), ctx.name, sorted(os.sched_getaffinity(0)), float(a @ a)

        marks, seen = {{}}, {{}}
        for start in range(0, {requests}, 100):
            for f in [pool.submit(request, i) for i in range(start, start + 100)]:
                np_id, name, cpus, dot = f.result()
                seen.setdefault(name, set()).add((np_id, tuple(cpus), dot))
            if start + 100 in ({requests} // 2, {requests}):
                marks[start + 100] = rss()
        with pool.context() as ctx:
            env_after = ctx.getenv("REQUEST"), ctx.getenv("OPENBLAS_NUM_THREADS")
            ctx.set_allowed_cpus("0-1")
        with pool.context() as again:
            cpus_after = again.cpus if again is ctx else None
        stats = pool.stats()
        pool.close()
        import numpy
        (half, end), (a, b) = sorted(marks), [marks[k] for k in sorted(marks)]
        print(json.dumps({{
            "seen": {{k: sorted(map(list, v)) for k, v in seen.items()}},
            "resets": len(resets),
            "env_after": env_after,
            "cpus_after": cpus_after,
            "stats": stats,
            "rss_kib_per_request": (b - a) / (end - half),
            "base_numpy": float(numpy.arange(3.0).sum()) == 3.0 and all(
                id(numpy) != t[0] for v in seen.values() for t in v),
            "closed": stats["uses"] == {requests} + 2,
        }}))
        """
    )
    seen = r["seen"]
    assert sorted(seen) == ["pool-0", "pool-1"]
    # one numpy copy per context, each on its own CPU, the same answer
    assert seen["pool-0"] == [[seen["pool-0"][0][0], [0], 328350.0]]
    assert seen["pool-1"] == [[seen["pool-1"][0][0], [1], 328350.0]]
    assert seen["pool-0"][0][0] != seen["pool-1"][0][0]
    assert r["resets"] == requests + 2  # and the two uses after the loop
    assert r["env_after"] == [None, "1"]
    assert r["cpus_after"] in ([0], [1])  # set back to its home
    assert r["stats"]["made"] == 2 and r["stats"]["in_use"] == 0
    assert r["rss_kib_per_request"] <= 1, r
    assert r["base_numpy"] and r["closed"]


def test_pool_hands_out_one_user_at_a_time():
    pool = vlcs.ContextPool(1, cpus="0")
    try:
        ctx = pool.acquire()
        with pytest.raises(TimeoutError):
            pool.acquire(timeout=0.01)
        other = vlcs.VLC()
        with pytest.raises(ValueError, match="not a context this pool handed out"):
            pool.release(other)
        other.close()
        with ctx, pytest.raises(vlcs.ContextBusyError, match="from inside it"):
            pool.release(ctx)
        pool.release(ctx)
        assert pool.acquire(timeout=5) is ctx  # reused, not remade
        pool.release(ctx)
    finally:
        pool.close()
    assert ctx.closed
    with pytest.raises(RuntimeError, match="closed"):
        pool.acquire()


def test_a_failing_reset_hook_replaces_the_context():
    calls = []

    def reset(ctx: vlcs.VLC) -> None:
        calls.append(ctx)
        if len(calls) == 1:
            raise RuntimeError("per-request state could not be cleared")

    with vlcs.ContextPool(1, reset=reset) as pool:
        with pytest.raises(RuntimeError, match="could not be cleared"):
            with pool.context():
                pass
        first = calls[0]
        assert first.closed
        with pool.context() as fresh:
            assert fresh is not first and not fresh.closed
    assert fresh.closed


def test_pool_arguments_are_checked():
    with pytest.raises(ValueError, match="size must be an int >= 1"):
        vlcs.ContextPool(0)
    with pytest.raises(ValueError, match="one per context"):
        vlcs.ContextPool(3, cpus=["0", "1"])
    assert vlcs.ContextPool(cpus=["0", "1"]).size == 2
    assert vlcs.ContextPool(2, cpus=[0, 1]).size == 2  # one CPU list for both


# The work of one request of the stack test, for a pooled context and for a
# plain interpreter: numpy, scipy, pandas and scikit-learn together.
_STACK_WORK = """
def work(i):
    import numpy as np, pandas as pd, scipy.linalg as sl
    from sklearn.linear_model import LinearRegression
    rng = np.random.default_rng(i)
    x = rng.random((50, 3))
    y = x @ np.array([1.0, 2.0, 3.0])
    return [round(float(sl.det(x.T @ x)), 9),
            [round(float(c), 9) for c in LinearRegression().fit(x, y).coef_],
            round(float(pd.DataFrame(x, columns=list("abc")).describe().loc["mean", "a"]), 9)]
"""


@needs_two
@needs("pandas")
@needs("sklearn", "pip install scikit-learn")
@needs("matplotlib")
def test_a_pool_serves_the_scientific_stack_and_the_base_is_untouched():
    plain = run_code(_STACK_WORK + "import json; print(json.dumps([work(i) for i in range(6)]))")
    r = run_code(
        _STACK_WORK
        + """
import json, sys, warnings
import vlcs
pool = vlcs.ContextPool(cpus=["0", "1"], env={"OPENBLAS_NUM_THREADS": "1"})
results = [f.result() for f in [pool.submit(work, i % 6) for i in range(120)]]
made = pool.stats()["made"]
pool.close()
ctx = vlcs.VLC(cpus="0", name="plots")
with ctx:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig = plt.figure()
    plt.plot([1, 2, 3])
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    ctx.close()
print(json.dumps({
    "per_request": results[:6],
    "all_equal": all(results[i] == results[i % 6] for i in range(120)),
    "made": made,
    "warned": [str(w.message) for w in caught],
    "base": [work(i) for i in range(6)],
    "base_modules": sorted(k for k in ("numpy", "pandas", "sklearn", "matplotlib")
                           if k in sys.modules),
}))
"""
    )
    assert r["per_request"] == plain and r["all_equal"]
    assert r["made"] == 2
    assert len(r["warned"]) == 1 and "matplotlib" in r["warned"][0]
    # the base's own imports, after the contexts: the same answers as without vlcs
    assert r["base"] == plain
    assert r["base_modules"] == ["numpy", "pandas", "sklearn"]

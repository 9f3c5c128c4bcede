"""Threads belong where they were started: a thread started inside a
context runs inside it (its imports, CPU view and environment), from
threading, executors, multiprocessing's helper threads (which pickle the
context's objects) and asyncio; one started from the base is the base's,
and vlcs.base_thread() opts out.  Each case runs in a fresh interpreter;
the base is checked after each."""

from __future__ import annotations

import os
import textwrap

import pytest
from test_imports import needs, needs_two, run_code

PKG = """
class Point:
    def __init__(self, x):
        self.x = x

def norm(p):
    return p.x * p.x

def who():
    import os, vlcs
    c = vlcs.current()
    return [c.name if c else None, os.cpu_count(), os.environ.get("WHERE")]
"""


@pytest.fixture
def pkg_path(tmp_path):
    (tmp_path / "threadpkg.py").write_text(textwrap.dedent(PKG))
    return str(tmp_path)


@needs_two
def test_threads_started_inside_a_context_run_inside_it(pkg_path):
    r = run_code(
        """
        import asyncio, concurrent.futures, json, os, sys, threading, vlcs
        a = vlcs.VLC(cpus="0", name="a", env={"WHERE": "in-a"})
        out = {}
        with a:
            import numpy
            a_numpy = numpy
            seen = {}
            def body():
                import numpy
                seen["thread"] = [vlcs.current() is a, os.cpu_count(), os.environ.get("WHERE"),
                                  numpy is a_numpy, sorted(os.sched_getaffinity(0))]
            t = threading.Thread(target=body)
            t.start(); t.join()
            out["thread"] = seen["thread"]
            with concurrent.futures.ThreadPoolExecutor(2) as ex:
                out["executor"] = ex.submit(lambda: [vlcs.current() is a, os.cpu_count()]).result()
            async def main():
                loop = asyncio.get_running_loop()
                return await loop.run_in_executor(None, lambda: vlcs.current() is a)
            out["asyncio"] = asyncio.run(main())
            b = vlcs.base_thread(threading.Thread(target=lambda: seen.__setitem__(
                "base", [vlcs.current() is None, os.environ.get("WHERE")])))
            b.start(); b.join()
            out["opt_out"] = seen["base"]
        # started from the base: the base's
        t = threading.Thread(target=lambda: seen.__setitem__("from_base", vlcs.current() is None))
        t.start(); t.join()
        out["from_base"] = seen["from_base"]
        import numpy
        out["base_numpy_is_own"] = numpy is not a_numpy
        out["base"] = [vlcs.current() is None, os.cpu_count(), os.environ.get("WHERE")]
        a.close()
        print(json.dumps(out))
        """,
        PYTHONPATH=pkg_path,
        WHERE="in-base",
    )
    assert r["thread"] == [True, 1, "in-a", True, [0]]
    assert r["executor"] == [True, 1]
    assert r["asyncio"] is True
    assert r["opt_out"] == [True, "in-base"]
    assert r["from_base"] is True
    assert r["base_numpy_is_own"] is True
    assert r["base"] == [True, os.cpu_count(), "in-base"]


@needs_two
@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_multiprocessing_pools_inside_a_context_pickle_its_objects(pkg_path, method):
    r = run_code(
        f"""
        import concurrent.futures, json, multiprocessing, os, vlcs
        a = vlcs.VLC(cpus="0", name="a", env={{"WHERE": "in-a"}})
        out = {{}}
        with a:
            import threadpkg
            points = [threadpkg.Point(i) for i in range(6)]
            mp = multiprocessing.get_context({method!r})
            with mp.Pool(2) as pool:
                out["pool"] = pool.map(threadpkg.norm, points)
            with concurrent.futures.ProcessPoolExecutor(2, mp_context=mp) as ex:
                out["executor"] = list(ex.map(threadpkg.norm, points))
        import threadpkg as base_pkg
        out["base_pkg_is_own"] = base_pkg is not threadpkg
        out["base"] = vlcs.current() is None
        a.close()
        print(json.dumps(out))
        """,
        PYTHONPATH=pkg_path,
        WHERE="in-base",
    )
    assert r["pool"] == [0, 1, 4, 9, 16, 25]
    assert r["executor"] == [0, 1, 4, 9, 16, 25]
    assert r["base_pkg_is_own"] is True and r["base"] is True


@needs_two
def test_a_context_closes_while_threads_started_in_it_run():
    # as a library's threads: closing keeps the namespace and says so; the
    # thread goes on, the base's from then on
    r = run_code(
        """
        import json, threading, warnings, vlcs
        a = vlcs.VLC(cpus="0", name="a")
        go, inside = threading.Event(), threading.Event()
        seen = {}
        def body():
            seen["before"] = vlcs.current() is a
            inside.set()
            go.wait()
            seen["after"] = vlcs.current()
        with a:
            t = threading.Thread(target=body, name="lingering")
            t.start()
        inside.wait()
        out = {"threads": a.thread_count}
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            a.close()
        out["closed"] = a.closed
        out["warning"] = [str(x.message) for x in w]
        go.set(); t.join()
        out["before"], out["after"] = seen["before"], seen["after"] is None
        print(json.dumps(out))
        """
    )
    assert r["threads"] == 1  # it counts as the context's
    assert r["closed"] is True
    assert any("adopted" in m for m in r["warning"]), r["warning"]
    assert r["before"] is True and r["after"] is True


@needs("sklearn")
def test_scikit_learn_n_jobs_in_a_context_and_closing_it():
    # loky's manager threads, started inside the context, outlive the fit
    r = run_code(
        """
        import json, warnings, vlcs
        a = vlcs.VLC(name="a")
        with a:
            from sklearn.datasets import make_classification
            from sklearn.linear_model import LogisticRegression
            from sklearn.model_selection import GridSearchCV
            X, y = make_classification(n_samples=200, random_state=0)
            g = GridSearchCV(LogisticRegression(), {"C": [0.1, 1.0]}, cv=3, n_jobs=2).fit(X, y)
            score = float(g.best_score_)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", vlcs.NamespaceKeptWarning)
            a.close()
        print(json.dumps({"score": score, "closed": a.closed}))
        """
    )
    assert 0.5 < r["score"] <= 1.0 and r["closed"] is True

"""Contexts with a Python of their own (``VLC(python="own")``): each holds a
CPython runtime with its own GIL, sys.modules and numpy, given work by
pickle with arrays as views of the same memory; the base stays as it was.
Each case runs in a fresh interpreter."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest
from test_imports import needs_two, run_code

HERE = str(Path(__file__).resolve().parent)


def run(code: str) -> dict:
    head = f"import sys; sys.path.insert(0, {HERE!r})\n"
    return run_code(head + textwrap.dedent(code), timeout=300)


@needs_two
def test_two_runtimes_each_with_its_numpy_and_cpus_and_the_base_untouched():
    r = run(
        """
        import json, os, sys, vlcs, own_tasks
        a = vlcs.VLC(name="a", cpus="0", python="own", env={"OWN_MARK": "a"})
        b = vlcs.VLC(name="b", cpus="1", python="own")
        wa, wb = a.submit(own_tasks.who).result(), b.submit(own_tasks.who).result()
        na = a.submit(own_tasks.numpy_work, 50).result()
        nb = b.submit(own_tasks.numpy_work, 50).result()
        after = a.submit(own_tasks.who).result()
        import numpy as np
        n = 50
        m = np.arange(n * n, dtype=float).reshape(n, n)
        print(json.dumps({"a": wa, "b": wb, "na": na, "nb": nb, "after": after,
                          "base_modules": id(sys.modules), "base_numpy": id(np),
                          "trace": float(np.trace(m @ m)), "exe": sys.executable,
                          "base_env": os.environ.get("OWN_MARK"),
                          "base_cpus": sorted(os.sched_getaffinity(0))}))
        """
    )
    a, b = r["a"], r["b"]
    # three runtimes: the base's and one per context
    assert len({a["sys_modules"], b["sys_modules"], r["base_modules"]}) == 3, r
    assert a["cpus"] == [0] and b["cpus"] == [1], r
    assert a["executable"] == r["exe"] and a["path_has_tests"], r  # the caller's sys.path
    assert a["env"] == "a" and b["env"] is None and r["base_env"] is None, r
    assert a["pythonhome"] is None, r  # its start-up variables put back
    assert a["functools_whole"] and b["functools_whole"], r
    assert not a["numpy_loaded"] and r["after"]["numpy_loaded"], r
    # each its own numpy (module and types), each computing what the base does
    assert len({r["na"]["numpy"], r["nb"]["numpy"], r["base_numpy"]}) == 3, r
    assert r["na"]["ndarray"] != r["nb"]["ndarray"], r
    assert r["na"]["trace"] == r["nb"]["trace"] == r["trace"], r
    assert r["base_cpus"] == [0, 1], r


def test_arrays_cross_as_views_of_the_same_memory_both_runtimes_at_once():
    r = run(
        """
        import json, numpy as np, vlcs, own_tasks
        a = vlcs.VLC(name="a", python="own")
        b = vlcs.VLC(name="b", python="own")
        x = np.arange(1 << 20, dtype=np.float64)
        where = a.submit(own_tasks.double_in_place, x).result()
        # a token passed 2000 times between two pure-Python loops, one in
        # each runtime, through one array they both see
        token = np.zeros(1, dtype=np.int64)
        fa = a.submit(own_tasks.ping_pong, token, 0, 2000)
        fb = b.submit(own_tasks.ping_pong, token, 1, 2000)
        print(json.dumps({"same": where == x.__array_interface__["data"][0],
                          "doubled": bool((x == 2 * np.arange(1 << 20)).all()),
                          "rounds": [fa.result(), fb.result()], "token": int(token[0])}))
        """
    )
    assert r == {"same": True, "doubled": True, "rounds": [2000, 2000], "token": 0}, r


def test_exceptions_lambdas_and_two_runtimes_started_on_one_thread():
    r = run(
        """
        import json, vlcs, own_tasks
        a = vlcs.VLC(name="a", python="own")
        b = vlcs.VLC(name="b", python="own")
        # both runtimes started and called on this one thread, one after
        # the other (each libc copy's thread keys would clash without the
        # interposer's one table of keys)
        one = a._own.call(own_tasks.who, (), {})["sys_modules"]
        two = b._own.call(own_tasks.who, (), {})["sys_modules"]
        again = a._own.call(own_tasks.who, (), {})["sys_modules"]
        try:
            a.submit(own_tasks.fail, "from the worker").result()
        except KeyError as e:
            err = {"args": list(e.args), "cause": type(e.__cause__).__name__,
                   "tb": str(e.__cause__)}
        lam = a.submit(lambda v, w=3: v * w, 7).result()
        refused = {}
        for what, act in [("with", lambda: a.__enter__()),
                          ("python", lambda: vlcs.VLC(python="bogus"))]:
            try:
                act()
            except ValueError as e:
                refused[what] = str(e)
        print(json.dumps({"distinct": one != two, "stable": one == again, "err": err,
                          "lambda": lam, "refused": refused}))
        """
    )
    assert r["distinct"] and r["stable"], r
    assert r["err"]["args"] == ["from the worker"] and r["err"]["cause"] == "RemoteTraceback", r
    assert "raise KeyError(message)" in r["err"]["tb"], r  # the worker's own traceback
    assert r["lambda"] == 21, r
    assert "runs a Python of its own" in r["refused"]["with"], r
    assert "ctx.submit" in r["refused"]["with"], r
    assert "python must be one of shared, own" in r["refused"]["python"], r


@needs_two
def test_a_pool_of_workers_each_with_its_own_python():
    r = run(
        """
        import json, sys, vlcs, own_tasks
        with vlcs.ContextPoolExecutor(
            max_workers=2, python="own", initializer=own_tasks.set_mark, initargs=("ready",)
        ) as pool:
            seen = list(pool.map(own_tasks.mark_and_runtime, range(8)))
            homes = pool.worker_cpus
            try:
                pool.submit(own_tasks.fail, "in a pool").result()
            except KeyError as e:
                err = [list(e.args), type(e.__cause__).__name__]
        print(json.dumps({"seen": seen, "homes": homes, "err": err,
                          "base": id(sys.modules), "base_mark": own_tasks.MARK}))
        """
    )
    marks = {m for m, _, _ in r["seen"]}
    runtimes = {rt for _, rt, _ in r["seen"]}
    assert marks == {"ready"} and r["base_mark"] is None, r  # initializer ran in each worker
    assert r["base"] not in runtimes and 1 <= len(runtimes) <= 2, r
    assert r["homes"] == [[0], [1]] and all(c in ([0], [1]) for _, _, c in r["seen"]), r
    assert r["err"] == [["in a pool"], "RemoteTraceback"], r


def test_a_workers_c_api_is_its_own_and_global_loads_keep_the_process():
    r = run(
        """
        import ctypes, json, zlib, vlcs, own_tasks
        a = vlcs.VLC(name="a", python="own")
        got = a.submit(own_tasks.c_api_and_global_load).result()
        host = ctypes.cast(ctypes.pythonapi.PyTuple_New, ctypes.c_void_p).value
        print(json.dumps({**got, "host": host, "host_zlib": zlib.ZLIB_RUNTIME_VERSION}))
        """
    )
    assert r["tuple_new"] != r["host"], r  # ctypes.pythonapi is the worker's runtime
    assert r["initialized"] == 1, r
    assert r["zlib"] == r["host_zlib"], r  # an RTLD_GLOBAL load, and the process went on


def test_arrays_cross_back_as_views_and_live_as_long_as_the_callers_views():
    r = run(
        """
        import gc, json, resource, numpy as np, vlcs, own_tasks
        a = vlcs.VLC(name="a", python="own")
        a.submit(own_tasks.held).result()  # the runtime started
        size = 1 << 30  # 1 GiB
        x = np.ones(size, dtype=np.uint8)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        y = a.submit(own_tasks.identity, x).result()  # there and back
        z, where = a.submit(own_tasks.make_ones, 64 << 20).result()  # made by the worker
        grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
        out = {"same_x": y.__array_interface__["data"][0] == x.__array_interface__["data"][0],
               "same_z": z.__array_interface__["data"][0] == where,
               "z_sum": int(z.sum()), "grew_mib": grew / 1024,
               "held_while_used": a.submit(own_tasks.held).result()}
        z[0] = 7  # the caller may write into the worker's memory
        out["written"] = int(z[0])
        del y, z
        gc.collect()
        a.submit(own_tasks.held).result()  # carries the drops; the worker reports back
        out["held_after"] = a.submit(own_tasks.held).result()
        out["lent_after"] = len(a._own._lent)
        print(json.dumps(out))
        """
    )
    assert r["same_x"] and r["same_z"], r  # no copy either way
    assert r["z_sum"] == 64 << 20 and r["written"] == 7, r
    # the worker's own 64 MiB and its numpy, no more: a copy of x would add
    # 1024 MiB, one of z 64 MiB
    assert r["grew_mib"] < 112, r
    assert r["held_while_used"] == 2 and r["held_after"] == 0, r
    assert r["lent_after"] == 0, r


@pytest.mark.skipif(
    importlib.util.find_spec("sklearn") is None,
    reason="scikit-learn is not installed (./run installs it in the main .venv)",
)
def test_grid_search_under_the_joblib_backend_with_own_pythons_finds_lokys_answer():
    r = run(
        """
        import json, joblib, vlcs
        from sklearn.datasets import load_digits
        from sklearn.model_selection import GridSearchCV
        from sklearn.svm import SVC
        X, y = load_digits(return_X_y=True)
        grid = {"C": [1, 10], "gamma": [1e-3, 1e-4]}
        out = {}
        for name, cfg in [("loky", {"backend": "loky"}),
                          ("own", {"backend": "vlcs", "python": "own"})]:
            with joblib.parallel_config(n_jobs=2, **cfg):
                g = GridSearchCV(SVC(), grid, n_jobs=2).fit(X, y)
            out[name] = [g.best_params_, float(g.best_score_)]
        print(json.dumps(out))
        """
    )
    assert r["own"] == r["loky"], r


@pytest.mark.skipif(
    importlib.util.find_spec("distributed") is None,
    reason="distributed is not installed (./run installs it in the main .venv)",
)
def test_dask_workers_with_contexts_of_their_own_python():
    r = run(
        """
        import json, sys, dask, own_tasks
        from distributed import Client, LocalCluster
        from vlcs.dask import ContextWorkers
        with LocalCluster(n_workers=1, threads_per_worker=2, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            client.register_plugin(ContextWorkers(python="own"))
            with dask.annotate(executor="vlcs"):
                seen = client.gather(client.map(own_tasks.mark_and_runtime, range(6), pure=False))
            plain = client.submit(own_tasks.mark_and_runtime, 0, pure=False).result()
        print(json.dumps({"seen": seen, "plain": plain}))
        """
    )
    runtimes = {rt for _, rt, _ in r["seen"]}
    assert r["plain"][1] not in runtimes and 1 <= len(runtimes) <= 2, r
    assert {tuple(c) for _, _, c in r["seen"]} <= {(0,), (1,)}, r


def test_a_workers_atexit_handlers_run_and_a_forked_child_is_told(tmp_path):
    out = tmp_path / "atexit.txt"
    r = run(
        f"""
        import json, os, vlcs, own_tasks
        a = vlcs.VLC(name="a", python="own")
        a.submit(own_tasks.at_exit_writes, {str(out)!r}).result()
        pid = os.fork()
        if pid == 0:
            try:
                a.submit(own_tasks.who).result()
                os._exit(3)
            except vlcs.VlcsError as e:
                os._exit(0 if "forked" in str(e) and "new context" in str(e) else 4)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({{"child": os.waitstatus_to_exitcode(status),
                          "parent": a.submit(own_tasks.held).result()}}))
        """
    )
    assert r == {"child": 0, "parent": 0}, r
    assert out.read_text() == "the worker's handler ran"  # at the process's exit


def test_closing_keeps_the_runtime_for_the_objects_it_made():
    r = run(
        """
        import json, warnings, vlcs, own_tasks
        warnings.simplefilter("error")  # closing an own-Python context warns of nothing
        a = vlcs.VLC(name="a", python="own")
        z, _ = a.submit(own_tasks.make_ones, 1 << 20).result()
        a.close()
        with vlcs.ContextPoolExecutor(max_workers=1, python="own") as pool:
            n = pool.submit(own_tasks.numpy_work, 10).result()["trace"]
        print(json.dumps({"sum": int(z.sum()), "closed": a.closed, "n": n}))
        """
    )
    # the worker's array outlives its context; the process exits cleanly
    assert r["sum"] == 1 << 20 and r["closed"] and r["n"] > 0, r


def test_max_tasks_per_child_renews_the_runtime_and_unloads_the_old_one(tmp_path):
    r = run(
        f"""
        import json, os, numpy as np, vlcs, own_tasks
        def maps():
            with open("/proc/self/maps") as f:
                return sum(1 for _ in f)
        def rss_kib():
            with open("/proc/self/status") as f:
                return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
        out = {{"counts": [], "traces": [], "maps": [], "rss": []}}
        at_exit = {str(tmp_path / "at-exit")!r}
        # one OpenBLAS thread: numpy 2.5's OpenBLAS no longer exports the
        # function that stops its pool, whose threads would keep it loaded
        with vlcs.ContextPoolExecutor(max_workers=1, python="own", max_tasks_per_child=2,
                                      env={{"OPENBLAS_NUM_THREADS": "1"}}) as pool:
            pool.submit(own_tasks.at_exit_writes, at_exit).result()
            pool.submit(own_tasks.identity, 1).result()  # renewed after this
            # a result whose memory is the second runtime's: that one lives on
            kept, _ = pool.submit(own_tasks.make_ones, 1000).result()
            out["handler_ran_at_renewal"] = os.path.exists(at_exit)  # before this task
            pool.submit(own_tasks.identity, 2).result()
            for _ in range(10):
                for count, trace in [pool.submit(own_tasks.count_and_numpy, 30).result()
                                     for _ in range(2)]:
                    out["counts"].append(count)
                    out["traces"].append(trace)
                out["maps"].append(maps())
                out["rss"].append(rss_kib())
            out["kept_sum"] = float(kept.sum())
        a = np.arange(900, dtype=float).reshape(30, 30)
        out["base_trace"] = float(np.trace(a @ a))
        print(json.dumps(out))
        """
    )
    assert r["counts"] == [1, 2] * 10, r  # each runtime ran two tasks, then a fresh one
    assert set(r["traces"]) == {r["base_trace"]}, r
    assert r["handler_ran_at_renewal"], r  # finalised: its atexit handlers ran
    # every renewed runtime, numpy and OpenBLAS included, was unloaded: a
    # kept one adds over 100 mappings each time
    maps = r["maps"]
    assert maps[-1] - maps[2] <= 7 * 10, maps
    # and its object arenas with it (vlcs_arenas_release): 2 MB a renewal
    # stay here (malloc's heap), 8.5 MB when the arenas stayed
    rss = r["rss"]
    assert (rss[-1] - rss[2]) / 7 <= 4 * 1024, rss
    assert r["kept_sum"] == 1000.0, r  # the second runtime's memory, still there


def test_pool_semantics_systemexit_and_cancel_futures():
    r = run(
        """
        import json, numpy as np, vlcs, own_tasks
        out = {}
        with vlcs.ContextPoolExecutor(max_workers=1, python="own") as pool:
            try:
                pool.submit(own_tasks.exit_with, 3).result()
            except SystemExit as e:  # the task's, as a process pool gives it back
                out["system_exit"] = e.code
            out["after_exit"] = pool.submit(own_tasks.identity, 5).result()
            token = np.zeros(2, dtype=np.int64)
            first = pool.submit(own_tasks.wait_for, token)
            rest = [pool.submit(own_tasks.identity, i) for i in range(5)]
            while token[1] == 0:  # first is running: only the rest can be cancelled
                pass
            pool.shutdown(wait=False, cancel_futures=True)
            token[0] = 1
            out["first"] = first.result()
            out["cancelled"] = sum(f.cancelled() for f in rest)
        print(json.dumps(out))
        """
    )
    assert r["system_exit"] == 3 and r["after_exit"] == 5, r  # the worker goes on
    assert r["first"] == "released" and r["cancelled"] == 5, r


@needs_two
def test_a_context_pool_of_own_pythons_reuses_each_runtime():
    # ContextPool(python="own"): each pooled context a runtime of its own,
    # made once; pool.submit pickles the task there, and the next request on
    # that context finds the module state its last request left (reuse)
    r = run(
        """
        import json, sys, vlcs, own_tasks
        pool = vlcs.ContextPool(cpus=["0", "1"], python="own", name="req")
        pool.submit(own_tasks.set_mark, "kept").result()
        marks = [pool.submit(own_tasks.mark_and_runtime, i).result() for i in range(4)]
        with pool.context() as ctx:
            refused = ""
            try:
                with ctx:
                    pass
            except Exception as e:
                refused = str(e)
            direct = ctx.submit(own_tasks.identity, 5).result()
        stats = pool.stats()
        pool.close()
        print(json.dumps({
            "runtimes": sorted({m[1] for m in marks}),
            "base_modules": id(sys.modules),
            "marks": sorted({m[0] for m in marks}),
            "refused": refused,
            "direct": direct,
            "stats": stats,
            "closed": all(c is None for c in pool._slots),
        }))
        """
    )
    # one pooled context served every request (the one used last is taken
    # first): one runtime, not the base's, with the mark set there
    assert len(r["runtimes"]) == 1 and r["base_modules"] not in r["runtimes"], r
    assert r["marks"] == ["kept"], r
    assert "submit" in r["refused"], r
    assert r["direct"] == 5
    assert r["stats"]["python"] == "own" and r["stats"]["made"] == 1, r
    assert r["closed"]


def test_ctrl_c_storms_reach_the_caller_never_a_worker():
    # Only the base handles signals: Ctrl-C interrupts the caller waiting for
    # a result; a storm of them while a worker's task runs leaves that task
    # (and its runtime) running, and the pool goes on
    r = run(
        """
        import json, os, signal, threading, numpy as np, vlcs, own_tasks
        def storm(n):
            for _ in range(n):
                os.kill(os.getpid(), signal.SIGINT)
        out = {}
        with vlcs.ContextPoolExecutor(max_workers=2, python="own") as pool:
            token = np.zeros(2, dtype=np.int64)
            busy = pool.submit(own_tasks.wait_for, token)
            while token[1] == 0:  # the task runs in its worker's runtime
                pass
            t = threading.Thread(target=storm, args=(1,))
            try:
                t.start()
                busy.result()
            except KeyboardInterrupt:
                out["interrupted"] = True
            t.join()
            out["running_after_ctrl_c"] = busy.running()
            seen = []
            signal.signal(signal.SIGINT, lambda s, f: seen.append(s))
            t = threading.Thread(target=storm, args=(300,))
            t.start()
            during = pool.submit(own_tasks.identity, 7).result()  # the other worker
            t.join()
            signal.signal(signal.SIGINT, signal.default_int_handler)
            out["storm_handled_by_base"] = len(seen) > 0
            out["during"] = during
            out["running_after_storm"] = busy.running()
            token[0] = 1
            out["busy"] = busy.result()
            out["after"] = pool.submit(own_tasks.identity, 9).result()
        print(json.dumps(out))
        """
    )
    assert r == {
        "interrupted": True,
        "running_after_ctrl_c": True,
        "storm_handled_by_base": True,
        "during": 7,
        "running_after_storm": True,
        "busy": "released",
        "after": 9,
    }, r


def test_sixty_four_workers_with_a_python_of_their_own_past_the_namespaces():
    # Past glibc's namespaces (fewer without vlcs run: each namespace's libc
    # takes static TLS), a worker's runtime is a renamed copy of libpython
    # sharing the process's libc, with its own numpy and its own environment
    r = run(
        """
        import json, sys, numpy as np, vlcs, own_tasks
        n = 64
        envs = [{"OWN_MARK": f"w{i}"} for i in range(n)]
        with vlcs.ContextPoolExecutor(n, python="own", env=envs) as pool:
            # one task per worker's context, each on its own runtime
            who = [c.submit(own_tasks.who) for c in pool.contexts]
            work = [c.submit(own_tasks.numpy_work, 10) for c in pool.contexts]
            who, work = [f.result() for f in who], [f.result() for f in work]
            modes = sorted(c.mode for c in pool.contexts)
            # a task importing vlcs in a worker past the namespaces
            last = pool.contexts[-1]
            in_worker = last.submit(own_tasks.vlcs_in_worker).result(), last.mode
        print(json.dumps({
            "runtimes": len({w["sys_modules"] for w in who} | {id(sys.modules)}),
            "marks": sorted({w["env"] for w in who}),
            "numpys": len({w["numpy"] for w in work} | {id(np)}),
            "traces": sorted({w["trace"] for w in work}),
            "copies": modes.count("copies"),
            "base": float(np.arange(4.0).sum()),
            "vlcs": [in_worker[0] == own_tasks.vlcs_in_worker(), in_worker[1]],
        }))
        """
    )
    assert r["runtimes"] == 65 and r["numpys"] == 65, r  # each its own, and the base's
    assert r["marks"] == sorted(f"w{i}" for i in range(64)), r  # each its own os.environ
    assert r["traces"] == [261525.0] and r["copies"] >= 49 and r["base"] == 6.0, r
    assert r["vlcs"] == [True, "copies"], r  # libvlcs opened there is the process's


@needs_two
def test_the_scientific_stack_in_two_runtimes_at_once_gives_the_plain_answers(tmp_path):
    # numpy, scipy, pandas, scikit-learn, h5py and torch (those this
    # interpreter has: ./run installs all of them for the main one) imported
    # and used in two own runtimes at once, then in the base: the same
    # answers, each from its own modules
    r = run(
        f"""
        import importlib.util, json, sys, vlcs, own_tasks
        have = [p for p in own_tasks.STACK if importlib.util.find_spec(p)]
        a = vlcs.VLC(name="a", cpus="0", python="own")
        b = vlcs.VLC(name="b", cpus="1", python="own")
        fa = a.submit(own_tasks.stack_work, have, {str(tmp_path)!r})
        fb = b.submit(own_tasks.stack_work, have, {str(tmp_path)!r})
        ra, rb = fa.result(), fb.result()
        base = own_tasks.stack_work(have, {str(tmp_path)!r})
        print(json.dumps({{"have": have, "a": ra, "b": rb, "base": base,
                          "main": sys.version_info[:2] == (3, 11)}}))
        """
    )
    have = r["have"]
    assert {"numpy", "scipy"} <= set(have), r
    if r["main"]:  # ./run installs the whole stack for the main interpreter
        assert have == ["numpy", "scipy", "pandas", "sklearn", "h5py", "torch"], r
    for p in have:  # three module objects: one per runtime
        assert len({r["a"]["ids"][p], r["b"]["ids"][p], r["base"]["ids"][p]}) == 3, (p, r)
    assert set(r["base"]["answers"]) == set(have), r
    for p, want in r["base"]["answers"].items():
        assert r["a"]["answers"][p] == pytest.approx(want, rel=1e-12), (p, r)
        assert r["b"]["answers"][p] == pytest.approx(want, rel=1e-12), (p, r)

"""The Executor contract of vlcs.ContextPoolExecutor, each case_* run by
test_executor.py in a fresh interpreter (python pool_api.py NAME): the
workers' contexts need linker namespaces and static TLS, which a long test
session's earlier contexts may have used up."""

from __future__ import annotations

import concurrent.futures
import os
import sys
import threading

import pytest
import vlcs

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "data"))

import pool_tasks  # noqa: E402


def contexts_alive() -> int:
    return len(vlcs.info()["contexts"])


def case_workers_split_the_cpus_and_run_in_their_contexts():
    with vlcs.ContextPoolExecutor(2, cpus="0-1", env={"POOL_TEST": "x"}) as pool:
        assert pool.worker_cpus == [[0], [1]]
        assert sorted(pool.map(abs, range(-4, 0))) == [1, 2, 3, 4]
        seen = [pool.submit(pool_tasks.where).result() for _ in range(6)]
    for w in seen:
        assert w["context"] in ("worker-0", "worker-1")
        assert w["cpus"] == [int(w["context"][-1])]  # worker-i on CPU i
        assert w["env"] == "x"
        assert w["module"] != id(pool_tasks)  # resolved by name in the context
    assert os.environ.get("POOL_TEST") is None
    assert pool_tasks.CALLS == 0
    assert vlcs.current() is None


def case_env_and_cpus_per_worker():
    env = [{"POOL_TEST": "a"}, {"POOL_TEST": "b"}]
    with vlcs.ContextPoolExecutor(cpus=["1", [0]], env=env) as pool:
        assert pool.worker_cpus == [[1], [0]]
        seen = {tuple(w["cpus"]): w["env"] for w in pool.map(pool_tasks.where, range(8))}
    assert set(seen.items()) <= {((1,), "a"), ((0,), "b")}


def case_initializer_runs_in_each_context():
    with vlcs.ContextPoolExecutor(2, initializer=pool_tasks.set_calls, initargs=(100,)) as pool:
        counts = [pool.submit(pool_tasks.count).result() for _ in range(4)]
    assert all(c > 100 for c in counts), counts
    assert pool_tasks.CALLS == 0  # the base's copy untouched


def worker_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("vlcs-")]


def case_a_failing_initializer_breaks_the_pool():
    pool = vlcs.ContextPoolExecutor(1, initializer=pool_tasks.fail_init)
    # The initializer runs once the workers start, at the first submit (as
    # ProcessPoolExecutor's processes): that submit returns a future, it
    # does not raise, however fast the initializer fails.
    assert worker_threads() == []
    f = pool.submit(abs, -1)
    with pytest.raises(concurrent.futures.process.BrokenProcessPool) as e:
        f.result(timeout=60)
    assert isinstance(e.value, vlcs.BrokenContextPool)
    assert "initializer raised" in str(e.value) and "initializer refused" in str(e.value)
    assert isinstance(e.value.__cause__, pool_tasks.TaskError)
    with pytest.raises(vlcs.BrokenContextPool):
        pool.submit(abs, -1)
    pool.shutdown()
    assert contexts_alive() == 0


def case_a_pool_never_used_closes_its_contexts():
    pool = vlcs.ContextPoolExecutor(2)
    assert contexts_alive() == 2 and worker_threads() == []
    pool.shutdown()
    pool.shutdown()  # twice is harmless
    assert contexts_alive() == 0 and worker_threads() == []
    with pytest.raises(RuntimeError, match="after shutdown"):
        pool.submit(abs, -1)
    with vlcs.ContextPoolExecutor(2) as pool:  # the namespaces were given back
        assert pool.submit(abs, -3).result() == 3


def case_max_tasks_per_child_gives_fresh_contexts():
    with vlcs.ContextPoolExecutor(1, max_tasks_per_child=2) as pool:
        counts = [pool.submit(pool_tasks.count).result() for _ in range(5)]
    assert counts == [1, 2, 1, 2, 1]  # a fresh copy of the module every two tasks
    assert contexts_alive() == 0


def case_shutdown_cancels_pending_futures_and_refuses_new_ones():
    started_r, started_w = os.pipe()
    go_r, go_w = os.pipe()
    try:
        pool = vlcs.ContextPoolExecutor(1)
        running = pool.submit(pool_tasks.handshake, started_w, go_r)
        pending = [pool.submit(abs, -i) for i in range(3)]
        assert os.read(started_r, 1) == b"s"  # the first task runs
        pool.shutdown(wait=False, cancel_futures=True)
        assert all(f.cancelled() for f in pending)
        with pytest.raises(RuntimeError, match="after shutdown"):
            pool.submit(abs, 1)
        os.write(go_w, b"g")
        assert running.result(timeout=60) == b"g"
        pool.shutdown(wait=True)
    finally:
        for fd in (started_r, started_w, go_r, go_w):
            os.close(fd)
    assert contexts_alive() == 0


def case_map_with_chunksize_and_timeout():
    go_r, go_w = os.pipe()
    started_r, started_w = os.pipe()
    try:
        with vlcs.ContextPoolExecutor(2) as pool:
            items = list(range(-10, 10))
            assert list(pool.map(abs, items, chunksize=3)) == [abs(i) for i in items]
            assert list(pool.map(pow, [2, 3], [3, 2], chunksize=5)) == [8, 9]
            with pytest.raises(ValueError, match="chunksize"):
                pool.map(abs, items, chunksize=0)
            it = pool.map(pool_tasks.handshake, [started_w], [go_r], timeout=0.5)
            assert os.read(started_r, 1) == b"s"
            with pytest.raises(concurrent.futures.TimeoutError):
                next(it)
            os.write(go_w, b"g")
    finally:
        for fd in (go_r, go_w, started_r, started_w):
            os.close(fd)


def case_elastic_workers_borrow_idle_ones_cpus():
    with vlcs.ContextPoolExecutor(2, cpus="0-1", elastic=True) as pool:
        alone = pool.submit(pool_tasks.where).result()
        homes = [c.home_cpus for c in pool.contexts]
    assert alone["cpus"] == [0, 1]  # the other worker was idle
    assert homes == [[0], [1]]


def case_bytes_and_memoryviews_cross_as_themselves():
    big = bytes(1 << 20)
    buf = bytearray(16)
    with vlcs.ContextPoolExecutor(1) as pool:
        ids = pool.submit(pool_tasks.buffer_ids, big, memoryview(buf)).result()
    assert ids == [id(big), id(buf), 1 << 20]
    assert buf[0] == 7


BAD = [
    ({"max_workers": 0}, ValueError, "greater than 0"),
    ({"cpus": "zero"}, ValueError, "CPU list"),
    ({"cpus": ["0"], "max_workers": 2}, ValueError, "one per worker"),
    ({"cpus": "4096"}, ValueError, "4096"),
    ({"env": [{}], "max_workers": 2}, ValueError, "one per worker"),
    ({"initializer": 3}, TypeError, "callable"),
    ({"max_tasks_per_child": 0}, ValueError, ">= 1"),
    ({"python": "mine"}, ValueError, "shared, own"),
]


def case_bad_arguments_are_refused_and_leave_nothing():
    for kwargs, error, words in BAD:
        with pytest.raises(error, match=words):
            vlcs.ContextPoolExecutor(**kwargs)
        assert contexts_alive() == 0
        with vlcs.ContextPoolExecutor(1) as pool:  # everything still works
            assert pool.submit(abs, -2).result() == 2


def case_the_reusable_executor_keeps_its_workers_and_their_imports():
    import numpy as np

    ex = vlcs.get_reusable_executor(1, initializer=pool_tasks.set_calls, initargs=(100,))
    with ex:
        first = [ex.submit(pool_tasks.count) for _ in range(2)]
        ex.submit(pool_tasks.array_facts, np.zeros(2))  # numpy, imported in the worker
        before = ex.submit(pool_tasks.where).result()
    assert all(f.done() for f in first)  # leaving the block waited for its tasks
    assert vlcs.get_reusable_executor(1, initializer=pool_tasks.set_calls, initargs=(100,)) is ex
    contexts = ex.contexts
    with ex:
        second = [ex.submit(pool_tasks.count).result() for _ in range(2)]
        after = ex.submit(pool_tasks.where).result()
    # the same context, its module state and its numpy kept; the initializer ran once
    assert [f.result() for f in first] + second == [101, 102, 103, 104]
    assert after["numpy"] is not None and after == before and ex.contexts == contexts
    assert pool_tasks.CALLS == 0  # the base's copy untouched
    # asked for otherwise: the old one finished and closed, a new one made
    other = vlcs.get_reusable_executor(2, cpus="0-1")
    assert other is not ex and contexts_alive() == 2
    with pytest.raises(RuntimeError, match="after shutdown"):
        ex.submit(abs, 1)
    assert sorted(other.map(abs, [-1, -2])) == [1, 2]
    other.shutdown()
    again = vlcs.get_reusable_executor(2, cpus="0-1")
    assert again is not other and again.submit(abs, -5).result() == 5
    again.shutdown()


if __name__ == "__main__":
    globals()["case_" + sys.argv[1]]()
    assert vlcs.current() is None and contexts_alive() == 0, "a context was left behind"
    print("ok")

"""The Python API of contexts: CPU sets, environments, with-blocks,
executors, and Python-level CPU queries that follow the context."""

from __future__ import annotations

import json
import multiprocessing
import os
import threading

import pytest
import vlcs

MACHINE = sorted(os.sched_getaffinity(0))
needs_two = pytest.mark.skipif(len(MACHINE) < 2, reason="needs 2 CPUs")


def test_cpus_env_and_the_papers_api():
    a = vlcs.VLC(cpus="0", env={"VLCS_PY_TEST": "a"}, name="py-a")
    assert a.cpus == [0] and a.name == "py-a"
    assert a.getenv("VLCS_PY_TEST") == "a"
    assert "VLCS_PY_TEST" not in os.environ  # the base is untouched
    b = vlcs.Context()  # the alias
    b.set_allowed_cpus([MACHINE[-1]])
    b.setenv("OMP_NUM_THREADS", "1")
    b.unsetenv("HOME")
    assert b.cpus == [MACHINE[-1]]
    assert b.getenv("OMP_NUM_THREADS") == "1" and b.getenv("HOME") is None
    assert os.environ.get("HOME") is not None


@pytest.mark.parametrize("bad", ["3-1", "a", "", "1-", [-1], []])
def test_bad_cpu_lists_raise_valueerror_with_the_value(bad):
    with pytest.raises(ValueError) as e:
        vlcs.VLC(cpus=bad)
    shown = bad if isinstance(bad, str) else repr(bad)
    assert shown in str(e.value) or "empty" in str(e.value)


def test_cpus_the_process_may_not_use():
    with pytest.raises(ValueError, match="is not available to this process"):
        vlcs.VLC(cpus=[max(MACHINE) + 7])


@pytest.mark.parametrize("bad", ["", "A=B"])
def test_bad_env_names_raise_valueerror(bad):
    with pytest.raises(ValueError, match=repr(bad)):
        vlcs.VLC(env={bad: "1"})


@needs_two
def test_python_queries_follow_the_context_in_a_with_block():
    a = vlcs.VLC(cpus=[1])
    before = (os.cpu_count(), os.sched_getaffinity(0), multiprocessing.cpu_count())
    assert vlcs.current() is None
    with a:
        assert vlcs.current() is a
        assert os.cpu_count() == 1
        assert os.sched_getaffinity(0) == {1}
        assert multiprocessing.cpu_count() == 1
        if hasattr(os, "process_cpu_count"):
            assert os.process_cpu_count() == 1
    assert (os.cpu_count(), os.sched_getaffinity(0), multiprocessing.cpu_count()) == before
    assert vlcs.current() is None


@needs_two
def test_the_standard_ways_of_entering_a_context_manager():
    # contextlib's stacks, and anything else that calls type(cm).__enter__(cm)
    import asyncio
    import contextlib

    a = vlcs.VLC(cpus=[MACHINE[0]], name="stacked")
    b = vlcs.VLC(cpus=[MACHINE[1]], name="stacked-b")
    with contextlib.ExitStack() as stack:
        assert stack.enter_context(a) is a
        assert vlcs.current() is a and os.cpu_count() == 1
        assert stack.enter_context(b) is b and vlcs.current() is b
    assert vlcs.current() is None and os.cpu_count() == len(MACHINE)

    async def inside() -> tuple:
        async with contextlib.AsyncExitStack() as stack:
            stack.enter_context(a)
            seen = (vlcs.current() is a, sorted(os.sched_getaffinity(0)))
        return seen, vlcs.current()

    seen, after = asyncio.run(inside())
    assert seen == (True, [MACHINE[0]]) and after is None

    assert type(a).__enter__(a) is a and vlcs.current() is a
    type(a).__exit__(a, None, None, None)
    assert vlcs.current() is None

    class Wrapper:  # a wrapper in contextlib's style
        def __init__(self, cm):
            self.cm = cm

        def __enter__(self):
            return type(self.cm).__enter__(self.cm)

        def __exit__(self, *exc):
            return type(self.cm).__exit__(self.cm, *exc)

    with pytest.raises(KeyError):  # an exception leaves and is not suppressed
        with Wrapper(a) as got:
            assert got is a and vlcs.current() is a
            raise KeyError("inside")
    assert vlcs.current() is None and os.cpu_count() == len(MACHINE)
    a.close()
    b.close()


@needs_two
def test_submit_and_executor_threads_live_in_the_context():
    a = vlcs.VLC(cpus="0")
    assert a.submit(os.sched_getaffinity, 0).result() == {0}
    assert a.submit(os.cpu_count).result() == 1
    b = vlcs.VLC(cpus=MACHINE)
    barrier = threading.Barrier(2)

    def where() -> tuple[int, frozenset[int]]:
        barrier.wait(timeout=60)  # both workers at once: two distinct threads
        return threading.get_native_id(), frozenset(os.sched_getaffinity(0))

    with b.executor(max_workers=2) as ex:
        results = [f.result() for f in [ex.submit(where), ex.submit(where)]]
    assert len({tid for tid, _ in results}) == 2
    assert all(cpus == frozenset(MACHINE) for _, cpus in results)
    a.close()


@needs_two
def test_moving_a_context_moves_the_thread_inside():
    a = vlcs.VLC(cpus="0")
    with a:
        assert os.sched_getaffinity(0) == {0}
        a.set_allowed_cpus("1")
        assert os.sched_getaffinity(0) == {1}
    assert sorted(os.sched_getaffinity(0)) == MACHINE


@needs_two
def test_openblas_copies_size_their_pools_to_their_contexts():
    one, two = vlcs.VLC(cpus="0"), vlcs.VLC(cpus="0-1")
    b1, b2 = one.load("libopenblas.so.0"), two.load("libopenblas.so.0")
    assert b1.openblas_get_num_threads() == 1
    assert b2.openblas_get_num_threads() == 2
    assert two.thread_count == 1 and one.thread_count == 0  # n-1 workers


def test_missing_library_raises_oserror_and_the_context_stays_usable():
    a = vlcs.VLC()
    with pytest.raises(OSError, match="libno-such-thing.so.3"):
        a.load("libno-such-thing.so.3")
    assert a.load("libm.so.6") is not None


def test_info_is_json_able_and_lists_contexts():
    a = vlcs.VLC(cpus="0", env={"X_VLCS": "1"}, name="info-ctx")
    a.load("libm.so.6")
    data = json.loads(json.dumps(vlcs.info()))
    mine = [c for c in data["contexts"] if c["name"] == "info-ctx"]
    assert mine == [
        {
            "name": "info-ctx",
            "cpus": [0],
            "place": None,  # given as a CPU list, not an hwloc place
            "home_cpus": [0],
            "gpus": None,  # never set: the process's
            "elastic": None,
            "lent_cpus": [],
            "progress": {"units": 0, "rate": 0.0, "rate_cpus": 0, "most_cpus": 0},
            "env": {"X_VLCS": "1"},
            "libraries": ["libm.so.6"],
            "python_packages": [],
            "threadpools": [],
            "library_threads": 0,
            # a Python context's own namespace (unless the suite runs in copy mode)
            "mode": "copies" if os.environ.get("VLCS_MODE") == "copies" else "namespace",
            "copy_mode_caveats": [],
        }
    ]
    assert data["cpus_usable"] == MACHINE

"""A fault in a context's native code ends the call that ran it, not the
process: ``ctx.call``, ``ContextPoolExecutor`` (both Pythons) and an own
Python's runtime.  Each case runs in a child interpreter (a broken context
keeps its namespace for the rest of the process), which prints ``end`` if
it got to its last line; the base's numpy, CPUs and Python frames are
checked after the fault."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
CRASH = HERE.parent / "c" / "lib" / "crash.c"


@pytest.fixture(scope="module")
def crash_lib(tmp_path_factory) -> str:
    """tests/c/lib/crash.c built as a shared library: a function per fault."""
    out = tmp_path_factory.mktemp("crash") / "libcrash.so"
    subprocess.run(
        ["gcc", "-O0", "-fno-builtin", "-shared", "-fPIC", str(CRASH), "-o", str(out)], check=True
    )
    return str(out)


PRELUDE = """
import ctypes, os, sys
import numpy
import vlcs
LIB = {lib!r}

def crash(kind="crash_null", gil=False):
    import ctypes
    dll = (ctypes.PyDLL if gil else ctypes.CDLL)(LIB)
    getattr(dll, kind)(None)

def total(n):
    import numpy
    return int(numpy.arange(n).sum())

def base_intact(cpus, depth):
    assert os.sched_getaffinity(0) == cpus, os.sched_getaffinity(0)
    assert int(numpy.arange(10).sum()) == 45
    assert numpy.linalg.solve(numpy.eye(3) * 2, numpy.ones(3)).tolist() == [0.5] * 3
    assert len(__import__("traceback").extract_stack()) - 1 == depth, "the frames are as before"
    def gen():
        try:
            yield 1
            raise KeyError("k")
        except KeyError:
            yield 2
    assert list(gen()) == [1, 2]
    assert vlcs.current() is None

CPUS = os.sched_getaffinity(0)
DEPTH = len(__import__("traceback").extract_stack())
"""


def run(lib: str, body: str, timeout: int = 300, **env: str) -> subprocess.CompletedProcess:
    code = PRELUDE.format(lib=lib) + textwrap.dedent(body) + "\nprint('end', flush=True)\n"
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **env},
    )


def ok(p: subprocess.CompletedProcess) -> str:
    assert p.returncode == 0 and p.stdout.splitlines()[-1:] == ["end"], p.stdout + p.stderr
    return p.stdout


@pytest.mark.parametrize("python", ["shared", "own"])
def test_a_pool_task_that_faults_fails_alone(crash_lib, python):
    """The task's future raises BrokenContextPool (a BrokenProcessPool, as a
    process pool's would) caused by a ContextFaultError naming the function;
    every other task's result is right, the pool goes on with a fresh worker
    (three faults in a row), and the base is as it was."""
    out = ok(
        run(
            crash_lib,
            f"""
            from concurrent.futures.process import BrokenProcessPool
            with vlcs.ContextPoolExecutor(2, python={python!r}) as pool:
                futures = [pool.submit(total, n) for n in range(8)]
                faults = [pool.submit(crash) for _ in range(3)]
                futures += [pool.submit(total, n) for n in range(8, 16)]
                assert [f.result() for f in futures] == [n * (n - 1) // 2 for n in range(16)]
                for f in faults:
                    e = f.exception()
                    assert isinstance(e, vlcs.BrokenContextPool), repr(e)
                    assert isinstance(e, BrokenProcessPool)
                    assert isinstance(e.__cause__, vlcs.ContextFaultError), repr(e.__cause__)
                    assert "crash_null" in e.__cause__.report, e.__cause__.report
                    assert "SIGSEGV" in str(e), str(e)
                print(str(faults[0].exception()))
                assert list(pool.map(total, [3, 4])) == [3, 6]
                assert all(c.fault is None for c in pool.contexts)
            base_intact(CPUS, DEPTH)
            """,
        )
    )
    assert "faulted in worker" in out and "goes on in a fresh context" in out, out


@pytest.mark.parametrize("gil", [False, True])
def test_a_shared_context_call_contains_a_fault_in_its_library(crash_lib, gil):
    """ctx.call in a context sharing this interpreter: the fault is in the
    context's copy of the library, reached through ctypes with the GIL
    released (CDLL) or held (PyDLL); the interpreter's frames, the GIL and
    the base are as before, and another context works on the same thread."""
    ok(
        run(
            crash_lib,
            f"""
            broken = vlcs.VLC(cpus="0")
            assert broken.call(total, 5) == 10
            try:
                broken.call(crash, "crash_null", {gil!r})
            except vlcs.ContextFaultError as e:
                assert "SIGSEGV (address not mapped, address 0x0) at crash_null" in str(e), str(e)
                assert e.report == broken.fault and "crash_null" in e.report
            else:
                raise AssertionError("no fault")
            base_intact(CPUS, DEPTH)
            for again in (lambda: broken.call(total, 5), broken.__enter__):
                try:
                    again()
                except vlcs.ContextFaultError as e:
                    assert "broken by a fault" in str(e), str(e)
                else:
                    raise AssertionError("a broken context was entered")
            other = vlcs.VLC(cpus="0")
            assert other.call(total, 6) == 15
            for kind in ("crash_divide", "crash_abort"):
                ctx = vlcs.VLC(cpus="0")
                try:
                    ctx.call(crash, kind, {gil!r})
                except vlcs.ContextFaultError as e:
                    assert kind in e.report, e.report
                ctx.close()
            import warnings
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # no NamespaceKeptWarning: the fault said it
                broken.close()
            other.close()
            base_intact(CPUS, DEPTH)
            """,
        )
    )


def test_an_own_python_contains_a_fault_anywhere_in_it(crash_lib):
    """With python="own" the context's libpython and libc are its own:
    ctypes.string_at(0), which faults in libc's strlen, is contained."""
    ok(
        run(
            crash_lib,
            """
            ctx = vlcs.VLC(cpus="0", python="own")
            assert ctx.call(total, 4) == 6
            try:
                ctx.call(ctypes.string_at, 0)
            except vlcs.ContextFaultError as e:
                assert "libc.so.6" in str(e) and "called from" in str(e), str(e)
            else:
                raise AssertionError("no fault")
            try:
                ctx.submit(total, 4).result()
            except vlcs.ContextFaultError as e:
                assert "broken by a fault" in str(e), str(e)
            else:
                raise AssertionError("a broken runtime ran a task")
            ctx.close()
            base_intact(CPUS, DEPTH)
            """,
        )
    )


def test_what_cannot_be_contained_ends_the_process_saying_why(crash_lib):
    """In a context sharing this interpreter, ctypes.string_at(0) faults in
    the process's libc, under frames of the process's libpython: the
    process ends with SIGSEGV, as without vlcs, after one line naming why."""
    p = run(
        crash_lib,
        """
        ctx = vlcs.VLC(cpus="0")
        ctx.call(ctypes.string_at, 0)
        """,
    )
    assert p.returncode == -11, p.stdout + p.stderr
    lines = p.stderr.strip().splitlines()
    at = [i for i, s in enumerate(lines) if s.startswith("vlcs: SIGSEGV in context 'ctx0'")]
    assert at, p.stderr
    line = lines[at[0]]
    assert "libc.so.6" in line and "cannot be contained: the process ends" in line, line
    # then the native stack, a frame a line, down to the call
    assert lines[at[0] + 1].startswith("  #0 0x") and "libc.so.6+0x" in lines[at[0] + 1], p.stderr


def test_joblib_sees_the_task_fail_as_a_dead_worker(crash_lib):
    """joblib's vlcs backend: the faulting task raises BrokenContextPool
    from Parallel, as a process that died does with loky."""
    pytest.importorskip("joblib")
    ok(
        run(
            crash_lib,
            """
            import joblib
            from concurrent.futures.process import BrokenProcessPool
            with joblib.parallel_backend("vlcs", n_jobs=2):
                assert joblib.Parallel()(joblib.delayed(total)(n) for n in range(4)) == [0, 0, 1, 3]
                try:  # one task faults (a second would run on, past this script's end)
                    d = joblib.delayed
                    joblib.Parallel()([d(total)(3), d(crash)(), d(total)(4)])
                except BrokenProcessPool as e:
                    print(type(e).__name__)
                else:
                    raise AssertionError("no failure")
            base_intact(CPUS, DEPTH)
            """,
        )
    )


@pytest.mark.parametrize("python", ["shared", "own"])
def test_copy_mode_contains_a_fault_in_the_contexts_copy(crash_lib, python):
    """Contexts made as renamed copies (VLCS_MODE=copies): a fault in the
    context's copy of the library is contained, for both Pythons."""
    ok(
        run(
            crash_lib,
            f"""
            ctx = vlcs.VLC(cpus="0", python={python!r})
            assert ctx.call(total, 4) == 6
            assert ctx.mode == "copies", ctx.mode
            try:
                ctx.call(crash)
            except vlcs.ContextFaultError as e:
                assert "crash_null" in str(e), str(e)
            else:
                raise AssertionError("no fault")
            other = vlcs.VLC(cpus="0", python={python!r})
            assert other.call(total, 5) == 10
            base_intact(CPUS, DEPTH)
            """,
            VLCS_MODE="copies",
        )
    )

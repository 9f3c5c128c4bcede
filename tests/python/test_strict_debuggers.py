"""Strict mode uses no ptrace: gdb and py-spy attach to a process in it."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

PY_TARGET = textwrap.dedent(
    """
    import sys, vlcs
    vlcs.init(strict=True)
    assert vlcs.strict_active()
    def vlcs_py_waiting_in_strict_mode():
        print("ready", flush=True)
        sys.stdin.read()
    vlcs_py_waiting_in_strict_mode()
    """
)


def _start(argv: list[str]) -> subprocess.Popen:
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if line.strip() != "ready":
        proc.kill()
        pytest.fail(f"{argv[0]} did not start in strict mode: {line!r}")
    return proc


def _stop(proc: subprocess.Popen) -> None:
    proc.stdin.close()
    proc.wait(timeout=30)


def test_gdb_attaches_and_reads_a_backtrace(build_dir):
    gdb = shutil.which("gdb")
    assert gdb, "gdb is installed by ./run (Debian package gdb)"
    proc = _start([str(build_dir / "tests" / "c" / "strict_sleeper")])
    try:
        out = subprocess.run(
            [gdb, "-p", str(proc.pid), "-batch", "-ex", "bt"],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        _stop(proc)
    assert "vlcs_waiting_in_strict_mode" in out.stdout, out.stdout + out.stderr
    assert proc.returncode == 0  # still alive and well after the debugger left


CTX_TARGET = textwrap.dedent(
    """
    import sys, vlcs
    a = vlcs.VLC(cpus="0", name="a")
    with a:
        import numpy  # the namespace holds libpython's forwarder, a memfd
    print("ready", flush=True)
    sys.stdin.read()
    """
)


@pytest.mark.skipif(
    importlib.util.find_spec("numpy") is None, reason="numpy is not installed (./run installs it)"
)
def test_gdb_attaches_to_a_process_whose_context_imported_numpy():
    # The forwarders are loaded from memfds; named /proc/self/fd/N in the
    # link map, gdb opened its own fd N (a pipe) and waited for ever.
    gdb = shutil.which("gdb")
    assert gdb, "gdb is installed by ./run (Debian package gdb)"
    proc = _start([sys.executable, "-c", CTX_TARGET])
    try:
        out = subprocess.run(
            [gdb, "-p", str(proc.pid), "-batch", "-ex", "bt"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        _stop(proc)
    assert out.returncode == 0 and "_Py_read" in out.stdout, out.stdout + out.stderr
    assert proc.returncode == 0


def test_py_spy_dumps_a_python_process_in_strict_mode():
    py_spy = shutil.which("py-spy") or str(
        __import__("pathlib").Path(sys.executable).with_name("py-spy")
    )
    proc = _start([sys.executable, "-c", PY_TARGET])
    try:
        out = subprocess.run(
            [py_spy, "dump", "--pid", str(proc.pid)], capture_output=True, text=True, timeout=120
        )
    finally:
        _stop(proc)
    assert "vlcs_py_waiting_in_strict_mode" in out.stdout, out.stdout + out.stderr
    assert proc.returncode == 0


def test_strict_mode_refused_raises_with_the_reason():
    # A filter that refuses seccomp(2), as a container policy might, then vlcs.
    code = textwrap.dedent(
        """
        import ctypes, vlcs
        libc = ctypes.CDLL(None, use_errno=True)
        # struct sock_filter {u16 code; u8 jt; u8 jf; u32 k}
        class F(ctypes.Structure):
            _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte),
                        ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]
        class P(ctypes.Structure):
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(F))]
        prog = (F * 4)(F(0x20, 0, 0, 0), F(0x15, 0, 1, 317),
                       F(0x06, 0, 0, 0x00050000 | 1), F(0x06, 0, 0, 0x7fff0000))
        assert libc.prctl(38, 1, 0, 0, 0) == 0            # PR_SET_NO_NEW_PRIVS
        assert libc.prctl(22, 2, ctypes.byref(P(4, prog)), 0, 0) == 0  # SECCOMP_MODE_FILTER
        try:
            vlcs.init(strict=True)
        except vlcs.VlcsError as e:
            print("refused:", e)
        print("active:", vlcs.strict_active())
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert "refused: Error enabling strict mode: seccomp is not allowed here" in out
    assert "active: False" in out


@pytest.mark.skipif(
    importlib.util.find_spec("numpy") is None, reason="numpy is not installed (./run installs it)"
)
def test_gdb_attaches_to_a_process_whose_context_holds_copies():
    # Copy mode: a context's numpy, OpenBLAS and libstdc++ are renamed copies,
    # each named after its original file once loaded; gdb reads their unwind
    # tables and symbols from there (holes punched in the copies' memfds,
    # then their names, once made gdb fail an internal assertion).
    gdb = shutil.which("gdb")
    assert gdb, "gdb is installed by ./run (Debian package gdb)"
    # OpenBLAS's pool threads wait in the copy's code: gdb unwinds them there
    target = textwrap.dedent(
        """
        import sys, vlcs
        a = vlcs.VLC(cpus="0-1", name="a")
        with a:
            import numpy
            assert a.mode == "copies"
            numpy.ones((300, 300)) @ numpy.ones((300, 300))
        print("ready", flush=True)
        sys.stdin.read()
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", target],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "VLCS_MODE": "copies"},
    )
    line = proc.stdout.readline()
    if line.strip() != "ready":
        proc.kill()
        pytest.fail(f"the target did not start: {line!r}")
    try:
        batch = ["-batch", "-ex", "info sharedlibrary", "-ex", "thread apply all bt"]
        out = subprocess.run(
            [gdb, "-p", str(proc.pid), *batch],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=180,
        )
    finally:
        _stop(proc)
    assert out.returncode == 0 and "internal-error" not in out.stderr, out.stderr[-3000:]
    assert "/fd/" in out.stdout  # the copies are listed
    # a pool thread unwound through the OpenBLAS copy, its function named
    assert "blas_thread_server" in out.stdout, out.stdout[-3000:]
    assert "main" in out.stdout or "Py_" in out.stdout, out.stdout[-3000:]
    assert proc.returncode == 0

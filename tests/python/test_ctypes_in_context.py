"""ctypes loads made by a context's code (a context's module at any time,
or any code on a thread inside the context) go into the context's namespace,
so the library sees the context's CPUs; the base's loads stay the base's."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")

CASE = r"""
import ctypes, json, sys
sys.path.insert(0, sys.argv[1])
import vlcs
a = vlcs.VLC(cpus="0", name="a")
with a:
    import ctypes_user as user_a
    inside = ctypes.CDLL("libgomp.so.1").omp_get_max_threads()
    try:
        ctypes.CDLL("libno-such-thing.so.5")
        missing = "loaded?"
    except OSError as e:
        missing = type(e).__name__
import ctypes_user as user_base
print(json.dumps({
    "copies": user_a is not user_base,
    "inside_with": inside,
    "a_module_from_base_thread": user_a.omp_max_threads(),
    "base_module": user_base.omp_max_threads(),
    "base_direct": ctypes.CDLL("libgomp.so.1").omp_get_max_threads(),
    "in_a_namespace": any("libgomp" in p for p in a.libraries()),
    "missing": missing,
}))
"""


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs")
def test_ctypes_loads_follow_the_owner():
    p = subprocess.run(
        [sys.executable, "-c", CASE, DATA], capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads(p.stdout)
    ncpu = len(os.sched_getaffinity(0))
    assert r == {
        "copies": True,
        "inside_with": 1,
        "a_module_from_base_thread": 1,
        "base_module": ncpu,
        "base_direct": ncpu,
        "in_a_namespace": True,
        "missing": "LibraryNotFoundError",
    }, r

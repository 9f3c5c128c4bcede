"""`with ctx: import numpy` and friends, with the real wheels: numpy, h5py,
scipy and torch (CPU) in two contexts of one process.  Each case runs in a
fresh interpreter (scenarios.py) and reports facts as JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
needs_two = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs")


def run_case(name: str) -> dict:
    p = subprocess.run(
        [sys.executable, os.path.join(HERE, "scenarios.py"), name],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, f"scenario {name} failed ({p.returncode}):\n{p.stderr[-4000:]}"
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_modules_made_by_pyimport_addmodule_stay_per_context():
    # scipy 1.15 (Cython 3.0) imported into a second context failed with
    # "No module named '_cython_3_0_12'" before forwarders answered
    # AttributeError for a module the reading owner never made.
    r = run_case("addmodule")
    assert (r["a"], r["b"], r["base"]) == ("ok", "ok", "ok")
    assert r["distinct_types"] and r["a_reads_its_own"]


@needs_two
def test_numpy_two_private_copies_with_their_own_openblas_pools():
    r = run_case("numpy")
    assert r["distinct"] and r["ndarray_types_distinct"]
    # OPENBLAS_NUM_THREADS 1 and 2 in the two contexts: each copy says so
    assert r["pools"] == {"a": [1], "b": [2]}
    assert r["matmul_a_equal"] and r["matmul_b_equal"]
    assert r["a_to_b"] and r["buffer"]
    assert r["a_is_a"] and r["a_type"] == "numpy.ndarray"
    # the base keeps its numpy and every module object it had
    assert r["base_same_object"] and r["base_names_kept"]
    # a context's numpy called from base code after the block fills its lazy
    # C-level caches from its own modules (this recursed without end before)
    assert r["a_from_base_sum"] == 4.0 and r["base_sum_after"] == 3.0


def test_imports_stay_in_their_context():
    r = run_case("imports")
    assert r["base_lazypkg_separate"]
    assert r["call_time_import"], "a function-level import in a's code must give a's numpy"
    assert r["call_time_import_other_thread"]
    assert r["import_module"] and r["submodule_numpy"]
    assert r["base_call_time_import"], "the base's copy must keep importing the base's numpy"
    assert r["in_a_statement"] and r["executor_import"] and r["modules_listed"]


def test_failed_imports_raise_and_leave_context_and_base_usable():
    r = run_case("imports")
    assert r["broken"] == "broken_pkg refuses to import"
    assert r["broken_base_untouched"]
    assert r["missing"] == "vlcs_no_such_module"
    assert r["usable_after_errors"]
    assert r["new_base_names"] == []  # nothing private leaked into the base


@needs_two
def test_h5py_writes_concurrently_in_two_contexts():
    r = run_case("h5py")
    assert r["sums_equal"]
    assert r["files_equal_plain_h5py"], "files differ from sequential writes"
    assert r["mixed"].startswith(("ValueError", "TypeError")), r["mixed"]
    assert r["alive_after_mix"]


@needs_two
def test_scipy_eigsh_and_solve_ivp_concurrently_give_sequential_results():
    r = run_case("scipy")
    assert r == {"distinct": True, "a_equal": True, "b_equal": True}


@needs_two
def test_torch_threads_follow_cpus_and_training_runs_in_both():
    r = run_case("torch")
    assert r["distinct"]
    assert r["threads"] == [1, 2]
    assert r["losses_equal"]

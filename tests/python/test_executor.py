"""vlcs.ContextPoolExecutor, the joblib backend "vlcs" and vlcs.dask: a
process pool without processes.  The API against concurrent.futures'
contract here; real packages (h5py, scipy with ARPACK behind a lock, a 1 GiB
array, scikit-learn, a Dask LocalCluster) in fresh interpreters
(pool_scenarios.py), each ending with the base checked."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from test_imports import needs, run_case

HERE = Path(__file__).resolve().parent


# --- the Executor contract, each in a fresh interpreter (pool_api.py) ----------------

API_CASES = [
    "workers_split_the_cpus_and_run_in_their_contexts",
    "env_and_cpus_per_worker",
    "initializer_runs_in_each_context",
    "a_failing_initializer_breaks_the_pool",
    "a_pool_never_used_closes_its_contexts",
    "max_tasks_per_child_gives_fresh_contexts",
    "shutdown_cancels_pending_futures_and_refuses_new_ones",
    "map_with_chunksize_and_timeout",
    "elastic_workers_borrow_idle_ones_cpus",
    "bytes_and_memoryviews_cross_as_themselves",
    "bad_arguments_are_refused_and_leave_nothing",
    "the_reusable_executor_keeps_its_workers_and_their_imports",
]


@pytest.mark.parametrize("case", API_CASES)
def test_executor_contract(case):
    p = subprocess.run(
        [sys.executable, str(HERE / "pool_api.py"), case],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), p.stderr[-3000:]


# --- real packages, fresh interpreters ---------------------------------------------------


def base_untouched(r: dict) -> None:
    assert r["base_modules_kept"] and r["base_numpy_works"] and r["base_in_no_context"]


@needs("h5py")
def test_h5py_and_eigsh_give_what_a_process_pool_gives():
    r = run_case("h5py_eigsh", "pool_scenarios.py")
    assert r["h5_equal"] and r["eigsh_equal"]
    assert r["h5py_copies"] == 3 and r["module_copies"] == 3  # two contexts' and the base's
    assert r["worker_cpus"] == [[0], [1]]
    assert r["base_h5py_works"]
    base_untouched(r)


OLD_SCIPY = "1.15.3"


def old_scipy() -> Path:
    """scipy 1.15 (ARPACK behind one lock per copy) installed with pip
    --target once, beside the current one (the evaluation's case 6 uses the
    same directory)."""
    v = sys.version_info
    target = Path.home() / ".cache" / "vlcs" / f"scipy-{OLD_SCIPY}-py{v[0]}{v[1]}"
    if not (target / "scipy").is_dir():
        tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        pip = subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
            + ["--no-deps", "--target", str(tmp), f"scipy=={OLD_SCIPY}"],
            capture_output=True,
            text=True,
        )
        assert pip.returncode == 0, f"pip could not install scipy {OLD_SCIPY}:\n{pip.stderr}"
        tmp.rename(target)
    return target


def test_eigsh_of_scipy_1_15_runs_twice_at_once_in_contexts():
    env = dict(os.environ, PYTHONPATH=str(old_scipy()))
    p = subprocess.run(
        [sys.executable, str(HERE / "pool_scenarios.py"), "old_scipy"],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    r = __import__("json").loads(p.stdout.strip().splitlines()[-1])
    assert r["base_scipy"] == OLD_SCIPY and r["context_scipy"] == [OLD_SCIPY] * 2
    assert r["equal"] and r["scipy_copies"] == 3
    assert not r["threads_overlap"]  # one copy: ARPACK's lock makes threads take turns
    assert r["contexts_overlap"]  # a copy, and a lock, per context
    base_untouched(r)


def test_a_1_gib_array_crosses_without_a_copy():
    r = run_case("big_array", "pool_scenarios.py")
    assert r["same_address"] and r["context_sees_its_own_ndarray"]
    assert r["context_ndarray_distinct"]
    assert r["peak_growth_mib"] < 64, r  # far less than the 1024 MiB a copy needs
    assert r["write_seen_by_caller"] and r["total"] == 1041.0
    assert r["back_is_base_ndarray"] and r["back_same_memory"]
    base_untouched(r)


def test_exceptions_and_unpicklable_objects_as_with_a_process_pool():
    r = run_case("errors", "pool_scenarios.py")
    assert r["linalg"] == ["Singular matrix", "RemoteTraceback", True]
    assert r["own_class"] == ["no good", True]
    assert r["unpicklable"] == r["unpicklable_process_pool"]
    assert r["unpicklable_result"] == "TypeError"
    assert r["after_errors"] == 6
    base_untouched(r)


def test_functions_and_classes_of_main_see_the_contexts_modules():
    r = run_case("main_function", "pool_scenarios.py")
    assert r["main_function_numpy_is_contexts"] and r["main_function_result"] == 3.0
    assert r["lambda"] == 42 and r["main_class"] == 10
    base_untouched(r)


def test_a_segfault_in_a_task_ends_the_process_as_with_threads():
    # Documented: the workers share the process, so a crash in a context's
    # native code is the process's (a process pool would lose one worker).
    p = subprocess.run(
        [sys.executable, str(HERE / "pool_scenarios.py"), "segfault"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == -signal.SIGSEGV
    assert p.stdout.startswith("submitting")


@needs("sklearn", "pip install scikit-learn")
def test_scikit_learn_grid_search_under_the_joblib_backend_matches_loky():
    r = run_case("sklearn", "pool_scenarios.py")
    assert r["best_equal"] and r["scores_equal"]
    assert r["contexts_have_sklearn"]
    assert r["ran_in"] == ["joblib-0", "joblib-1"]
    base_untouched(r)  # and loky ran after the contexts imported theirs


@needs("joblib")
def test_joblib_imported_before_vlcs_gets_the_backend_too():
    assert run_case("joblib_first", "pool_scenarios.py") == {"ran_in_contexts": True}


@needs("distributed")
def test_dask_workers_run_annotated_tasks_in_contexts():
    r = run_case("dask", "pool_scenarios.py")
    assert r["annotated_contexts"] == ["dask-vlcs-0", "dask-vlcs-1"]
    assert r["annotated_cpus"] == [[0], [1]]  # each worker's CPUs split
    assert r["plain_contexts"] == ["None"]  # other tasks on the worker's threads
    assert r["raised"] == "in dask"
    base_untouched(r)


@needs("h5py")
def test_more_workers_than_glibc_has_namespaces_hold_copies():
    # auto mode (also when the suite runs with VLCS_MODE=copies): namespaces first
    r = run_case("many_workers", "pool_scenarios.py", VLCS_MODE="auto")
    assert r["workers"] == 32
    assert r["copy_mode_workers"] >= 32 - 15 and r["modes"] == ["copies", "namespace"]
    assert r["numpys"] == 33  # each worker's own, and the base's
    assert r["dots"] == [285.0] and r["threads"] == [1]
    # 32 ARPACK solves and HDF5 round trips at once, each on its own copies
    assert r["eigsh_h5_exact"] == [True]
    assert r["contexts_left"] == 0
    base_untouched(r)

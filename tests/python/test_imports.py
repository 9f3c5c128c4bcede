"""`with ctx: import numpy` and friends, with the real wheels: numpy, h5py,
scipy and torch (CPU) in two contexts of one process.  Each case runs in a
fresh interpreter (scenarios.py) and reports facts as JSON."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
needs_two = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs")


def _installed(package: str) -> bool:
    try:
        return importlib.util.find_spec(package) is not None
    except ModuleNotFoundError:  # "google.protobuf" without "google"
        return False


def needs(package: str, how: str = ""):
    """Skip, saying why, where an optional heavy package is not installed."""
    return pytest.mark.skipif(
        not _installed(package),
        reason=f"{package} is not installed ({how or 'pip install ' + package}; ./run installs it)",
    )


def expect(r: dict, **wanted: Any) -> None:
    """Every property of a scenario's report has its wanted value; a failure
    names each property that differs, with the value seen."""
    wrong = [
        f"{k}: wanted {v!r}, got {r.get(k, '<missing>')!r}"
        for k, v in wanted.items()
        if r.get(k) != v
    ]
    assert not wrong, "scenario properties failed:\n  " + "\n  ".join(wrong)


def run_code(code: str, timeout: float = 300, **env: str) -> dict:
    """The JSON report (stdout's last line) of code, run in a fresh
    interpreter with env added to the environment; timeout in seconds (a
    hang is the test failing)."""
    p = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **env},
    )
    assert p.returncode == 0, p.stderr[-4000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def run_case(name: str, script: str = "scenarios.py", **env: str) -> dict:
    """The JSON report of case name of script, run in a fresh interpreter
    with env added to the environment."""
    p = subprocess.run(
        [sys.executable, os.path.join(HERE, script), name],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **env},
    )
    assert p.returncode == 0, f"scenario {name} failed ({p.returncode}):\n{p.stderr[-4000:]}"
    return json.loads(p.stdout.strip().splitlines()[-1])


@needs("scipy")
def test_modules_made_by_pyimport_addmodule_stay_per_context():
    # scipy 1.15 (Cython 3.0) imported into a second context failed with
    # "No module named '_cython_3_0_12'": each owner makes its own module
    # with PyImport_AddModule, and each reads its own back.
    r = run_case("addmodule")
    expect(
        r,
        a="ok",
        b="ok",
        base="ok",
        distinct_types=True,
        a_reads_its_own=True,
        base_reads_its_own=True,
    )


@needs_two
@needs("numpy")
def test_numpy_two_private_copies_with_their_own_openblas_pools():
    r = run_case("numpy")
    expect(
        r,
        distinct=True,
        ndarray_types_distinct=True,
        # OPENBLAS_NUM_THREADS 1 and 2 in the two contexts: each copy says so
        pools={"a": [1], "b": [2]},
        matmul_a_equal=True,
        matmul_b_equal=True,
        a_to_b=True,
        buffer=True,
        a_is_a=True,
        a_type="numpy.ndarray",
        # the base keeps its numpy and every module object it had
        base_same_object=True,
        base_names_kept=True,
        # a context's numpy called from base code after the block fills its
        # lazy C-level caches from its own modules (this recursed without end)
        a_from_base_sum=4.0,
        base_sum_after=3.0,
        # dtype and array reprs, in the base and both contexts
        dtype_reprs=[
            "float32",
            "array([0., 1.], dtype=float32)",
            "array([0., 1.], dtype=float32)",
            "int16",
        ],
    )


@needs("numpy")
def test_imports_stay_in_their_context():
    r = run_case("imports")
    expect(
        r,
        base_lazypkg_separate=True,
        call_time_import=True,  # a function-level import in a's code gives a's numpy
        call_time_import_other_thread=True,
        import_module=True,
        submodule_numpy=True,
        base_call_time_import=True,  # the base's copy keeps importing the base's numpy
        in_a_statement=True,
        executor_import=True,
        modules_listed=True,
    )


@needs("numpy")
def test_failed_imports_raise_and_leave_context_and_base_usable():
    r = run_case("imports")
    expect(
        r,
        broken="broken_pkg refuses to import",
        broken_base_untouched=True,
        missing="vlcs_no_such_module",
        usable_after_errors=True,
        new_base_names=[],  # nothing private leaked into the base
    )


@needs_two
@needs("h5py")
def test_h5py_writes_concurrently_in_two_contexts():
    r = run_case("h5py")
    expect(r, sums_equal=True, files_equal_plain_h5py=True, alive_after_mix=True)
    assert r["mixed"].startswith(("ValueError", "TypeError")), r["mixed"]


@needs_two
@needs("scipy")
def test_scipy_eigsh_and_solve_ivp_concurrently_give_sequential_results():
    r = run_case("scipy")
    expect(r, distinct=True, a_equal=True, b_equal=True)


@needs_two
@needs("torch", "pip install torch==2.13.0, the CPU build")
def test_torch_threads_follow_cpus_and_training_runs_in_both():
    r = run_case("torch")
    expect(r, distinct=True, threads=[1, 2], losses_equal=True)


def test_base_package_lazy_submodule_first_touched_inside_a_context_stays_the_base():
    # numpy's np.random is imported lazily (numpy.__getattr__). Touched first
    # by base code running on a thread inside a context that has no numpy,
    # it stayed the context's import: the context imported a numpy of its
    # own and base code got that copy's arrays. Base code importing its own
    # package's submodules is the base's; the script's imports inside the
    # context are still the context's.
    r = run_code(
        """
        import json, sys
        import numpy as np, vlcs
        ctx = vlcs.VLC(cpus="0", name="c")
        with ctx:
            x = np.random.default_rng(0).random((3, 3))
            numpy_in_ctx = "numpy" in sys.modules
            ok = bool(np.allclose(x @ np.eye(3), x))
            import numpy as cnp
            import numpy.random as crandom
        print(json.dumps({
            "base_array": type(x) is np.ndarray, "ctx_had_no_numpy": not numpy_in_ctx, "ok": ok,
            "ctx_numpy_private": cnp is not np, "ctx_random_private": crandom is not np.random,
            "base_random": np.random.default_rng(0).random(2).shape == (2,),
        }))
        """
    )
    assert all(r.values()), r


@needs("numpy")
def test_import_module_gives_each_owner_its_own_module_and_cpythons_errors():
    # importlib.import_module of a module the base holds is answered in C
    # (the base's code pays no Python frame for it): the answer must still
    # be each caller's own module, and CPython's errors must stay CPython's.
    r = run_code(
        """
        import importlib, json, pickle, sys, threading
        import numpy as np
        def error(name, *args):
            try:
                importlib.import_module(name, *args)
            except Exception as e:
                return f"{type(e).__name__}: {e}"
        sys.modules["vlcs_halted"] = None
        BAD = [("vlcs_halted",), ("",), ("vlcs_no_such_module",), (3,), (".x",), (".x", "json")]
        plain_errors = [error(*bad) for bad in BAD]
        import os, tempfile
        d = tempfile.mkdtemp()
        with open(os.path.join(d, "vlcs_asks.py"), "w") as f:
            f.write("import importlib\\n")
            f.write("def ask(name):\\n    return importlib.import_module(name)\\n")
            f.write("def dunder(name):\\n    return __import__(name)\\n")
        sys.path.insert(0, d)
        import vlcs_asks as base_asks
        import vlcs
        a = vlcs.VLC(cpus="0", name="a")
        with a:
            import vlcs_asks as a_asks
            anp = importlib.import_module("numpy")
            alinalg = importlib.import_module("numpy.linalg")
            import numpy as anp_statement
            context_unpickled = type(pickle.loads(pickle.dumps(anp.arange(3))))
        seen = []
        def in_a():
            with a:
                seen.append(importlib.import_module("numpy"))
        t = threading.Thread(target=in_a)
        t.start()
        t.join()
        print(json.dumps({
            "context_private": anp is not np and alinalg is not np.linalg,
            "context_same_as_statement": anp is anp_statement,
            "thread_in_context": seen[0] is anp,
            # a module's code is its owner's, whoever calls it
            "context_module_asks": a_asks.ask("numpy") is anp and a_asks is not base_asks,
            "context_module_asks_shared": a_asks.ask("json") is sys.modules["json"],
            "base_module_asks": base_asks.ask("numpy") is np,
            # __import__ called as a function, and pickle's C import of a class
            "context_module_dunder": a_asks.dunder("numpy") is anp,
            "base_module_dunder": base_asks.dunder("numpy") is np,
            "base_dunder": __import__("numpy") is np and __import__("numpy.linalg") is np,
            "base_pickle": type(pickle.loads(pickle.dumps(np.arange(3)))) is np.ndarray,
            "context_pickle": context_unpickled is anp.ndarray,
            "base": importlib.import_module("numpy") is np,
            "base_submodule": importlib.import_module("numpy.linalg") is np.linalg,
            "base_after_package": importlib.import_module("numpy", "json") is np,
            "shared": importlib.import_module("json") is sys.modules["json"],
            "relative": importlib.import_module(".linalg", "numpy") is np.linalg,
            "errors_as_plain": [error(*bad) for bad in BAD] == plain_errors,
            "errors_given": all(plain_errors),
        }))
        """
    )
    assert all(r.values()), r


# The base imports in one thread while a context's extension module
# initialises in another: the base's new module must stay the base's (vlcs
# takes into the context what the module's C code writes straight into the
# module dict meanwhile, and used to take the base's too).  The base's import
# is made at the start of the context's first extension module exec, from
# that thread acting for the base, so the interleaving is certain.
BASE_IMPORT_DURING_EXEC = r"""
import importlib, json, os, sys, tempfile, vlcs
from vlcs._isolation import extension as _extension
from vlcs._isolation import owners as _owners

d = tempfile.mkdtemp()
with open(os.path.join(d, "vlcs_base_side.py"), "w") as f:
    f.write("VALUE = 42\n")
sys.path.insert(0, d)

real = _extension.ContextExtensionLoader.exec_module
done = []
def exec_module(self, module):
    if not done:
        done.append(module.__name__)
        with _owners.acting_for(_owners.BASE):
            importlib.import_module("vlcs_base_side")
    return real(self, module)
_extension.ContextExtensionLoader.exec_module = exec_module

b = vlcs.VLC(cpus="0", name="b")
with b:
    import numpy
    total = float(numpy.ones(3).sum())
base_mod = sys.modules.get("vlcs_base_side")
print(json.dumps({
    "during": done, "total": total,
    "base_kept": getattr(base_mod, "VALUE", None) == 42,
    "context_took": "vlcs_base_side" in b.modules,
}))
"""


@needs("numpy")
def test_a_base_import_while_a_context_module_initialises_stays_the_base():
    r = run_code(BASE_IMPORT_DURING_EXEC)
    assert r["during"] and r["total"] == 3.0, r
    assert r["base_kept"] and not r["context_took"], r

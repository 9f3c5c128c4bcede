"""A scientific Python user's stack in contexts: each package imported and
used in two contexts at once (CPU 0 and CPU 1), then in the base, from its
real wheel, in a fresh interpreter per package (stack_scenarios.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from test_imports import needs, needs_two, run_case


def stack_case(name: str, **env: str) -> dict:
    r = run_case(name, "stack_scenarios.py", **env)
    # Common to every package: each owner its own copy, the base untouched by
    # the contexts' imports, and the same answers everywhere.
    assert r["base_saw_before"] == [], "the contexts' imports showed in the base's sys.modules"
    assert r["distinct_copies"] and r["a_sees_its_own"]
    return r


def same_everywhere(r: dict, *keys: str) -> None:
    for k in keys or r["base"]:
        assert r["a"][k] == r["base"][k] == r["b"][k], f"{k}: a, b and base differ"


@needs("pandas")
@needs("pyarrow")
def test_pandas_groupby_datetimes_parquet():
    r = stack_case("pandas")
    same_everywhere(r)
    assert r["base"]["parquet"] is True
    assert r["base"]["weekday"][:2] == ["Tuesday", "Wednesday"]


@needs("sklearn", "pip install scikit-learn")
def test_scikit_learn_with_its_own_pools():
    r = stack_case("sklearn")
    same_everywhere(r, "kmeans_sizes", "inertia", "logreg")
    assert r["base"]["kmeans_sizes"] == [60, 60]
    # threadpoolctl inside each context finds that context's OpenBLAS/OpenMP
    for who in ("a", "b", "base"):
        assert r[who]["pools"] == ["blas", "openmp"], f"{who}: threadpoolctl saw {r[who]}"


@needs("scipy")
def test_scipy_modules():
    same_everywhere(stack_case("scipy"))


@needs("numba")
def test_numba_compiles_in_both_contexts_at_once():
    r = stack_case("numba")
    same_everywhere(r)
    assert r["base"]["dot"] == float(sum(i * i for i in range(1000)))


@needs("pyarrow")
def test_pyarrow():
    same_everywhere(stack_case("pyarrow"))


@needs("cv2", "pip install opencv-python-headless")
def test_opencv():
    r = stack_case("cv2")
    same_everywhere(r)
    assert r["base"]["has"] is True


@needs("statsmodels")
def test_statsmodels():
    r = stack_case("statsmodels")
    same_everywhere(r)
    assert r["base"]["ols"] == [3.0, 2.0]


@needs("google.protobuf", "pip install protobuf")
def test_protobuf():
    r = stack_case("protobuf")
    same_everywhere(r)
    assert r["base"]["roundtrip"] == "t.proto/p"


@needs("psutil")
@needs("numexpr")
@needs_two
def test_cpu_counts_of_psutil_and_numexpr_follow_the_context():
    r = stack_case("counts")
    same_everywhere(r, "numexpr")
    real = len(os.sched_getaffinity(0))
    assert (r["a"]["psutil"], r["b"]["psutil"], r["base"]["psutil"]) == (1, 1, os.cpu_count())
    assert (r["a"]["numexpr_cores"], r["b"]["numexpr_cores"]) == (1, 1)
    assert r["base"]["numexpr_cores"] == real


@needs("mkl", "pip install mkl-service")
@needs("mkl_fft")
@needs_two
@pytest.mark.parametrize("mode", ["namespace", "copies"])
def test_intel_mkl_and_its_openmp_in_two_contexts_and_the_base(mode):
    # libmkl_rt opens its parts RTLD_GLOBAL, and each copy of Intel's OpenMP
    # registers itself per process: either ended the process before.  In
    # copy mode its core, opened first, binds lazily to the layers opened
    # after it ("Cannot load libmkl_core.so.3" ended the process there).
    r = stack_case("mkl", VLCS_MODE=mode)
    same_everywhere(r, "fft", "roundtrip")
    assert r["base"]["roundtrip"] is True
    assert (r["a"]["threads"], r["b"]["threads"]) == (1, 1), "MKL sizes itself to its context"
    plain = subprocess.run(
        [sys.executable, "-c", "import mkl; print(mkl.get_max_threads())"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert r["base"]["threads"] == int(plain.stdout), "the base's MKL as without vlcs"


@needs("mpi4py")
@needs_two
@pytest.mark.parametrize("mode", ["namespace", "copies"])
def test_mpi4py_over_open_mpi_in_two_contexts_and_the_base(mode):
    r = stack_case("mpi", VLCS_MODE=mode)
    same_everywhere(r)
    assert r["base"]["library"].startswith("Open MPI"), r["base"]["library"]
    assert r["base"]["world"] == 1 and r["base"]["allreduce"] == 3
    assert r["base"]["sum"] == [float(i) for i in range(8)]
    assert r["base"]["initialized"] is True


@needs("charset_normalizer", "pip install charset-normalizer")
def test_mypyc_compiled_package():
    r = stack_case("mypyc")
    same_everywhere(r)
    assert r["base"]["encoding"] == "utf_8"


@needs("tomli")
@needs("chardet")
def test_mypyc_compiled_modules_import_one_another_in_contexts():
    # they crashed (SIGSEGV) in a context: their imports read sys.modules with
    # PyDict_GetItemWithError, which missed the context's modules
    r = stack_case("mypyc_imports")
    same_everywhere(r)
    assert "datetime.datetime(1979, 5, 27, 7, 32" in r["base"]["toml"]
    assert "'ports': [1, 2]" in r["base"]["toml"]
    assert r["base"]["chardet"][0] is not None
    assert r["distinct_copies"] and r["a_sees_its_own"] and r["base_saw_before"] == []


@needs("torch", "pip install torch==2.13.0")
def test_torch_in_the_base_after_contexts():
    r = stack_case("torch")
    same_everywhere(r, "sum")
    assert (r["a"]["threads"], r["b"]["threads"]) == (1, 1)

"""Failures carry libvlcs's error code and raise the class a program can act
on; per-library knowledge is registered classes that read and resize pools
from inside a context."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys

import pytest
import vlcs

MACHINE = sorted(os.sched_getaffinity(0))
needs_two = pytest.mark.skipif(len(MACHINE) < 2, reason="needs 2 CPUs")


def test_bad_argument_is_invalid_and_a_valueerror():
    with pytest.raises(vlcs.InvalidArgumentError) as e:
        vlcs.VLC(cpus="3-1")
    assert e.value.code == vlcs.Errcode.INVALID
    assert isinstance(e.value, ValueError) and isinstance(e.value, vlcs.VlcsError)


def test_nul_bytes_and_wrong_types_are_refused_before_c_sees_them():
    # C would read each up to its NUL (CPUs 0-1, variable "A", library libm.so.6).
    a = vlcs.VLC(name="typed", cpus="0")
    for call, what in [
        (lambda: a.set_allowed_cpus("0\x00,5"), "cpus"),
        (lambda: vlcs.VLC(name="x\x00y"), "name"),
        (lambda: a.setenv("A\x00B", "1"), "environment variable name"),
        (lambda: a.setenv("A", "a\x00b"), "value of A"),
        (lambda: a.getenv("A\x00B"), "environment variable name"),
        (lambda: a.unsetenv("A\x00B"), "environment variable name"),
        (lambda: a.load("libm.so.6\x00junk"), "library"),
        (lambda: vlcs.service("libm.so.6\x00junk"), "library"),
    ]:
        with pytest.raises(ValueError, match="NUL byte") as e:
            call()
        assert what in str(e.value)
    for call, what in [
        (lambda: a.set_allowed_cpus([0.7]), "CPU ids must be ints"),
        (lambda: a.set_allowed_cpus([True]), "CPU ids must be ints"),
        (lambda: a.set_allowed_cpus(5), "cpus must be"),
        (lambda: a.setenv("A", None), "value of A must be a str"),
        (lambda: a.setenv("A", 3), "value of A must be a str"),
        (lambda: vlcs.VLC(env={"A": None}), "value of A must be a str"),
        (lambda: a.setenv(b"A", "1"), "name must be a str"),
        (lambda: a.load(3), "library must be"),
    ]:
        with pytest.raises(TypeError, match=what):
            call()
    # nothing of it reached the context, which works on
    assert a.cpus == [0] and a.getenv("A") is None and "A" not in a.info()["env"]
    a.setenv("A", "ok")
    assert a.getenv("A") == "ok"
    assert a.load(os.fsencode("libm.so.6")) is not None


def test_missing_library_is_not_found_and_a_filenotfounderror():
    a = vlcs.VLC(name="nf")
    with pytest.raises(FileNotFoundError) as e:
        a.load("libno-such-thing.so.3")
    assert e.value.code == vlcs.Errcode.NOT_FOUND
    assert isinstance(e.value, vlcs.LibraryNotFoundError)
    assert a.load("libm.so.6") is not None  # the context stays usable


def test_missing_service_library_is_not_found():
    with pytest.raises(vlcs.LibraryNotFoundError) as e:
        vlcs.service("libno-such.so.4")
    assert e.value.code == vlcs.Errcode.NOT_FOUND


LIMIT = r"""
import json, vlcs
ok, err = [], None
for i in range(40):
    c = vlcs.VLC(name=f"n{i}")
    try:
        m = c.load("libm.so.6")
    except vlcs.VlcsError as e:
        err = e
        break
    ok.append((c, m))
import ctypes
cos = ok[0][1].cos
cos.restype, cos.argtypes = ctypes.c_double, [ctypes.c_double]
print(json.dumps({
    "loaded": len(ok), "class": type(err).__name__, "code": int(err.code),
    "limit": err.limit, "limit_code": int(err.limit_code), "says_vlcs_run": "vlcs run" in str(err),
    "first_still_works": cos(0.0) == 1.0,
}))
"""


def test_namespace_exhaustion_is_a_limit_error_naming_the_limit():
    # Namespaces are never given back, so this runs in a process of its own,
    # without vlcs run's tunables: glibc's own limits apply.
    # VLCS_MODE=namespace: contexts past the limit would otherwise hold
    # renamed copies instead (copy mode, test_copy_mode.py)
    env = dict(os.environ, VLCS_MODE="namespace")
    out = subprocess.run(
        [sys.executable, "-c", LIMIT], capture_output=True, text=True, check=True, env=env
    ).stdout
    import json

    r = json.loads(out)
    assert r["class"] == "VlcsLimitError", r
    assert r["code"] == vlcs.Errcode.LIMIT, r
    assert r["limit"] in ("linker namespaces", "static TLS"), r
    assert r["limit_code"] in (vlcs.Limit.NAMESPACES, vlcs.Limit.STATIC_TLS), r
    assert r["says_vlcs_run"], r
    assert r["loaded"] >= 3 and r["first_still_works"], r


@needs_two
def test_threadpools_and_set_num_threads_act_inside_the_context():
    a = vlcs.VLC(cpus="0-1", name="pools")
    blas = a.load("libopenblas.so.0")
    a.load("libgomp.so.1")
    pools = {p["api"]: p for p in a.threadpools()}
    assert pools["openblas"]["num_threads"] == 2 and pools["openblas"]["user_api"] == "blas"
    assert pools["openmp"]["num_threads"] == 2
    assert a.set_num_threads(1, user_api="blas") == ["openblas"]
    assert blas.openblas_get_num_threads() == 1  # the context's own copy
    assert {p["api"]: p["num_threads"] for p in a.threadpools()} == {"openblas": 1, "openmp": 2}
    with pytest.raises(ValueError, match="thread count"):
        a.set_num_threads(0)
    # The base's OpenBLAS, if any, is another copy and was not touched.
    base = ctypes.CDLL("libopenblas.so.0")
    assert base.openblas_get_num_threads() == len(MACHINE)


def test_a_registered_family_is_tried_first():
    class Procs(vlcs.LibraryController):
        name, user_api = "gomp-procs", "custom"
        filename_prefixes = ("libgomp",)
        get_threads = ("omp_get_num_procs",)

    a = vlcs.VLC(cpus="0", name="custom")
    a.load("libgomp.so.1")
    vlcs.register(Procs)
    try:
        assert [(p["api"], p["num_threads"]) for p in a.threadpools()] == [("gomp-procs", 1)]
    finally:
        from vlcs.libraries import OpenMP

        vlcs.register(OpenMP)  # put the built-in first again
    assert [p["api"] for p in a.threadpools()] == ["openmp"]
    with pytest.raises(TypeError, match="LibraryController subclass"):
        vlcs.register(object)  # type: ignore[arg-type]


def test_binding_registries_come_from_the_registered_families():
    from vlcs.libraries import registry_keys

    assert {"__pybind11_internals", "__nb_internals"} <= set(registry_keys())

"""Library families from Python: the built-in classes carry libvlcs's own
rows (one place for what C acts on), and a family registered with
vlcs.register() reaches libvlcs: an elastic context resizes its pool as it
grows and shrinks (with a 64-bit count) and closing the context stops it.
Each case runs in a fresh interpreter."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from test_imports import needs_two, run_code

ROOT = Path(__file__).resolve().parents[2]


def test_builtin_classes_are_libvlcs_rows():
    r = run_code(
        """
        import json, vlcs
        from vlcs._lib import families
        rows = families()
        out = {}
        for cls in vlcs.libraries.controllers():
            row = rows.get(cls.name)
            if row is not None:
                out[cls.name] = {f: [getattr(cls, f), row[f]] for f in row}
        print(json.dumps(out))
        """
    )
    assert {"openblas", "openmp", "mkl", "torch", "tbb"} <= set(r)
    for name, fields in r.items():
        for field, (in_python, in_c) in fields.items():
            assert in_python == in_c, (name, field)
    assert "libopenblas" in r["openblas"]["filename_prefixes"][0]
    assert r["openblas"]["stop_pool"][0] == ["blas_thread_shutdown_"]
    assert r["openmp"]["resize_when_elastic"][0] is False


@pytest.fixture(scope="module")
def family64(tmp_path_factory) -> Path:
    """The test library of tests/c/lib/family64.c: a 64-bit thread count."""
    out = tmp_path_factory.mktemp("family") / "libvlcs_family64.so"
    src = ROOT / "tests" / "c" / "lib" / "family64.c"
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", str(src), "-o", str(out)], check=True)
    return out


@needs_two
def test_registered_family_follows_an_elastic_context_and_is_stopped_on_close(family64):
    r = run_code(
        f"""
        import ctypes, json, vlcs

        class Family64(vlcs.LibraryController):
            name, user_api = "family64", "fam"
            filename_prefixes = ("libvlcs_family64",)
            get_threads, set_threads = ("fam_get_threads",), ("fam_set_threads",)
            count_type = "int64"
            stop_pool = ("fam_stop_pool",)

        vlcs.register(Family64)
        from vlcs._lib import families
        row = families()["family64"]
        a, b = vlcs.VLC(cpus="0", name="a"), vlcs.VLC(cpus="1", name="b")
        a.set_elastic("0-1")
        b.set_elastic("0-1")
        lib = a.load({str(family64)!r})
        lib.fam_get_threads.restype = ctypes.c_int64
        stops = ctypes.c_int(0)
        lib.fam_watch_stops(ctypes.byref(stops))
        out = {{"row": row, "idle": lib.fam_get_threads()}}
        with a:
            out["busy"] = lib.fam_get_threads()
            out["pools"] = [p["num_threads"] for p in a.threadpools() if p["api"] == "family64"]
            with b:
                out["b_busy"] = lib.fam_get_threads()
            out["b_idle"] = lib.fam_get_threads()
            out["set"] = a.set_num_threads(5, user_api="fam")
            out["after_set"] = lib.fam_get_threads()
        out["stops_before_close"] = stops.value
        del lib  # a ctypes handle still held would keep the namespace loaded
        a.close()
        out["stops"] = stops.value
        b.close()
        bad = type("Bad", (vlcs.LibraryController,), {{"name": "bad", "count_type": "int128"}})
        try:
            vlcs.register(bad)
        except ValueError as e:
            out["bad"] = str(e)
        names = [c.name for c in vlcs.libraries.controllers()]
        out["bad_listed"] = "bad" in families() or "bad" in names
        print(json.dumps(out))
        """
    )
    assert r["row"]["count_type"] == "int64" and r["row"]["resize_when_elastic"] is True
    assert r["row"]["stop_pool"] == ["fam_stop_pool"]
    assert r["idle"] == 1  # loaded into an idle elastic context: its one CPU
    assert r["busy"] == 2 and r["pools"] == [2]  # a borrowed b's CPU
    assert r["b_busy"] == 1  # b took it back
    assert r["b_idle"] == 2
    assert r["set"] == ["family64"] and r["after_set"] == 5
    assert r["stops_before_close"] == 0 and r["stops"] == 1
    assert "count_type" in r["bad"] and r["bad_listed"] is False

"""Every CPython its users run: where the interpreter's C API lives is read
from the running process, never from sysconfig.

./run runs this file (with the rest of the suite) on pyenv's shared builds
and on Debian's /usr/bin/python3, which carries libpython inside the
executable while its sysconfig says Py_ENABLE_SHARED=1; it tells the tests
which one runs in VLCS_TEST_LINKAGE.  Each case runs in a fresh
interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import vlcs
from conftest import vlcs_cmd
from test_imports import needs_two, run_code
from vlcs._isolation.reader import SUPPORTED, why_missing

ROOT = Path(__file__).resolve().parents[2]


def _libpython_mapped() -> str | None:
    """A libpython file this process maps, the oracle for 'shared'."""
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split(maxsplit=5)[5].strip() if len(line.split()) > 5 else ""
            if os.path.basename(path).startswith("libpython") and ".so" in path:
                return path
    return None


def test_info_says_where_the_c_api_lives_as_the_process_maps_it():
    info = vlcs.info()["python"]
    mapped = _libpython_mapped()
    if mapped is not None:
        assert info["linkage"] == "shared", info
        assert os.path.samefile(info["path"], mapped), info
        assert info["own_runtime_library"] == info["path"], info
    else:
        assert info["linkage"] == "static", info
        assert os.path.samefile(info["path"], "/proc/self/exe"), info
        # the shipped .so of the same version, never the executable
        assert f"libpython{sysconfig.get_config_var('LDVERSION')}.so" in (
            info["own_runtime_library"] or ""
        ), info
    assert info["soname"] == f"libpython{sysconfig.get_config_var('LDVERSION')}.so.1.0", info
    assert info["linkage"] in info["why"] or info["path"] in info["why"], info
    want = os.environ.get("VLCS_TEST_LINKAGE")
    if want:  # ./run knows which interpreter it runs this on
        assert info["linkage"] == want, (want, info)
    # the command says the same, with what own runtimes start from
    shown = json.loads(vlcs_cmd("info", "--json", check=True).stdout)
    assert shown["python_c_api"] == f"{info['linkage']}: {info['path']}", shown
    assert shown["python_own_runtimes"] == info["own_runtime_library"], shown
    assert shown["python_imports_in_contexts"] == "yes", shown


def test_the_first_private_numpy_under_vlcs_run():
    # The first thing a user tries, started by the launcher (which re-executes
    # the interpreter with glibc's tunables): no second runtime, no abort.
    code = (
        "import vlcs\na = vlcs.VLC(cpus='0')\nwith a:\n    import numpy\n"
        "import numpy as base\nprint(numpy is not base, a.submit(lambda: int(numpy.ones(3).sum()))"
        ".result())"
    )
    r = vlcs_cmd("run", "--", sys.executable, "-c", code)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == ["True", "3"], r.stdout


# sysconfig's answers replaced by ones that lead nowhere: a module of the
# same shape, named by CPython's own _PYTHON_SYSCONFIGDATA_NAME.
_FAKE_SYSCONFIG = """
import importlib
build_time_vars = dict(importlib.import_module({real!r}).build_time_vars)
build_time_vars.update(Py_ENABLE_SHARED={shared}, LIBDIR={libdir!r}, MULTIARCH="",
                       LDLIBRARY="libpython-nowhere.so", INSTSONAME="libpython-nowhere.so")
"""


def _sysconfig_leading_nowhere(tmp_path: Path, shared: int) -> dict[str, str]:
    real = sysconfig._get_sysconfigdata_name()  # type: ignore[attr-defined]
    empty = tmp_path / "nowhere"
    empty.mkdir(exist_ok=True)
    text = _FAKE_SYSCONFIG.format(real=real, shared=shared, libdir=str(empty))
    (tmp_path / "_sysconfigdata_vlcs_nowhere.py").write_text(text)
    path = os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return {"_PYTHON_SYSCONFIGDATA_NAME": "_sysconfigdata_vlcs_nowhere", "PYTHONPATH": path}


@needs_two
@pytest.mark.parametrize("shared", [0, 1])
def test_contexts_share_the_running_c_api_whatever_sysconfig_says(tmp_path, shared):
    # Two contexts import numpy privately and the base keeps its own, with
    # sysconfig saying the build is (not) shared and pointing LIBDIR at an
    # empty folder: what vlcs binds to comes from the process.
    r = run_code(
        """
        import json, sys, sysconfig, vlcs
        import numpy as base_np
        a, b = vlcs.VLC(cpus="0"), vlcs.VLC(cpus="1")
        with a:
            import numpy as na
        with b:
            import numpy as nb
        m = base_np.arange(16.0).reshape(4, 4)
        ta = a.submit(lambda: float(na.trace(na.asarray(m) @ na.asarray(m)))).result()
        tb = b.submit(lambda: float(nb.trace(nb.asarray(m) @ nb.asarray(m)))).result()
        maps = open("/proc/self/maps").read()
        print(json.dumps({
            "ids": [id(na), id(nb), id(base_np)], "ta": ta, "tb": tb,
            "base": float(base_np.trace(m @ m)), "base_is": sys.modules["numpy"] is base_np,
            "said_shared": sysconfig.get_config_var("Py_ENABLE_SHARED"),
            "libpythons": sorted({l.split()[-1] for l in maps.splitlines()
                                  if "libpython" in l.split()[-1]}),
            "linkage": vlcs.info()["python"]["linkage"]}))
        """,
        **_sysconfig_leading_nowhere(tmp_path, shared),
    )
    assert r["said_shared"] == shared, r  # the fake was read
    assert len(set(r["ids"])) == 3 and r["base_is"], r
    assert r["ta"] == r["tb"] == r["base"], r
    # one C API: a static interpreter never gets a libpython mapped
    assert len(r["libpythons"]) == (1 if r["linkage"] == "shared" else 0), r


@needs_two
def test_own_runtimes_start_from_a_shared_libpython_or_say_what_to_install(tmp_path):
    # With sysconfig leading nowhere, an own runtime of a shared interpreter
    # still starts (from the libpython the process holds); a static one has
    # nothing to start from, and VLC and ContextPoolExecutor both say what
    # to install before anything starts, leaving shared contexts working.
    r = run_code(
        """
        import json, vlcs
        out = {"linkage": vlcs.info()["python"]["linkage"]}
        for make, end in ((lambda: vlcs.VLC(cpus="0", python="own"), "close"),
                          (lambda: vlcs.ContextPoolExecutor(2, python="own"), "shutdown")):
            try:
                x = make()
            except vlcs.UnsupportedPlatformError as e:
                out.setdefault("errors", []).append(str(e))
                continue
            out.setdefault("ran", []).append(x.submit(sum, [1, 2, 3]).result())
            getattr(x, end)()
        c = vlcs.VLC(cpus="1")
        with c:
            import numpy
        out["after"] = c.submit(lambda: float(numpy.ones(3).sum())).result()
        out["live"] = len(vlcs.info()["contexts"])
        print(json.dumps(out))
        """,
        **_sysconfig_leading_nowhere(tmp_path, 1),
    )
    if r["linkage"] == "shared":
        assert r["ran"] == [6, 6] and "errors" not in r, r
    else:
        assert "ran" not in r and len(r["errors"]) == 2, r
        version = sysconfig.get_config_var("LDVERSION")
        for e in r["errors"]:
            assert f"apt install libpython{version}" in e and "python='own'" in e, e
    assert r["after"] == 3.0 and r["live"] == 1, r  # the refused ones left nothing behind


def _other_libpython() -> Path:
    """A shared libpython of another CPython version than this one (pyenv's)."""
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    mine = f"libpython{sys.version_info.major}.{sys.version_info.minor}."
    found = sorted(
        p for p in root.glob("3.*/lib/libpython3.*.so.1.0") if not p.name.startswith(mine)
    )
    assert found, f"no other CPython's libpython under {root} (./run's machine has pyenv's)"
    return found[-1]


def test_an_own_runtime_refuses_a_libpython_of_another_version(tmp_path):
    # A distribution's lib folder holding, under this version's name, another
    # version's libpython: a static interpreter's own runtime refuses it in
    # one sentence and the process goes on; a shared one never looks there.
    other = _other_libpython()
    env = _sysconfig_leading_nowhere(tmp_path, 1)
    (tmp_path / "nowhere" / f"libpython{sysconfig.get_config_var('LDVERSION')}.so.1.0").symlink_to(
        other
    )
    r = run_code(
        """
        import json, vlcs
        c = vlcs.VLC(cpus="0", python="own")
        try:
            out = {"ran": c.submit(sum, [1, 2]).result()}
        except vlcs.UnsupportedPlatformError as e:
            out = {"error": str(e)}
        d = vlcs.VLC(cpus="1")
        with d:
            import numpy
        out["after"] = d.submit(lambda: float(numpy.ones(2).sum())).result()
        out["linkage"] = vlcs.info()["python"]["linkage"]
        print(json.dumps(out))
        """,
        **env,
    )
    if r["linkage"] == "shared":
        assert r["ran"] == 3, r
    else:
        other_version = other.name[len("libpython") :].split(".so")[0]
        assert f"is {other_version}." in r["error"] and "python='own' needs" in r["error"], r
    assert r["after"] == 2.0, r


def test_an_import_inside_a_context_without_the_reader_says_why(tmp_path):
    # As vlcs installs on a CPython whose frames it does not know: C
    # contexts, the base's imports and vlcs.share work; an import inside a
    # context raises UnsupportedPlatformError.
    r = run_code(
        """
        import sys
        sys.modules["vlcs._isolation._fast"] = None  # a build without the reader
        import ctypes, json, vlcs
        c = vlcs.VLC(cpus="0", env={"OMP_NUM_THREADS": "1"})
        gomp = c.load("libgomp.so.1")
        procs = c.submit(ctypes.CFUNCTYPE(ctypes.c_int)(("omp_get_num_procs", gomp))).result()
        try:
            with c:
                import email.mime.text
            error = None
        except vlcs.UnsupportedPlatformError as e:
            error = str(e)
        import importlib
        try:
            c.submit(importlib.import_module, "email.mime.image").result()
            by_function = None
        except vlcs.UnsupportedPlatformError as e:
            by_function = str(e)
        import email.mime.text  # the base's import, as without vlcs
        vlcs.share("not_imported_anywhere")
        image = importlib.import_module("email.mime.image")
        print(json.dumps({"procs": procs, "error": error, "by_function": by_function,
                          "base": email.mime.text.__name__, "base_by_function": image.__name__}))
        """
    )
    assert r["procs"] == 1 and r["base"] == "email.mime.text", r
    assert r["base_by_function"] == "email.mime.image", r
    assert r["error"] and "module-table reader" in r["error"], r
    assert r["by_function"] == r["error"], r


def test_the_sentence_for_a_newer_cpython_names_the_versions_supported():
    said = why_missing((3, 14), "")
    first, last = SUPPORTED[0], SUPPORTED[-1]
    assert "CPython 3.14" in said and f"{first[0]}.{first[1]}-{last[0]}.{last[1]}" in said
    assert "vlcs exec" in said and "C contexts" in said


def _configure(tmp_path: Path, version: str) -> tuple[str, str]:
    """Configure the pip build (SKBUILD) with the interpreter's version
    forced; returns cmake's stderr and the build's target list."""
    out = tmp_path / f"build-{version}"
    p = subprocess.run(
        ["cmake", "-S", str(ROOT), "-B", str(out), "-G", "Ninja", "-DSKBUILD=ON",
         "-DVLCS_BUILD_TESTS=OFF", f"-DPython_EXECUTABLE={sys.executable}",
         f"-DVLCS_PYTHON_VERSION={version}"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    targets = subprocess.run(
        ["cmake", "--build", str(out), "--target", "help"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return p.stderr, targets


def test_pip_builds_without_the_reader_on_a_cpython_it_does_not_know(tmp_path):
    said, targets = _configure(tmp_path, "3.15")
    assert "CPython 3.15" in said and "UnsupportedPlatformError" in said, said
    assert "_fast" not in targets and "vlcs_interpose" in targets, targets
    said, targets = _configure(tmp_path, "3.13")
    assert "_fast" in targets and "UnsupportedPlatformError" not in said, said

"""`vlcs check PKG...`: each package in a fresh interpreter, in two contexts at
once and in the base; failures reported (crashes too), not fatal."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import types

from conftest import ROOT, vlcs_cmd

KEYS = {"package", "ok", "mode", "submodules", "extension_modules", "smoke", "error", "kind", "fix"}


def _env_with(path) -> dict[str, str]:
    """The environment with path in front of PYTHONPATH (for the child too)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(path), env.get("PYTHONPATH")) if p)
    return env


def _package(tmp_path, name: str, init: str) -> dict[str, str]:
    pkg = tmp_path / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text(init)
    (pkg / "plain.py").write_text("VALUE = 1\n")
    return _env_with(tmp_path)


def test_numpy_json_passes():
    r = vlcs_cmd("check", "numpy", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert isinstance(doc, list) and len(doc) == 1
    (e,) = doc
    assert KEYS <= set(e)
    assert e["package"] == "numpy" and e["ok"] is True
    # where context a's copies lived (VLCS_MODE=copies: the suite in copy mode)
    assert e["mode"] == ("copies" if os.environ.get("VLCS_MODE") == "copies" else "namespace")
    assert e["submodules"] > 50  # found without importing, tests left out
    assert e["extension_modules"] > 5  # numpy._core._multiarray_umath, ... in a's namespace
    assert e["smoke"] == "ok"  # linalg.norm equal in a, b and the base
    assert e["error"] is None and e["kind"] is None and e["fix"] is None
    assert "checking numpy (1/1)..." in r.stderr


def test_text_report_for_several_packages():
    r = vlcs_cmd("check", "threadpoolctl", "scipy")
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("PASS threadpoolctl (0 submodules, 0 extension modules, smoke: ok)")
    assert lines[1].startswith("PASS scipy (") and lines[1].endswith("smoke: ok)")
    assert "checking threadpoolctl (1/2)..." in r.stderr
    assert "checking scipy (2/2)..." in r.stderr


def test_a_package_vlcs_keeps_shared_passes_with_a_note(tmp_path):
    # json is the standard library's: one copy for all, and no failure of privacy;
    # run from an empty folder, as the child must not take the caller's folder as a path
    r = vlcs_cmd("check", "json", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("PASS json (")
    assert "vlcs keeps this package shared" in r.stdout


def test_the_child_does_not_import_from_the_callers_folder(tmp_path):
    # a module in the working directory that shadows the checked package is not taken
    (tmp_path / "threadpoolctl.py").write_text("raise RuntimeError('the wrong threadpoolctl')\n")
    r = vlcs_cmd("check", "threadpoolctl", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("PASS threadpoolctl")


def test_not_installed_is_a_usage_error():
    r = vlcs_cmd("check", "no_such_package_vlcs", "numpy")
    assert r.returncode == 2
    assert "no_such_package_vlcs: not installed: pip install no_such_package_vlcs" in r.stderr
    assert r.stdout == ""  # nothing was checked
    r = vlcs_cmd("check")
    assert r.returncode == 2


def test_a_distribution_name_is_checked_as_what_it_provides(tmp_path):
    # what pip installs (scikit-learn, pillow) is often not what Python
    # imports (sklearn, PIL): a distribution that is installed is checked as
    # its top-level package
    env = _package(tmp_path, "vlcs_distpkg", "VALUE = 2\n")
    info = tmp_path / "vlcs_dist_name-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: vlcs-dist-name\nVersion: 1.0\n")
    (info / "top_level.txt").write_text("vlcs_distpkg\n")
    r = vlcs_cmd("check", "vlcs-dist-name", "--json", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "vlcs-dist-name is imported as vlcs_distpkg" in r.stderr
    assert [(e["package"], e["ok"]) for e in json.loads(r.stdout)] == [("vlcs_distpkg", True)]


def test_crash_in_the_child_is_a_failure_not_the_end(tmp_path):
    env = _package(
        tmp_path,
        "abort_in_ctx",
        "import os, vlcs\nif vlcs.current() is not None:\n    os.abort()\n",
    )
    r = vlcs_cmd("check", "abort_in_ctx", "threadpoolctl", "--json", env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    crashed, fine = json.loads(r.stdout)
    assert crashed["ok"] is False and crashed["kind"] == "crash"
    assert "SIGABRT" in crashed["error"]
    assert "importing the package in contexts" in crashed["error"]  # the stage it died in
    assert crashed["fix"] is None  # sharing it does not help: it aborts in any context
    assert fine["ok"] is True  # the command went on


def test_binding_registry_failure_is_classified_and_share_fixes_it(tmp_path):
    # A second copy of the package in the process fails as pybind11 does when
    # two copies register one type; the base, imported last, is fine.
    env = _package(
        tmp_path,
        "twice",
        "import builtins, vlcs\n"
        "if vlcs.current() is not None:\n"
        "    if getattr(builtins, '_vlcs_check_twice', False):\n"
        "        raise ImportError('generic_type: type \"Thing\" is already registered!')\n"
        "    builtins._vlcs_check_twice = True\n",
    )
    r = vlcs_cmd("check", "twice", env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stdout.startswith("FAIL twice: [binding-registry]")
    assert "generic_type" in r.stdout
    assert "fix: vlcs.share('twice')" in r.stdout  # tried in a second child: it passes shared


def test_timeout_is_reported(tmp_path):
    env = _package(
        tmp_path,
        "sleepy",
        "import time, vlcs\nif vlcs.current() is not None:\n    time.sleep(120)\n",
    )
    r = vlcs_cmd("check", "sleepy", "--timeout", "3", "--json", env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    (e,) = json.loads(r.stdout)
    assert e["kind"] == "timeout" and e["ok"] is False
    assert "importing the package in contexts" in e["error"]


def test_a_copy_that_is_the_base_s_is_not_private(tmp_path):
    # The package caches its first copy in a shared place and hands it out again.
    env = _package(
        tmp_path,
        "selfcache",
        "import builtins, sys\n"
        "if hasattr(builtins, '_vlcs_check_self'):\n"
        "    sys.modules[__name__] = builtins._vlcs_check_self\n"
        "else:\n"
        "    builtins._vlcs_check_self = sys.modules[__name__]\n",
    )
    r = vlcs_cmd("check", "selfcache", "--json", env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    (e,) = json.loads(r.stdout)
    assert e["kind"] == "not-private" and "selfcache (" in e["error"]
    assert e["fix"].startswith("vlcs.share('selfcache')")


def _tree_check_module():
    """This tree's vlcs/check/verdicts.py and packages.py, which need nothing
    but the standard library, as one namespace."""
    found = {}
    for name in ("verdicts", "packages"):
        path = ROOT / f"python/vlcs/check/{name}.py"
        spec = importlib.util.spec_from_file_location(f"vlcs_check_{name}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        found.update(vars(mod))
    return types.SimpleNamespace(**found)


def test_classification_of_error_texts():
    c = _tree_check_module()
    kind, why = c._classify(
        "ImportError: /x/_ext.cpython-311-x86_64-linux-gnu.so: undefined symbol: cblas_dgemm"
    )
    assert kind == "missing-symbol" and "cblas_dgemm" in why
    kind, _ = c._classify("TypeError: f(): incompatible function arguments. ...")
    assert kind == "binding-registry"
    kind, _ = c._classify('ImportError: generic_type: type "T" is already registered!')
    assert kind == "binding-registry"
    assert c._classify("ValueError: nope") == ("exception", "")
    stderr = (
        "vlcs-check: stage importing 3 submodules in contexts a and b at once\n"
        "vlcs-check: importing a: p.x\nvlcs-check: importing b: p.y\n"
        "Fatal Python error: Segmentation fault\n\n"
        "Current thread 0x00007f (most recent call first):\n"
        '  File "<frozen importlib._bootstrap>", line 241 in _call_with_frames_removed\n'
        '  File "/site/p/x.py", line 3 in <module>\n'
    )
    text = c._crash_details(stderr)
    assert "while importing 3 submodules in contexts a and b at once" in text
    assert "a: p.x, b: p.y" in text and "Segmentation fault" in text
    assert 'at File "/site/p/x.py", line 3' in text
    assert c._signal_name(-11) == "SIGSEGV"
    assert c.pip_name("sklearn") == "scikit-learn" and c.pip_name("google.protobuf") == "protobuf"
    assert c._skipped("numpy.tests.foo") and c._skipped("pkg.conftest")
    assert not c._skipped("numpy.linalg")


# The scientific stack `./run test` installs (tests/python/stack.txt) and the packages
# the runtime's own tests use, by import name: what a user runs `vlcs check` on first.
STACK = [
    "numpy",
    "scipy",
    "pandas",
    "pyarrow",
    "sklearn",
    "statsmodels",
    "numba",
    "cv2",
    "google.protobuf",
    "psutil",
    "numexpr",
    "charset_normalizer",
    "tomli",
    "chardet",
    "h5py",
    "matplotlib",
    "threadpoolctl",
    "torch",
]


def test_the_scientific_stack_passes():
    present = [p for p in STACK if importlib.util.find_spec(p.partition(".")[0]) is not None]
    if len(present) < len(STACK):  # the other CPythons' venvs have numpy and scipy only
        assert {"numpy", "scipy", "threadpoolctl"} <= set(present)
    r = vlcs_cmd("check", "--json", *present)
    doc = json.loads(r.stdout)
    failed = {e["package"]: f"[{e['kind']}] {e['error']}" for e in doc if not e["ok"]}
    assert not failed, failed
    assert r.returncode == 0
    assert [e["package"] for e in doc] == present
    # each one's copies were its own in the contexts, and its smoke test (where
    # vlcs knows one) agreed in a, b and the base
    from vlcs.check import SMOKE

    smoked = {e["package"]: e["smoke"] for e in doc if e["package"] in SMOKE}
    assert set(smoked.values()) == {"ok"}, smoked
    assert len(smoked) >= 3


def test_copy_mode_mypyc_pybind11_and_cython_packages_pass():
    # A copy is named after its original file's descriptor, which the base's
    # object resolves to as well: the check knows a context's extension by
    # the address of the object that defines it (a mypyc module's, in its
    # group's shared library)
    present = [p for p in ("tomli", "chardet", "scipy") if importlib.util.find_spec(p)]
    assert "scipy" in present
    env = {**os.environ, "VLCS_MODE": "copies"}
    r = vlcs_cmd("check", "--json", *present, env=env)
    doc = json.loads(r.stdout)
    failed = {e["package"]: f"[{e['kind']}] {e['error']}" for e in doc if not e["ok"]}
    assert not failed, failed
    assert all(e["extension_modules"] > 0 and e["mode"] == "copies" for e in doc), doc


COPY_OR_BASE = """
import json, sys, numpy
import vlcs
from vlcs.check.child import _code_file, _copy_bases
a = vlcs.VLC(cpus="0", name="a")
def inside():
    import numpy
    return _code_file(sys.modules["numpy._core._multiarray_umath"])
mine = a.submit(inside).result()
base = _code_file(sys.modules["numpy._core._multiarray_umath"])
bases = _copy_bases(a)
print(json.dumps({"mode": a.mode, "mine": mine[1] in bases, "base": base[1] in bases}))
"""


def test_copy_mode_check_tells_a_context_s_copy_from_the_base_s_object():
    env = {**os.environ, "VLCS_MODE": "copies"}
    argv = [sys.executable, "-c", COPY_OR_BASE]
    r = subprocess.run(argv, capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout)
    assert got == {"mode": "copies", "mine": True, "base": False}, got


def test_python_own_checks_a_package_in_runtimes_of_its_own():
    # vlcs check --python own: the package in two contexts with a CPython of
    # their own each (tasks and results by pickle), then in the base
    r = vlcs_cmd("check", "--python", "own", "--json", "tomli", "numpy")
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert [e["package"] for e in doc] == ["tomli", "numpy"]
    for e in doc:
        # a namespace each (copies when the suite runs with VLCS_MODE=copies)
        want = "copies" if os.environ.get("VLCS_MODE") == "copies" else "namespace"
        assert e["ok"] is True and e["python"] == "own" and e["mode"] == want, e
        assert e["extension_modules"] > 0 and e["smoke"] == "ok", e
    text = vlcs_cmd("check", "--python", "own", "tomli")
    assert text.stdout.startswith("PASS tomli (") and "a Python of its own" in text.stdout
    bad = vlcs_cmd("check", "--python", "mine", "tomli")
    assert bad.returncode == 2 and "--python" in bad.stderr

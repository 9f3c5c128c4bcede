"""VLCS_TRACE=imports says which owner loaded which module from where (as
python -v does), and a failed import's traceback shows the user's frames,
not the import machinery's (as CPython hides importlib's)."""

from __future__ import annotations

import os
import subprocess
import sys

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")

FAIL = r"""
import sys, traceback, vlcs
sys.path.insert(0, sys.argv[1])
ctx = vlcs.VLC(cpus="0", name="t")
try:
    with ctx:
        import broken_pkg
except ImportError:
    print("".join(traceback.format_exc()))
"""


def _run(code: str, trace: bool) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("VLCS_TRACE", None)
    if trace:
        env["VLCS_TRACE"] = "imports"
    return subprocess.run(
        [sys.executable, "-c", code, DATA], capture_output=True, text=True, env=env, timeout=300
    )


def test_trace_names_owner_module_origin_and_how():
    p = _run("import vlcs\nc = vlcs.VLC(name='tr')\nwith c:\n    import numpy\n", trace=True)
    assert p.returncode == 0, p.stderr[-3000:]
    lines = [x for x in p.stderr.splitlines() if x.startswith("vlcs import: tr: ")]
    native = [x for x in lines if "numpy._core._multiarray_umath from " in x]
    assert native and native[0].endswith("(native code loaded into the context's namespace)")
    assert any(x.startswith("vlcs import: tr: numpy from ") and "afresh" in x for x in lines)
    quiet = _run("import vlcs\nc = vlcs.VLC(name='tr')\nwith c:\n    import numpy\n", trace=False)
    assert "vlcs import:" not in quiet.stderr


def test_failed_import_traceback_hides_the_machinery():
    p = _run(FAIL, trace=False)
    assert p.returncode == 0, p.stderr[-3000:]
    tb = p.stdout
    assert "broken_pkg refuses to import" in tb
    assert "broken_pkg.py" in tb  # the user's failing module is shown
    for internal in ("_isolation/loader.py", "_isolation/owners.py", "frozen importlib"):
        assert internal not in tb, tb
    traced = _run(FAIL, trace=True)
    assert "_isolation/loader.py" in traced.stdout  # VLCS_TRACE=imports keeps them
    assert "vlcs import: t: broken_pkg failed, rolled back" in traced.stderr

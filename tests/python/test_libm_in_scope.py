"""Libraries the interpreter executable links are in scope in every
context's namespace: an extension module that uses libm without listing it
(pandas' tslibs, mypyc helpers: "undefined symbol: nextafter") imports in a
context as it does in a plain process, and gives the same results."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "nolibm", "nolibm_ext.c")

CASE = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import vlcs
a, b = vlcs.VLC(cpus="0", name="a"), vlcs.VLC(name="b")
with a:
    import nolibm_ext as ma
with b:
    import nolibm_ext as mb
import nolibm_ext as base
print(json.dumps({
    "distinct": len({id(ma), id(mb), id(base)}) == 3,
    "a": a.submit(ma.calc, 7.5, 2.0).result(),
    "b": b.submit(mb.calc, 7.5, 2.0).result(),
    "base": base.calc(7.5, 2.0),
}))
"""


def test_extension_using_libm_unlisted_imports_in_two_contexts(tmp_path):
    ext = tmp_path / ("nolibm_ext" + sysconfig.get_config_var("EXT_SUFFIX"))
    include = sysconfig.get_paths()["include"]
    # -fno-builtin: the calls stay calls into libm; no -lm, as those packages.
    subprocess.run(
        ["cc", "-shared", "-fPIC", "-O1", "-fno-builtin", f"-I{include}", SRC, "-o", str(ext)],
        check=True,
    )
    needed = subprocess.run(["readelf", "-d", str(ext)], capture_output=True, text=True).stdout
    assert "libm.so" not in needed  # the precondition: libm is not listed
    p = subprocess.run(
        [sys.executable, "-c", CASE, str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads(p.stdout)
    assert r["distinct"], r
    assert r["a"] == r["b"] == r["base"] == [1.5, 7.499999999999999], r

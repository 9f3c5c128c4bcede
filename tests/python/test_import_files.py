"""What a context's import asks the file system, counted by strace: on a
cluster's parallel file system each metadata call costs about a
millisecond, so a later context importing what an earlier one found asks
nothing of the package's sources and folders; only the native libraries
its new linker namespace maps are opened again, once each."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

SCRIPT = r"""
import os, vlcs
a, b = vlcs.VLC(cpus="0"), vlcs.VLC(cpus="1")
os.write(2, b"MARK-FIRST\n")
with a:
    import numpy
os.write(2, b"MARK-SECOND\n")
with b:
    import numpy as second
    assert second is not numpy and second.arange(4.0).sum() == 6.0
os.write(2, b"MARK-END\n")
import importlib, numpy as base
importlib.invalidate_caches()
assert base.arange(3).sum() == 3 and base.__file__ == numpy.__file__
"""

CALLS = "openat,open,newfstatat,statx,stat,lstat,access,faccessat2,readlink,readlinkat,getdents64"


def _calls_between(log: str, start: str, end: str) -> list[str]:
    """The file-system calls strace saw between two markers, on files
    outside /proc (procfs is the kernel's, not the file system's)."""
    out, on = [], False
    for line in log.splitlines():
        if start in line:
            on = True
        elif end in line:
            on = False
        elif on and re.search(rf"\b({CALLS.replace(',', '|')})\(", line):
            m = re.search(r'"([^"]*)"', line)
            if m and m.group(1) and not m.group(1).startswith("/proc/"):
                out.append(line.split(None, 1)[1])
    return out


def _first_and_second(tmp_path, **env: str) -> tuple[list[str], list[str]]:
    """The file-system calls of SCRIPT's first and second context, with
    the environment variables env."""
    if shutil.which("strace") is None:
        pytest.fail("strace is missing: ./run installs it")
    log = tmp_path / "calls"
    argv = ["strace", "-f", "-o", str(log), "-e", f"trace={CALLS},write"]
    p = subprocess.run(
        [*argv, sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **env},
    )
    assert p.returncode == 0, p.stderr[-3000:]
    text = log.read_text()
    return (
        _calls_between(text, "MARK-FIRST", "MARK-SECOND"),
        _calls_between(text, "MARK-SECOND", "MARK-END"),
    )


def test_a_second_context_importing_numpy_asks_nothing_of_its_python_files(tmp_path):
    first, second = _first_and_second(tmp_path)
    import numpy

    package = os.path.dirname(numpy.__file__)
    python_files = [c for c in second if package in c and not re.search(r"\.so[.\"]", c)]
    assert python_files == [], python_files[:20]
    # what remains is the new namespace opening each of its libraries once,
    # by the path ld.so would find (vlcs found it already): no search, no
    # miss, not ld.so.cache but for ld.so itself, which libc names
    assert len(second) <= 10, second
    assert len(second) * 20 < len(first), (len(first), second)
    assert not [c for c in second if "ENOENT" in c], second
    opened = [re.search(r'"([^"]*)"', c).group(1) for c in second]
    assert len(opened) == len(set(opened)), second


def test_a_second_copy_mode_context_importing_numpy_asks_almost_nothing(tmp_path):
    """Copy mode remembers where it found each library and holds the files
    open: a later context copies from them without a lookup."""
    first, second = _first_and_second(tmp_path, VLCS_MODE="copies")
    assert len(first) > 100, len(first)  # the first context did look
    assert len(second) <= 10, second


MADE_LATER = r"""
import importlib, json, os, sys, vlcs
folder = sys.argv[1]
sys.path.insert(0, folder)
a, b = vlcs.VLC(cpus="0"), vlcs.VLC(cpus="1")
seen = {}
for who, ctx in (("a", a), ("b", b)):
    with ctx:
        try:
            import made_later
        except ModuleNotFoundError:
            seen[who + "_before"] = "missing"
with open(os.path.join(folder, "made_later.py"), "w") as f:
    f.write("WHO = 'made'\n")
with a:  # the context that looked tries again, as pyximport's users do
    import made_later
    seen["a_after"] = made_later.WHO
importlib.invalidate_caches()  # what Python asks after making a module
with b:
    import made_later
    seen["b_after"] = made_later.WHO
import made_later
seen["base"] = made_later.WHO
print(json.dumps(seen))
"""


def test_a_module_made_while_the_process_runs_is_found(tmp_path):
    import json

    p = subprocess.run(
        [sys.executable, "-c", MADE_LATER, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    assert json.loads(p.stdout.strip().splitlines()[-1]) == {
        "a_before": "missing",
        "b_before": "missing",
        "a_after": "made",
        "b_after": "made",
        "base": "made",
    }

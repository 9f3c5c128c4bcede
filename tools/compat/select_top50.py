"""Find, in download-rank order, the PyPI packages whose CPython 3.11 manylinux
x86_64 wheel ships compiled extension modules (how top50.tsv was chosen).

Usage::

    python tools/compat/select_top50.py PYPI_TSV [--count 60] [--dir /tmp/top50wheels]

PYPI_TSV has the columns name, version, month, rank_among_15000_most_downloaded,
summary.  For each ranked name, in order, the script downloads the wheel (network:
``pip download --no-deps --only-binary=:all:`` for that platform) and lists its
files.  A wheel ships an extension module when it holds a ``.so`` tagged
``cpython-311``/``abi3``, or an untagged ``.so`` (outside ``*.libs/``) that exports
a ``PyInit_`` symbol (``nm -D``).  One JSON line per package goes to stdout; it
stops after ``--count`` packages with extension modules.  Whether they install
together is decided afterwards (see README.md).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

TAGGED = re.compile(r"\.(cpython-311-x86_64-linux-gnu|cpython-311|abi3)\.so$")
PLATFORMS = ("manylinux2014_x86_64", "manylinux_2_28_x86_64", "manylinux_2_17_x86_64")


def ranked(tsv: Path) -> list[tuple[int, str]]:
    """(rank, name) of every ranked row, best first."""
    out = []
    with tsv.open() as f:
        next(f)
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if len(cols) > 3 and cols[3].strip():
                out.append((int(cols[3]), cols[0]))
    return sorted(out)


def exports_pyinit(zf: zipfile.ZipFile, member: str) -> bool:
    """Whether the shared object member defines a PyInit_ symbol."""
    with tempfile.NamedTemporaryFile(suffix=".so") as t:
        t.write(zf.read(member))
        t.flush()
        p = subprocess.run(["nm", "-D", "--defined-only", t.name], capture_output=True, text=True)
    return "PyInit_" in p.stdout


def scan_wheel(path: Path) -> dict[str, Any]:
    """Extension modules and top-level names of one wheel."""
    zf = zipfile.ZipFile(path)
    names = zf.namelist()
    sos = [n for n in names if n.endswith(".so")]
    ext = [n for n in sos if TAGGED.search(n)]
    ext += [n for n in sos if not TAGGED.search(n) and ".libs/" not in n and exports_pyinit(zf, n)]
    tops = set()
    for n in names:
        first = n.split("/")[0]
        if ".dist-info" in first or ".data" in first:
            continue
        if n.count("/") == 1 and n.endswith("/__init__.py") or "/" in n and TAGGED.search(n):
            tops.add(first)
        elif "/" not in n and n.endswith((".py", ".so")):
            tops.add(n.split(".")[0])
    return {"n_ext": len(ext), "ext": ext[:5], "tops": sorted(tops)}


def download(name: str, dest: Path) -> Path | str:
    """The wheel's path, or why there is none."""
    spec = "torch==2.13.0" if name == "torch" else name  # the CPU build on this disk
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:"]
    cmd += ["--python-version", "3.11", "-d", str(dest), spec]
    for p in PLATFORMS:
        cmd += ["--platform", p]
    r = subprocess.run(cmd, capture_output=True, text=True)
    wheels = sorted(dest.glob("*.whl"))
    if wheels:
        return wheels[0]
    return "no wheel for this platform: " + (r.stderr.strip().splitlines() or ["?"])[-1]


def main() -> int:
    """Command line: see the module docstring."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("pypi_tsv", type=Path)
    p.add_argument("--count", type=int, default=60)
    p.add_argument("--dir", type=Path, default=Path("/tmp/top50wheels"))
    args = p.parse_args()
    found = 0
    for rank, name in ranked(args.pypi_tsv):
        if found >= args.count:
            break
        got = download(name, args.dir / name)
        row: dict[str, Any] = {"rank": rank, "name": name}
        if isinstance(got, str):
            row["error"] = got
        else:
            row.update(wheel=got.name, version=got.name.split("-")[1], **scan_wheel(got))
            found += bool(row["n_ext"])
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""What a user who ran only `pip install vlcs-*.whl numpy` can do, checked
in that venv (tools/wheel/check.sh runs it on a PATH without a compiler):
two contexts each with a private numpy, a place, a trace, `vlcs exec`,
`vlcs topo`, `vlcs doctor`; with --plots, the pictures too.  Prints one
line per check; exits non-zero at the first that fails."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import vlcs

BIN = Path(sys.executable).parent


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "vlcs"), *args], capture_output=True, text=True, timeout=300)


def check(what: str, ok: bool, detail: object = "") -> None:
    print(f"{'ok' if ok else 'FAILED':7}{what}" + ("" if ok else f": {detail}"), flush=True)
    if not ok:
        sys.exit(1)


def private_numpy() -> None:
    a, b = vlcs.VLC(cpus="0", name="a"), vlcs.VLC(cpus="1", name="b")
    with a:
        import numpy as np_a
    with b:
        import numpy as np_b
    import numpy as np

    check("two contexts import a numpy each", len({id(np_a), id(np_b), id(np)}) == 3)
    with a:
        sa = float(np_a.linalg.solve(np_a.eye(50) * 2, np_a.ones(50)).sum())
    with b:
        sb = float(np_b.linalg.solve(np_b.eye(50) * 2, np_b.ones(50)).sum())
    check("each numpy computes", sa == sb == 25.0, (sa, sb))
    check("the base's numpy after them", float(np.ones(4).sum()) == 4.0)
    check("the base's CPUs untouched", sorted(os.sched_getaffinity(0)) == [0, 1])


def place() -> None:
    with vlcs.VLC(cpus="core:1", name="placed"):
        inside = sorted(os.sched_getaffinity(0))
    check('a context on the place "core:1"', inside == [1], inside)
    topo = cli("topo", "--json")
    cores = json.loads(topo.stdout)["topology"].get("core") if topo.returncode == 0 else None
    check("vlcs topo", cores == [[0], [1]], topo.stderr or topo.stdout)


def trace(tmp: Path, plots: bool) -> None:
    path = tmp / "trace.json"
    with vlcs.trace(path):
        with vlcs.VLC(cpus="0", name="traced"):
            sum(range(1000))
    events = json.loads(path.read_text())["traceEvents"]
    check("a trace", any(e.get("name") == "inside traced" for e in events))
    png = tmp / "timeline.png"
    shown = cli("trace", "show", str(path), "-o", str(png))
    if plots:
        check("vlcs trace show draws", shown.returncode == 0 and png.exists(), shown.stderr)
    else:
        said = shown.stderr.strip()
        check(
            "vlcs trace show without matplotlib says what it skipped",
            shown.returncode == 1 and not png.exists() and "pip install 'vlcs[plots]'" in said,
            said,
        )


def exec_instances(tmp: Path) -> None:
    for i in range(2):
        (tmp / f"in.{i}").write_text("x" * (10 * (i + 1)))
    wc = shutil.which("wc") or "/usr/bin/wc"
    r = cli("exec", "-n", "2", "--", wc, "-c", str(tmp / "in.{i}"))
    lines = sorted(line.split()[:2] for line in r.stdout.splitlines())
    check("vlcs exec -n 2 wc", r.returncode == 0 and lines == [["[0]", "10"], ["[1]", "20"]], r)


def doctor(plots: bool, compiler: bool) -> None:
    r = cli("doctor", "--json")
    found = {f["name"]: f for f in json.loads(r.stdout)} if r.returncode == 0 else {}
    check("vlcs doctor", bool(found), r.stderr)
    check("  finds hwloc", found["hwloc"]["state"] == "ok", found["hwloc"])
    cc = "ok" if compiler else "note"
    check(f"  compiler {cc}", found["compiler"]["state"] == cc, found["compiler"])
    want = "ok" if plots else "missing"
    check(f"  pictures {want}", found["pictures"]["state"] == want, found["pictures"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--plots", action="store_true", help="matplotlib is installed")
    ap.add_argument("--no-compiler", action="store_true", help="PATH has no C compiler")
    args = ap.parse_args()
    check(f"vlcs {vlcs.__version__} from {Path(vlcs.__file__).parent}", True)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        private_numpy()
        place()
        trace(tmp, args.plots)
        exec_instances(tmp)
        doctor(args.plots, not args.no_compiler)


if __name__ == "__main__":
    main()

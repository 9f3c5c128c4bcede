"""Run installed packages' own test suites plainly and inside one vlcs
context, and compare the outcomes test by test.

Each suite runs twice in fresh interpreters: ``python -m pytest --pyargs
...`` as a user would, and the same with ``-p vlcs_suite_plugin`` (every
test module, conftest and test inside one context; see that file).  A test
that passes plainly and does not pass inside the context fails the run;
tests that fail or are skipped the same way in both are the package's own
business.  ``--suites test`` is what ``./run test`` runs (a few minutes);
``--suites soak`` adds larger ones (``./run soak``).

    python tools/suites/run.py                    # the "test" suites
    python tools/suites/run.py --suites soak --json out.json
    python tools/suites/run.py --only scipy-workers
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent

# name -> (set, pytest arguments after --pyargs); "test" is in both sets.
SUITES: dict[str, tuple[str, list[str]]] = {
    # ./run soak: numpy's linear algebra, the longest (a minute, both ways)
    "numpy-linalg": ("soak", ["numpy.linalg.tests.test_linalg", "-k", "not test_large"]),
    "numpy-fft": ("test", ["numpy.fft"]),
    "scipy-fft-workers": ("test", ["scipy.fft.tests.test_multithreading"]),
    "scipy-optimize-workers": (
        "test",
        [
            "scipy.optimize.tests.test_optimize",
            "-k",
            "TestBrute or TestWorkers or test_equal_bounds or too_many_open_files",
        ],
    ),
    "h5py-file": ("test", ["h5py.tests.test_file"]),
    "pandas-frame-constructors": ("test", ["pandas.tests.frame.test_constructors"]),
    "sklearn-pipeline": ("test", ["sklearn.tests.test_pipeline"]),
    # Intel's packages over oneMKL's libmkl_rt and Intel's OpenMP
    "mkl-fft": ("test", ["mkl_fft.tests"]),
    "mkl-service": ("test", ["mkl.tests.test_mkl_service"]),
    "numpy-core-multiarray": ("soak", ["numpy._core.tests.test_multiarray"]),
    "numpy-random": ("soak", ["numpy.random"]),
    "scipy-linalg": ("soak", ["scipy.linalg.tests.test_basic"]),
    "scipy-optimize": ("soak", ["scipy.optimize.tests.test_optimize"]),
    "pandas-groupby": ("soak", ["pandas.tests.groupby.test_groupby"]),
    "sklearn-linear": ("soak", ["sklearn.linear_model.tests.test_logistic"]),
}


def outcomes(xml_path: Path) -> dict[str, str]:
    """Test id -> passed / failed / error / skipped, from a JUnit XML report."""
    out: dict[str, str] = {}
    if not xml_path.exists():
        return out
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        tid = f"{case.get('classname') or case.get('file')}::{case.get('name')}"
        kinds = {child.tag for child in case}
        outcome = "passed"
        for tag in ("failure", "error", "skipped"):
            if tag in kinds:
                outcome = {"failure": "failed"}.get(tag, tag)
                break
        out[tid] = outcome
    return out


def run_once(args: list[str], in_context: bool, workdir: Path, timeout: float) -> dict:
    xml = workdir / ("context.xml" if in_context else "plain.xml")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--pyargs", *args]
    cmd += [f"--junitxml={xml}", "-o", "junit_family=xunit1"]
    env = dict(os.environ)
    if in_context:
        cmd[3:3] = ["-p", "vlcs_suite_plugin"]
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), env.get("PYTHONPATH")) if p)
    t0 = time.monotonic()
    try:
        p = subprocess.run(
            cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout
        )
        code, tail = p.returncode, (p.stdout + p.stderr)[-3000:]
    except subprocess.TimeoutExpired as e:
        code, tail = -1, f"timed out after {timeout:.0f} s: {str(e.stdout or '')[-2000:]}"
    return {
        "outcomes": outcomes(xml),
        "returncode": code,
        "seconds": round(time.monotonic() - t0, 1),
        "tail": tail,
    }


def compare(name: str, args: list[str], timeout: float) -> dict:
    with tempfile.TemporaryDirectory(prefix=f"vlcs-suite-{name}-") as tmp:
        work = Path(tmp)
        plain = run_once(args, False, work, timeout)
        inside = run_once(args, True, work, timeout)
    a, b = plain["outcomes"], inside["outcomes"]
    regressed = sorted(t for t, o in a.items() if o == "passed" and b.get(t) != "passed")
    differs = sorted(t for t in set(a) | set(b) if a.get(t) != b.get(t))
    problems = []
    if not any(o == "passed" for o in a.values()):
        problems.append(
            f"the plain run reported no test (exit {plain['returncode']}): {plain['tail']}"
        )
    if a and not b:
        problems.append(
            f"the run in a context reported no test (exit {inside['returncode']}): {inside['tail']}"
        )
    return {
        "suite": name,
        "pytest": args,
        "tests": len(a),
        "passed_plain": sum(o == "passed" for o in a.values()),
        "passed_in_context": sum(o == "passed" for o in b.values()),
        "seconds_plain": plain["seconds"],
        "seconds_in_context": inside["seconds"],
        "regressed": regressed,
        "differs": {t: [a.get(t), b.get(t)] for t in differs},
        "problems": problems,
        "ok": not regressed and not problems,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--suites", choices=["test", "soak"], default="test")
    p.add_argument(
        "--only", action="append", default=[], metavar="NAME", help="one suite (repeatable)"
    )
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per run")
    p.add_argument("--json", metavar="FILE", help="write the results as JSON")
    p.add_argument("--list", action="store_true", help="list the suites and exit")
    args = p.parse_args(argv)
    if args.list:
        for name, (which, pyargs) in SUITES.items():
            print(f"{name:28} {which:5} {' '.join(pyargs)}")
        return 0
    unknown = [n for n in args.only if n not in SUITES]
    if unknown:
        p.error(f"unknown suite {unknown[0]!r}; --list shows them")
    names = args.only or [
        n for n, (which, _) in SUITES.items() if which == "test" or args.suites == "soak"
    ]
    results = []
    for i, name in enumerate(names, 1):
        print(
            f"[{i}/{len(names)}] {name}: plain, then inside a context...",
            file=sys.stderr,
            flush=True,
        )
        r = compare(name, SUITES[name][1], args.timeout)
        results.append(r)
        verdict = "ok" if r["ok"] else "FAIL"
        print(
            f"{verdict:4} {name}: {r['tests']} tests, passed {r['passed_plain']} plainly and "
            f"{r['passed_in_context']} in a context ({r['seconds_plain']} s / "
            f"{r['seconds_in_context']} s)",
            flush=True,
        )
        for t in r["regressed"]:
            print(f"     passes plainly, not in a context: {t} ({r['differs'][t][1]})")
        for why in r["problems"]:
            print(f"     {why}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    bad = sum(not r["ok"] for r in results)
    print(f"{len(results) - bad} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())

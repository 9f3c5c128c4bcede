"""Re-run ``vlcs check`` over the top-50 PyPI packages with extension modules.

Reads ``top50.tsv`` (next to this file), runs ``PYTHON -m vlcs check --json``
once per import name, one package at a time, rewrites the result columns of
``top50.tsv`` (and the installed version), keeps the raw JSON in
``results.json`` and writes ``report.md`` (a table and "N of 50 pass (P %)").

Usage (from the repository root)::

    # once: a CPython 3.11 venv with vlcs in it
    python3.11 -m venv /tmp/top50venv
    /tmp/top50venv/bin/pip install "scikit-build-core>=0.9" cmake ninja
    /tmp/top50venv/bin/pip install --no-build-isolation .

    # install the listed versions (the only step that needs the network), then check
    python tools/compat/run_top50.py /tmp/top50venv/bin/python --install
    python tools/compat/run_top50.py /tmp/top50venv/bin/python            # check only
    python tools/compat/run_top50.py /tmp/top50venv/bin/python --only cv2 torch

Rows whose result is ``not-installable`` are kept as they are and not checked.
The script itself needs only the standard library; any Python 3.10+ runs it.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
COLUMNS = ("rank", "distribution", "version", "import_name", "result", "reason")
NOT_INSTALLABLE = "not-installable"
REASON_MAX = 600
"""Characters of a failure's reason kept in top50.tsv (results.json has it all)."""


def read_rows(tsv: Path) -> list[dict[str, str]]:
    """The rows of top50.tsv, as dicts keyed by :data:`COLUMNS`."""
    with tsv.open(newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    for r in rows:
        for c in COLUMNS:
            r.setdefault(c, "")
            r[c] = r[c] or ""
    return rows


def write_rows(tsv: Path, rows: Sequence[dict[str, str]]) -> None:
    """Write rows back to top50.tsv (tab-separated, one header line)."""
    with tsv.open("w", newline="") as f:
        w = csv.DictWriter(
            f, fieldnames=COLUMNS, delimiter="\t", lineterminator="\n", extrasaction="ignore"
        )
        w.writeheader()
        w.writerows(rows)


def one_line(text: str, limit: int = REASON_MAX) -> str:
    """text on one line (tabs and newlines folded), at most limit characters."""
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 3] + "..."


def pip_install(python: str, rows: Sequence[dict[str, str]]) -> None:
    """pip install each row's distribution==version into python's environment."""
    for r in rows:
        if r["result"] == NOT_INSTALLABLE:
            continue
        spec = f"{r['distribution']}=={r['version']}" if r["version"] else r["distribution"]
        print(f"pip install {spec}", file=sys.stderr, flush=True)
        p = subprocess.run(
            [python, "-m", "pip", "install", "-q", "--only-binary=:all:", spec],
            capture_output=True,
            text=True,
        )
        if p.returncode:
            tail = (p.stderr.strip().splitlines() or ["?"])[-1]
            print(f"  failed: {tail}", file=sys.stderr, flush=True)


def installed_versions(python: str, dists: Sequence[str]) -> dict[str, str | None]:
    """{distribution: installed version, or None} in python's environment."""
    code = (
        "import importlib.metadata as m, json, sys\n"
        "out = {}\n"
        "for d in sys.argv[1:]:\n"
        "    try: out[d] = m.version(d)\n"
        "    except m.PackageNotFoundError: out[d] = None\n"
        "print(json.dumps(out))\n"
    )
    p = subprocess.run([python, "-c", code, *dists], capture_output=True, text=True, check=True)
    return json.loads(p.stdout)


def vlcs_check(python: str, import_name: str, timeout: float) -> dict[str, Any]:
    """The JSON entry of ``vlcs check --json IMPORT_NAME`` (run from an empty folder),
    or a synthetic failed entry when the command gave no JSON."""
    with tempfile.TemporaryDirectory(prefix="top50-") as cwd:
        t0 = time.monotonic()
        p = subprocess.run(
            [python, "-m", "vlcs", "check", "--json", "--timeout", str(timeout), import_name],
            capture_output=True,
            text=True,
            cwd=cwd,
        )
    try:
        entries = json.loads(p.stdout)
        return dict(entries[0])
    except (ValueError, IndexError, KeyError, TypeError):
        tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
        return {
            "package": import_name,
            "ok": False,
            "kind": "check-failed",
            "error": f"vlcs check exited with {p.returncode} and no JSON: {tail}",
            "seconds": round(time.monotonic() - t0, 1),
        }


def result_of(entry: dict[str, Any]) -> tuple[str, str]:
    """(result, reason) columns for one vlcs check entry."""
    if entry.get("ok"):
        return "PASS", ""
    reason = f"[{entry.get('kind')}] {entry.get('error')}"
    if entry.get("fix"):
        reason += f" | fix: {entry['fix']}"
    return "FAIL", one_line(reason)


def md_cell(text: str) -> str:
    """text safe inside a markdown table cell."""
    return text.replace("|", "\\|")


def write_report(path: Path, rows: Sequence[dict[str, str]], python: str) -> tuple[int, int]:
    """report.md: the figure, the table, the failures; returns (passed, total)."""
    counted = [r for r in rows if r["result"] != NOT_INSTALLABLE]
    total = len(counted)
    passed = sum(r["result"] == "PASS" for r in counted)
    pct = 100.0 * passed / total if total else 0.0
    goal = "met" if pct >= 90.0 else "not met"
    ver = subprocess.run(
        [python, "-c", "import sys; print(sys.version.split()[0])"], capture_output=True, text=True
    ).stdout.strip()
    lines = [
        "# vlcs check: top 50 PyPI packages with extension modules",
        "",
        f"**{passed} of {total} pass ({pct:.0f} %)** — goal (at least 90 %): {goal}.",
        "",
        f"Run {datetime.date.today().isoformat()} with CPython {ver} (`{python}`), "
        "`vlcs check --json` one package per invocation; "
        "see docs/compatibility.md for the ranking.",
        "",
        "| rank | distribution | version | import | result | reason |",
        "|---:|---|---|---|---|---|",
    ]
    for r in rows:
        reason = r["reason"] if len(r["reason"]) <= 160 else r["reason"][:157] + "..."
        lines.append(
            f"| {r['rank']} | {r['distribution']} | {r['version']} | `{r['import_name']}` "
            f"| {r['result']} | {md_cell(reason)} |"
        )
    fails = [r for r in counted if r["result"] != "PASS"]
    skipped = [r for r in rows if r["result"] == NOT_INSTALLABLE]
    if fails:
        lines += ["", "## Failures", ""]
        for r in fails:
            lines.append(f"- `{r['import_name']}` ({r['distribution']}): {md_cell(r['reason'])}")
    if skipped:
        lines += ["", "## Not counted (not installable)", ""]
        for r in skipped:
            lines.append(f"- {r['distribution']} {r['version']} (rank {r['rank']}): {r['reason']}")
    path.write_text("\n".join(lines) + "\n")
    return passed, total


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: see the module docstring."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("python", help="the venv's python (vlcs and the packages installed in it)")
    p.add_argument("--tsv", type=Path, default=HERE / "top50.tsv")
    p.add_argument("--report", type=Path, default=HERE / "report.md")
    p.add_argument("--results", type=Path, default=HERE / "results.json")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per package child")
    p.add_argument("--install", action="store_true", help="pip install the listed versions first")
    p.add_argument("--only", nargs="+", metavar="IMPORT", help="check only these import names")
    args = p.parse_args(argv)

    rows = read_rows(args.tsv)
    if args.install:
        pip_install(args.python, rows)
    versions = installed_versions(args.python, [r["distribution"] for r in rows])
    results: dict[str, Any] = {}
    if args.results.exists():
        results = json.loads(args.results.read_text())
    for i, r in enumerate(rows, 1):
        if r["result"] == NOT_INSTALLABLE:
            continue
        if args.only and r["import_name"] not in args.only:
            continue
        have = versions.get(r["distribution"])
        if have is None:
            r["result"], r["reason"] = "FAIL", "[not-installed] not installed in this venv"
            continue
        r["version"] = have
        print(f"[{i}/{len(rows)}] vlcs check {r['import_name']}", file=sys.stderr, flush=True)
        entry = vlcs_check(args.python, r["import_name"], args.timeout)
        results[r["import_name"]] = entry
        r["result"], r["reason"] = result_of(entry)
        print(f"  {r['result']} {r['reason'][:200]}", file=sys.stderr, flush=True)
        write_rows(args.tsv, rows)  # as we go: an interrupted run keeps what it has
        args.results.write_text(json.dumps(results, indent=2) + "\n")
    write_rows(args.tsv, rows)
    passed, total = write_report(args.report, rows, args.python)
    print(f"{passed} of {total} pass ({100.0 * passed / max(total, 1):.0f} %)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The parent of ``vlcs check``: runs the child for each package (with a
timeout, in a session of its own), retries with ``vlcs.share`` where that
may fix it, and prints or returns the entries."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from vlcs.check.packages import import_names, installed, pip_name
from vlcs.check.verdicts import _share_names, _verdict

DEFAULT_TIMEOUT = 300.0
"""Seconds one package's child may run (each run: the check, then a share trial)."""


def _run_child(
    pkg: str, timeout: float, share: Sequence[str] = (), python: str = "shared"
) -> dict[str, Any]:
    """Run the child for pkg; returns {result, returncode, stderr, timed_out, seconds}."""
    with tempfile.TemporaryDirectory(prefix="vlcs-check-") as tmp:
        out = os.path.join(tmp, "result.json")
        argv = [sys.executable, "-m", "vlcs.check.child", pkg, "--result", out]
        argv += ["--python", python]
        for s in share:
            argv += ["--share", s]
        t0 = time.monotonic()
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own group: a timeout ends it and its children
        )
        timed_out = False
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            stdout, stderr = proc.communicate()
        result = None
        if os.path.exists(out):
            try:
                result = json.loads(Path(out).read_text())
            except ValueError:
                result = None
        return {
            "result": result,
            "returncode": proc.returncode,
            "stderr": stderr.decode(errors="replace"),
            "stdout": stdout.decode(errors="replace"),
            "timed_out": timed_out,
            "seconds": round(time.monotonic() - t0, 1),
        }


def check_package(
    pkg: str,
    timeout: float = DEFAULT_TIMEOUT,
    *,
    try_share: bool = True,
    progress: Callable[[str], None] | None = None,
    python: str = "shared",
) -> dict[str, Any]:
    """Check one package (a child process; then, where it fails in contexts
    but not in the base, a second child with ``vlcs.share`` to test the fix).
    python="own": in two contexts with a CPython runtime of their own each
    (``vlcs.share`` is no fix there: nothing is tried).

    >>> check_package("numpy")["ok"]   # doctest: +SKIP
    True
    """
    entry = _verdict(pkg, _run_child(pkg, timeout, python=python))
    if python == "own" or entry["ok"] or not try_share or entry["kind"] in ("base", "child"):
        return entry
    names = _share_names(pkg, entry)
    call = "vlcs.share(" + ", ".join(repr(n) for n in names) + ")"
    if progress:
        progress(f"  {pkg} fails in contexts; trying {call}...")
    again = _verdict(pkg, _run_child(pkg, timeout, share=names))
    entry["seconds"] = round(entry["seconds"] + again["seconds"], 1)
    if again["ok"]:
        smoked = ", smoke test included" if again["smoke"] == "ok" else ""
        entry["fix"] = (
            f"{call} before any context imports it: one copy, shared with the base "
            f"(checked: with it the check passes{smoked})"
        )
    else:
        entry["fix_tried"] = f"{call} does not help: {again['error']}"
    return entry


def check_packages(
    packages: Sequence[str],
    timeout: float = DEFAULT_TIMEOUT,
    progress: bool = True,
    python: str = "shared",
) -> list[dict[str, Any]]:
    """Check each package in turn; progress on stderr."""
    out = []

    def say(text: str) -> None:
        if progress:
            print(text, file=sys.stderr, flush=True)

    for i, pkg in enumerate(packages, 1):
        say(f"checking {pkg} ({i}/{len(packages)})...")
        out.append(check_package(pkg, timeout, progress=say if progress else None, python=python))
    return out


def format_entry(e: dict[str, Any]) -> str:
    """One line (two with a fix) for a report entry."""
    if e["ok"]:
        line = (
            f"PASS {e['package']} ({e['submodules']} submodules, "
            f"{e['extension_modules']} extension modules, smoke: {e['smoke']}"
            + (", a Python of its own)" if e.get("python") == "own" else ")")
        )
        if e.get("note"):
            line += f"\n     note: {e['note']}"
        return line
    line = f"FAIL {e['package']}: [{e['kind']}] {e['error']}"
    if e.get("fix"):
        line += f"\n     fix: {e['fix']}"
    elif e.get("fix_tried"):
        line += f"\n     tried: {e['fix_tried']}"
    return line


_PUBLIC_KEYS = (
    "package",
    "ok",
    "python",
    "mode",
    "submodules",
    "extension_modules",
    "smoke",
    "error",
    "kind",
    "fix",
)


def _import_names_of(packages: Sequence[str]) -> list[str]:
    """packages, each name that is not importable but is an installed
    distribution's (scikit-learn, pillow) replaced by what it provides
    (sklearn, PIL), with a line saying so."""
    out: list[str] = []
    for p in packages:
        names = [] if installed(p) else import_names(p)
        if names:
            print(f"vlcs check: {p} is imported as {', '.join(names)}", file=sys.stderr)
        out.extend(n for n in (names or [p]) if n not in out)
    return out


def run(
    packages: Sequence[str],
    as_json: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
    python: str = "shared",
) -> int:
    """``vlcs check``: 0 when every package passes, 1 when one fails, 2 for a
    usage error (none given, one not installed)."""
    if not packages:
        print("vlcs check: no package given; usage: vlcs check PKG [PKG...]", file=sys.stderr)
        return 2
    if timeout <= 0:
        print(f"vlcs check: --timeout takes seconds > 0; got {timeout}", file=sys.stderr)
        return 2
    packages = _import_names_of(packages)
    missing = [p for p in packages if not installed(p)]
    if missing:
        for p in missing:
            print(f"vlcs check: {p}: not installed: pip install {pip_name(p)}", file=sys.stderr)
        return 2
    if python not in ("shared", "own"):
        print(f"vlcs check: --python takes shared or own; got {python!r}", file=sys.stderr)
        return 2
    entries = check_packages(packages, timeout, python=python)
    if as_json:
        keep = [
            {
                **{k: e.get(k) for k in _PUBLIC_KEYS},
                "seconds": e["seconds"],
                **({"fix_tried": e["fix_tried"]} if e.get("fix_tried") else {}),
                **({"note": e["note"]} if e.get("note") else {}),
            }
            for e in entries
        ]
        print(json.dumps(keep, indent=2))
    else:
        for e in entries:
            print(format_entry(e))
    return 0 if all(e["ok"] for e in entries) else 1


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m vlcs.check PKG... [--json] [--timeout S]``, the same as
    ``vlcs check``."""
    p = argparse.ArgumentParser(prog="vlcs check", description="Check packages in contexts.")
    p.add_argument("packages", nargs="*", metavar="PKG")
    p.add_argument("--json", action="store_true")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT)
    p.add_argument("--python", choices=("shared", "own"), default="shared")
    args = p.parse_args(argv)
    return run(args.packages, args.json, args.timeout, args.python)

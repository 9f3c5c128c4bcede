"""What broke, from the child's result and stderr: a crash's signal and
place, error texts classified, the verdict and the ``vlcs.share`` fix.
Standard library only (tests load it by file)."""

from __future__ import annotations

import re
import signal
from typing import Any

# The child's progress lines on stderr, which the parent reads back.
_STAGE = "vlcs-check: stage "
_START = "vlcs-check: importing "


def _signal_name(returncode: int) -> str:
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def _crash_details(stderr: str) -> str:
    """What the child was doing when it died: its last stage, the imports
    under way, the innermost frame faulthandler printed for the crashing thread."""
    lines = stderr.splitlines()
    stage = next((ln[len(_STAGE) :] for ln in reversed(lines) if ln.startswith(_STAGE)), None)
    started: dict[str, str] = {}
    for ln in lines:
        if ln.startswith(_START):
            owner, _, name = ln[len(_START) :].partition(": ")
            started[owner] = name
    parts = []
    if stage:
        parts.append(f"while {stage}")
    if started:
        parts.append("last imports started: " + ", ".join(f"{k}: {v}" for k, v in started.items()))
    fatal = next((ln.strip() for ln in lines if ln.startswith("Fatal Python error")), None)
    if fatal:
        parts.append(fatal)
    # faulthandler: "Current thread 0x... (most recent call first):" then '  File "x", line n in f'
    for i, ln in enumerate(lines):
        if ln.startswith(("Current thread", "Thread 0x")) and "most recent call first" in ln:
            if ln.startswith("Current thread"):
                for fr in lines[i + 1 : i + 6]:
                    fr = fr.strip()
                    if fr.startswith("File ") and "importlib" not in fr and "/vlcs/" not in fr:
                        parts.append("at " + fr)
                        break
                break
    return "; ".join(parts)


def _classify(text: str) -> tuple[str, str]:
    """(kind, explanation) of an error text."""
    m = re.search(r"undefined symbol: (\S+)", text)
    if m:
        return (
            "missing-symbol",
            f"missing symbol {m.group(1)}: the extension assumes a library that provides it is "
            "already loaded (in the base it is; in the context's namespace it is not)",
        )
    if "incompatible function arguments" in text or "generic_type" in text:
        return (
            "binding-registry",
            "a binding registry is shared between the copies (one copy's types reached "
            "the other's bindings)",
        )
    return "exception", ""


def _first_error(res: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The first failure in a context: (where, description)."""
    for k in ("a", "b"):
        e = (res.get("import") or {}).get(k)
        if e:
            return f"import {res['package']} in context {k}", e
    for n, errs in (res.get("submodule_errors") or {}).items():
        for k, e in errs.items():
            return f"import {n} in context {k} (works in the base)", e
    return None


def _verdict(pkg: str, run: dict[str, Any]) -> dict[str, Any]:
    """The report entry for one child run (fix not decided yet)."""
    res = run["result"]
    entry: dict[str, Any] = {
        "package": pkg,
        "ok": False,
        "submodules": 0,
        "extension_modules": 0,
        "smoke": "none",
        "error": None,
        "kind": None,
        "fix": None,
        "python": "shared",
        "mode": None,
        "seconds": run["seconds"],
        "works_in_base": None,
        "culprits": [],
    }
    if run["timed_out"]:
        entry.update(
            kind="timeout",
            error=f"no result within the time limit; {_crash_details(run['stderr'])}",
        )
        return entry
    if res is None:
        rc = run["returncode"]
        if rc is not None and rc < 0:
            entry.update(
                kind="crash",
                error=f"the child died of {_signal_name(rc)}; {_crash_details(run['stderr'])}",
            )
        else:
            tail = run["stderr"].strip().splitlines()[-1:] or ["no output"]
            entry.update(kind="child", error=f"the child exited with {rc}: {tail[0]}")
        return entry

    entry["python"] = res.get("python", "shared")
    entry["mode"] = (res.get("modes") or {}).get("a")
    entry["submodules"] = res.get("submodules", 0)
    entry["extension_modules"] = len(res.get("extension_modules", []))
    base_err = (res.get("import") or {}).get("base")
    if base_err:
        entry.update(
            kind="base",
            works_in_base=False,
            error=f"fails in the base too (not a vlcs problem): {base_err['text']}",
        )
        return entry
    entry["works_in_base"] = True

    problems: list[str] = []
    kind = None
    first = _first_error(res)
    if first:
        where, e = first
        kind, why = _classify(e["text"])
        problems.append(f"{where}: {e['text']}" + (f" -- {why}" if why else ""))
        if e.get("culprit"):
            entry["culprits"].append(e["culprit"])
        n_failed = len(res.get("submodule_errors") or {})
        if n_failed > 1:
            problems.append(f"{n_failed} submodules fail in a context but not in the base")
    if res.get("not_private") and not res.get("shared_by_vlcs") and not res.get("shared"):
        kind = kind or "not-private"
        shown = ", ".join(res["not_private"][:5])
        problems.append(f"the context's module is the base's (no private copy): {shown}")
    if res.get("extensions_outside") and not res.get("shared"):
        kind = kind or "extension-outside"
        shown = ", ".join(res["extensions_outside"][:5])
        problems.append(f"extension modules not in context a's namespace: {shown}")

    smoke = res.get("smoke")
    if smoke:
        vals = {k: smoke[k] for k in ("a", "b", "base")}
        errs = {k: v["error"] for k, v in vals.items() if "error" in v}
        if errs:
            entry["smoke"] = "error"
            k, e = next(iter(errs.items()))
            skind, why = _classify(e["text"])
            kind = kind or skind
            if e.get("culprit"):
                entry["culprits"].append(e["culprit"])
            owner = "the base" if k == "base" else f"context {k}"
            problems.append(f"smoke test in {owner}: {e['text']}" + (f" -- {why}" if why else ""))
        else:
            got = {k: v["value"] for k, v in vals.items()}
            if "expected" in smoke:
                bad = {k: v for k, v in got.items() if v != smoke["expected"][k]}
                want = smoke["expected"]
            else:
                bad = {k: v for k, v in got.items() if v != got["base"]}
                want = {k: got["base"] for k in got}
            if bad:
                entry["smoke"] = "mismatch"
                kind = kind or "mismatch"
                shown = "; ".join(f"{k}: {got[k]!r} (expected {want[k]!r})" for k in bad)
                problems.append(f"smoke results differ: {shown}")
            else:
                entry["smoke"] = "ok"
    if problems:
        entry.update(error="; ".join(problems), kind=kind)
    else:
        entry["ok"] = True
        if res.get("shared_by_vlcs"):
            entry["note"] = "vlcs keeps this package shared: one copy for the base and contexts"
    return entry


def _share_names(pkg: str, entry: dict[str, Any]) -> list[str]:
    names = [pkg.partition(".")[0]]
    for c in entry.get("culprits", []):
        if c not in names:
            names.append(c)
    return names

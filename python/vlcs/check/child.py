"""The child of ``vlcs check``: one package in contexts a and b at once,
then in the base, in a fresh interpreter (``python -m vlcs.check.child``),
so that a crash is a report for the parent, not the end of the command."""

from __future__ import annotations

import argparse
import ctypes
import importlib
import importlib.util
import json
import os
import re
import sys
import traceback
from collections.abc import Callable, Sequence
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from typing import Any

from vlcs.check.packages import _discover
from vlcs.check.smoke import SMOKE, plain
from vlcs.check.verdicts import _STAGE, _START

# Extension suffixes that name a Python ABI (".so" alone is any shared library too).
_TAGGED_SUFFIXES = tuple(s for s in EXTENSION_SUFFIXES if s.count(".") > 1)


def _stage(text: str) -> None:
    print(_STAGE + text, file=sys.stderr, flush=True)


def _where(exc: BaseException) -> str:
    """The innermost frame of exc's traceback outside importlib and vlcs."""
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if "importlib" not in f.filename and f"{os.sep}vlcs{os.sep}" not in f.filename
    ]
    return f" ({frames[-1].filename}:{frames[-1].lineno})" if frames else ""


def _culprit(exc: BaseException) -> str | None:
    """The top-level package whose file an error points at (a path in the
    message, or the innermost traceback frame under a site folder)."""
    roots = sorted(
        {os.path.abspath(p) for p in sys.path if p and os.path.isdir(p)}
        - {os.path.abspath(os.path.dirname(os.__file__))},
        key=len,
        reverse=True,
    )

    def top_of(path: str) -> str | None:
        path = os.path.abspath(path)
        for r in roots:
            if path.startswith(r + os.sep):
                first = path[len(r) + 1 :].split(os.sep)[0]
                name = first.split(".")[0]
                if name and name != "vlcs" and name not in sys.stdlib_module_names:
                    return name
        return None

    for p in re.findall(r"(/[^\s:'\"]+)", str(exc)):
        t = top_of(p)
        if t:
            return t
    for f in reversed(traceback.extract_tb(exc.__traceback__)):
        t = top_of(f.filename)
        if t:
            return t
    return None


def _describe(exc: BaseException) -> dict[str, Any]:
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    if len(text) > 800:
        text = text[:800] + " ..."
    return {"text": text + _where(exc), "culprit": _culprit(exc)}


def _import_all(owner: str, names: Sequence[str]) -> dict[str, Any]:
    """Import each name; name -> the module, or a description of the failure."""
    out: dict[str, Any] = {}
    for n in names:
        print(f"{_START}{owner}: {n}", file=sys.stderr, flush=True)
        try:
            out[n] = importlib.import_module(n)
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # SystemExit too: a module that exits is a failure
            out[n] = _describe(e)
    return out


def _is_module(x: Any) -> bool:
    return isinstance(x, type(sys))


class _DlInfo(ctypes.Structure):
    _fields_ = [
        ("dli_fname", ctypes.c_char_p),
        ("dli_fbase", ctypes.c_void_p),
        ("dli_sname", ctypes.c_char_p),
        ("dli_saddr", ctypes.c_void_p),
    ]


_dladdr = ctypes.CDLL(None).dladdr  # the base libc's: it finds objects of every namespace
_dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]


def _code_file(module: Any) -> tuple[str, int] | None:
    """The loaded object that defines module (its PyModuleDef): its name and
    load address, or None.  mypyc's compiled modules are made by their
    group's shared library ("<hash>__mypyc") without loading the file their
    __file__ names."""
    from vlcs._isolation.extension import module_def

    d = module_def(module)
    info = _DlInfo()
    if d is None or not _dladdr(d, ctypes.byref(info)) or not info.dli_fname:
        return None
    return os.fsdecode(info.dli_fname), info.dli_fbase or 0


def _copy_bases(ctx: Any) -> set[int]:
    """Load addresses of a copy-mode context's copies.  A copy is named after
    its original's descriptor, which every context's copy of that file (and
    the base's own object) resolves to: only the address tells them apart."""
    from vlcs._isolation.linkmap import _LinkMap
    from vlcs._lib import lib

    out = set()
    for path in ctx.libraries():
        h = lib().vlcs_ctx_loaded(ctx._h, os.fsencode(path))
        if h:
            out.add(ctypes.cast(h, ctypes.POINTER(_LinkMap)).contents.l_addr or 0)
    return out


def _ext_modules() -> dict[str, tuple[str, tuple[str, int] | None]]:
    """The calling owner's extension modules: name -> (file, the object that
    defines it) (run inside a context)."""
    out = {}
    for n, m in list(sys.modules.items()):
        f = getattr(m, "__file__", None)
        # An alias of another module is checked under that module's own name:
        # Cython's shadow module enters the standard library's math (one for
        # every owner) as cython.cimports.libc.math.
        if getattr(m, "__name__", n) != n:
            continue
        if isinstance(f, str) and f.endswith(tuple(EXTENSION_SUFFIXES)):
            out[n] = (f, _code_file(m))
    return out


def _submodule_errors(
    subs: dict[str, dict[str, Any]], owners: Sequence[str], ok_base: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """Submodule -> owner -> its failure, for those that import in the base
    but fail in a context.  An outcome is a module, None (imported, said by
    a runtime of its own) or a failure's description."""

    def failed(x: Any) -> bool:
        return x is not None and not _is_module(x)

    return {
        n: {k: subs[k][n] for k in owners if failed(subs[k][n])}
        for n in ok_base
        if any(failed(subs[k][n]) for k in owners)
    }


def _smoke(pkg: str, ctxs: dict[str, Any], where: str) -> dict[str, Any] | None:
    """The package's smoke test (where vlcs knows one) in both contexts at
    once, then in the base; None if it has none.  The task by module and
    name (a runtime of its own takes it by pickle)."""
    known = SMOKE.get(pkg)
    if known is None:
        return None
    fn, per_cpu = known
    tasks = importlib.import_module("vlcs.check.child")
    _stage(f"smoke test in {where} a and b at once")
    futs = {k: c.submit(tasks._run_smoke, fn) for k, c in ctxs.items()}
    smoke = {k: f.result() for k, f in futs.items()}
    _stage("smoke test in the base")
    smoke["base"] = _run_smoke(fn)
    if per_cpu:
        a, b = ctxs["a"], ctxs["b"]
        smoke["expected"] = {"a": len(a.cpus), "b": len(b.cpus), "base": os.cpu_count()}
    return smoke


def _import_report(owner: str, names: Sequence[str]) -> dict[str, Any]:
    """_import_all as plain data (None: imported), for a runtime of its own
    to send back."""
    return {n: None if _is_module(m) else m for n, m in _import_all(owner, names).items()}


def _own_facts(pkg: str) -> dict[str, Any]:
    """What a runtime of its own holds of pkg: its extension modules (name ->
    file) and its module table's identity.  A module whose __name__ is not
    its key counts when its file is the package's (websockets.speedups
    calls itself websocket.speedups); not an alias of another package's
    (Cython enters the standard library's math as cython.cimports.libc.math)."""
    top = pkg.partition(".")[0]
    root = sys.modules.get(top)
    dirs = tuple(os.path.realpath(d) + os.sep for d in getattr(root, "__path__", ()) or ())
    exts = {}
    for n, m in list(sys.modules.items()):
        f = getattr(m, "__file__", None)
        if not (n == top or n.startswith(top + ".")) or not isinstance(f, str):
            continue
        if not f.endswith(tuple(EXTENSION_SUFFIXES)):
            continue
        if getattr(m, "__name__", n) != n and not os.path.realpath(f).startswith(dirs or ("\0",)):
            continue
        exts[n] = f
    return {"extensions": exts, "modules_id": id(sys.modules)}


def child_own(pkg: str) -> dict[str, Any]:
    """``vlcs check --python own``: pkg in two contexts with a CPython of
    their own each (tasks and results cross by pickle), then in the base.
    Their module tables, and what their extension modules load, are their
    own by construction; the check is whether the package imports and
    works there as in the base."""
    import vlcs

    # the tasks by module and name: run as ``python -m``, this file is
    # __main__, whose functions would cross by value (with their globals)
    tasks = importlib.import_module("vlcs.check.child")

    res: dict[str, Any] = {"package": pkg, "shared": [], "python": "own"}
    cpus = sorted(os.sched_getaffinity(0))
    ctxs = {
        "a": vlcs.VLC(cpus=str(cpus[0]), name="a", python="own"),
        "b": vlcs.VLC(cpus=str(cpus[1] if len(cpus) > 1 else cpus[0]), name="b", python="own"),
    }
    _stage("importing the package in runtimes a and b at once")
    futs = {k: c.submit(tasks._import_report, k, [pkg]) for k, c in ctxs.items()}
    top: dict[str, Any] = {k: f.result()[pkg] for k, f in futs.items()}
    _stage("importing the package in the base")
    base_top = _import_all("base", [pkg])[pkg]
    top["base"] = None if _is_module(base_top) else base_top
    res["import"] = top
    if top["base"] is not None:
        return res
    names = _discover(base_top)
    res["discovered"] = len(names)
    _stage(f"importing {len(names)} submodules in runtimes a and b at once")
    live = {k: c for k, c in ctxs.items() if top[k] is None}
    futs = {k: c.submit(tasks._import_report, k, names) for k, c in live.items()}
    subs = {k: f.result() for k, f in futs.items()}
    _stage(f"importing {len(names)} submodules in the base")
    base_subs = _import_all("base", names)
    ok_base = [n for n in names if _is_module(base_subs[n])]
    res["submodules"] = len(ok_base)
    res["skipped_failing_in_base"] = len(names) - len(ok_base)
    res["submodule_errors"] = _submodule_errors(subs, list(live), ok_base)
    _stage("checking the runtimes' extension modules")
    if "a" in live:
        facts = ctxs["a"].submit(tasks._own_facts, pkg).result()
        res["extension_modules"] = sorted(facts["extensions"])
        res["extension_modules_all"] = len(facts["extensions"])
        # a runtime of its own: never the base's module table
        res["not_private"] = ["sys.modules (a)"] if facts["modules_id"] == id(sys.modules) else []
    else:
        res["not_private"] = []
    res["modes"] = {k: c.mode for k, c in ctxs.items()}
    if len(live) == 2 and (smoke := _smoke(pkg, ctxs, "runtimes")) is not None:
        res["smoke"] = smoke
    _stage("done")
    return res


def _run_smoke(fn: Callable[[], Any]) -> dict[str, Any]:
    try:
        return {"value": plain(fn())}
    except KeyboardInterrupt:
        raise
    except BaseException as e:
        return {"error": _describe(e)}


def child(pkg: str, share: Sequence[str] = ()) -> dict[str, Any]:
    """Check pkg in this (fresh) interpreter; returns a JSON-able result.

    Every step records what it found; the parent decides what is a failure.
    """
    import vlcs
    from vlcs._isolation.linkmap import namespace_files
    from vlcs._isolation.owners import is_shared

    res: dict[str, Any] = {"package": pkg, "shared": list(share)}
    if share:
        vlcs.share(*share)
    cpus = sorted(os.sched_getaffinity(0))
    a = vlcs.VLC(cpus=str(cpus[0]), name="a")
    b = vlcs.VLC(cpus=str(cpus[1] if len(cpus) > 1 else cpus[0]), name="b")
    ctxs = {"a": a, "b": b}

    # 1. the package in both contexts at once, then in the base
    _stage("importing the package in contexts a and b at once")
    futs = {k: c.submit(_import_all, k, [pkg]) for k, c in ctxs.items()}
    top = {k: f.result()[pkg] for k, f in futs.items()}
    _stage("importing the package in the base")
    top["base"] = _import_all("base", [pkg])[pkg]
    res["import"] = {k: None if _is_module(v) else v for k, v in top.items()}
    if not _is_module(top["base"]):
        return res
    res["shared_by_vlcs"] = bool(is_shared(pkg))

    # 2. the submodules, found once, imported in both contexts at once, then in the base
    names = _discover(top["base"])
    res["discovered"] = len(names)
    _stage(f"importing {len(names)} submodules in contexts a and b at once")
    live = {k: c for k, c in ctxs.items() if _is_module(top[k])}
    futs = {k: c.submit(_import_all, k, names) for k, c in live.items()}
    subs = {k: f.result() for k, f in futs.items()}
    _stage(f"importing {len(names)} submodules in the base")
    subs["base"] = _import_all("base", names)
    ok_base = [n for n in names if _is_module(subs["base"][n])]
    res["submodules"] = len(ok_base)
    res["skipped_failing_in_base"] = len(names) - len(ok_base)
    res["submodule_errors"] = _submodule_errors(subs, list(live), ok_base)

    # 3. private copies; extension modules in the context's namespace
    _stage("checking the copies and the extension modules")
    same: list[str] = []
    for n in [pkg, *ok_base]:
        base_mod = top["base"] if n == pkg else subs["base"][n]
        for k in live:
            m = top[k] if n == pkg else subs[k][n]
            if not _is_module(m) or getattr(m, "__name__", n) != n:
                continue  # failed (reported above) or an alias of another module
            if m is base_mod or m.__dict__ is base_mod.__dict__:
                same.append(f"{n} ({k})")
    if "a" in live:
        exts = a.submit(_ext_modules).result()
        mods = set(a.modules)
        copies = a.mode == "copies"
        if copies:  # its copies' original files
            in_ns = {os.path.realpath(p) for p in a.libraries()}
            bases = _copy_bases(a)
        else:
            in_ns = set(namespace_files(a._any_handle)) if a._any_handle else set()
        private = {n: f for n, (f, _) in exts.items() if n in mods}
        topname = pkg.partition(".")[0]
        own = {
            n: os.path.realpath(f)
            for n, f in private.items()
            if n == topname or n.startswith(topname + ".")
        }
        # Extension files of the package in the namespace under no module name of
        # their own (cv2 loads its binary, then stands in for it with a Python package).
        dirs = [os.path.realpath(d) + os.sep for d in getattr(top["a"], "__path__", ()) or ()]
        named = set(own.values())
        loose = (
            sorted(
                os.path.basename(p)
                for p in in_ns
                if p not in named and p.endswith(_TAGGED_SUFFIXES) and p.startswith(tuple(dirs))
            )
            if dirs
            else []
        )
        res["extension_modules"] = sorted(own) + loose
        # the package's extension modules a's code sees but a does not own
        same += [
            f"{n} (extension, a)"
            for n in sorted(exts)
            if n not in mods and (n == topname or n.startswith(topname + "."))
        ]
        res["extension_modules_all"] = len(private)
        if copies:  # the object that defines it is one of the context's copies
            # (a module made without a PyModuleDef, as pybind11's submodules
            # are, is known by its file only)
            outside = [
                n
                for n, f in private.items()
                if (exts[n][1][1] not in bases if exts[n][1] else os.path.realpath(f) not in in_ns)
            ]
        else:
            outside = [
                n
                for n, f in private.items()
                if os.path.realpath(f) not in in_ns
                and os.path.realpath((exts[n][1] or (f, 0))[0]) not in in_ns
            ]
        res["extensions_outside"] = sorted(outside)
        res["context_info_packages"] = a.info().get("python_packages", [])
    res["not_private"] = same
    res["modes"] = {k: c.mode for k, c in ctxs.items()}  # namespace or copies

    # 4. the smoke test, in both contexts at once, then in the base
    if len(live) == 2 and (smoke := _smoke(pkg, ctxs, "contexts")) is not None:
        res["smoke"] = smoke
    _stage("done")
    return res


def _child_main(pkg: str, out: str, share: Sequence[str], python: str = "shared") -> int:
    import faulthandler

    faulthandler.enable()  # a crash prints where each thread was, for the parent
    res = child_own(pkg) if python == "own" else child(pkg, share)
    Path(out).write_text(json.dumps(res, default=repr))
    sys.stdout.flush()
    sys.stderr.flush()
    # Leave at once: an atexit handler or a pool's teardown of a broken copy must
    # not turn a finished check into a crash.
    os._exit(0)


def main_child(argv: Sequence[str] | None = None) -> int:
    """``python -m vlcs.check.child PKG --result FILE [--share NAME]...``"""
    p = argparse.ArgumentParser(prog="vlcs check (child)")
    p.add_argument("package")
    p.add_argument("--result", required=True)
    p.add_argument("--share", action="append", default=[])
    p.add_argument("--python", choices=("shared", "own"), default="shared")
    args = p.parse_args(argv)
    return _child_main(args.package, args.result, args.share, args.python)


if __name__ == "__main__":
    # `python -m` put the working directory first on sys.path: a folder of
    # the caller's, whose modules must not pass for the packages checked.
    if sys.path and os.path.abspath(sys.path[0] or ".") == os.getcwd():
        del sys.path[0]
    raise SystemExit(main_child())

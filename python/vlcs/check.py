"""``vlcs check PKG...``: does a package work in contexts? Run it before adopting vlcs.

Each package is checked in a fresh interpreter (a child process running this
file with ``--child``), so that a crash in it is a report, not the end of
the command.  The child:

1. creates two contexts, ``a`` (the first allowed CPU) and ``b`` (the second,
   or the first again on a 1-CPU machine), imports the package in both at
   once (``ctx.submit(importlib.import_module, pkg)``), then in the base;
2. finds the package's submodules without importing them (``pkgutil``,
   breadth first, tests/conftest/setup/``__main__`` left out, 200 at most),
   imports them in both contexts at once, then in the base; a submodule that
   fails in the base too is not vlcs's failure and is skipped;
3. checks that every copy is private (the contexts' modules are other objects
   than the base's, with other ``__dict__``) and that every extension module
   a context imported lies in the context's linker namespace
   (``ctx.libraries()``);
4. runs a small deterministic smoke test for well-known packages
   (:data:`SMOKE`) in both contexts at once and in the base: the results
   must be equal.

The parent classifies what broke from the child's result and stderr
("undefined symbol" -> a library the extension assumes is loaded,
"incompatible function arguments"/"generic_type" -> a binding registry
shared between copies, a signal -> a crash), and where the package works in
the base but not in contexts, re-runs the child with ``vlcs.share(...)`` to
say whether keeping it shared is a fix.

>>> from vlcs.check import check_packages
>>> [r["ok"] for r in check_packages(["json"], progress=False)]   # doctest: +SKIP
[True]

From the shell::

    vlcs check numpy scipy --json --timeout 120
"""

from __future__ import annotations

import sys

if __name__ == "__main__":
    # Run as a script (the child, or from a source tree): this file's folder is
    # sys.path[0]; it holds vlcs's own modules, which must not pass for top-level ones.
    import os.path as _osp

    if sys.path and _osp.abspath(sys.path[0] or ".") == _osp.dirname(_osp.abspath(__file__)):
        del sys.path[0]

import argparse
import ctypes
import importlib
import importlib.util
import io
import json
import os
import pkgutil
import re
import signal
import subprocess
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from typing import Any

DEFAULT_TIMEOUT = 300.0
"""Seconds one package's child may run (each run: the check, then a share trial)."""

MAX_SUBMODULES = 200
"""Submodules imported per package at most."""

_SKIP_PARTS = ("conftest", "__main__", "setup", "_pyinstaller")
_STAGE = "vlcs-check: stage "
# Extension suffixes that name a Python ABI (".so" alone is any shared library too).
_TAGGED_SUFFIXES = tuple(s for s in EXTENSION_SUFFIXES if s.count(".") > 1)
_START = "vlcs-check: importing "

# Import name -> what to pip install, where the two differ.
PIP_NAMES: dict[str, str] = {
    "sklearn": "scikit-learn",
    "cv2": "opencv-python-headless",
    "google": "protobuf",
    "google.protobuf": "protobuf",
    "yaml": "pyyaml",
    "PIL": "pillow",
    "skimage": "scikit-image",
    "bs4": "beautifulsoup4",
    "dateutil": "python-dateutil",
    "attr": "attrs",
    "jwt": "pyjwt",
    "OpenSSL": "pyopenssl",
    "Crypto": "pycryptodome",
    "serial": "pyserial",
    "usb": "pyusb",
}


# --- smoke tests (run in the child: each imports what it uses, returns plain values) ---


def _plain(x: Any) -> Any:
    """x with floats rounded to 9 significant digits and tuples as lists."""
    if isinstance(x, float):
        return float(f"{x:.9g}")
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in sorted(x.items(), key=lambda kv: str(kv[0]))}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    return x


def _smoke_numpy() -> Any:
    import numpy

    return float(numpy.linalg.norm(numpy.arange(10.0)))


def _smoke_scipy() -> Any:
    import scipy.fft

    return scipy.fft.fft([1, 2, 3, 4]).real.tolist()


def _smoke_pandas() -> Any:
    import pandas

    df = pandas.DataFrame({"k": ["x", "y", "x", "z", "y"], "v": [0.5, 1.0, 2.0, 3.0, 4.5]})
    return {str(k): float(v) for k, v in df.groupby("k")["v"].sum().items()}


def _smoke_sklearn() -> Any:
    import numpy
    from sklearn.cluster import KMeans

    x = numpy.array([[0, 0], [0, 1], [1, 0], [10, 10], [10, 11], [11, 10]], dtype=float)
    return KMeans(n_clusters=2, n_init=1, random_state=0).fit(x).labels_.tolist()


def _smoke_matplotlib() -> Any:
    import hashlib

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(2, 2), dpi=50)
    FigureCanvasAgg(fig)
    fig.add_subplot().plot([0, 1, 2, 3], [0, 1, 4, 9])
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return hashlib.sha256(buf.getvalue()).hexdigest()


def _smoke_psutil() -> Any:
    import psutil

    return psutil.cpu_count()


def _smoke_numexpr() -> Any:
    import numexpr
    import numpy

    return numexpr.evaluate("a*2", {"a": numpy.arange(3)}).tolist()


def _smoke_pyarrow() -> Any:
    import pyarrow

    return pyarrow.array([1, 2, 3]).sum().as_py()


def _smoke_h5py() -> Any:
    import h5py
    import numpy

    raw = io.BytesIO()
    with h5py.File(raw, "w") as f:
        f.create_dataset("x", data=numpy.arange(10.0), compression="gzip")
    with h5py.File(io.BytesIO(raw.getvalue()), "r") as f:
        return float(f["x"][:].sum())


def _smoke_threadpoolctl() -> Any:
    import threadpoolctl

    try:  # something with a pool to find, when there is one
        import numpy  # noqa: F401
    except ImportError:
        pass
    with threadpoolctl.threadpool_limits(limits=1):
        limited = {p["num_threads"] for p in threadpoolctl.threadpool_info()}
    return {
        "apis": sorted({p["user_api"] for p in threadpoolctl.threadpool_info()}),
        "limited": sorted(limited),
    }


def _smoke_statsmodels() -> Any:
    import numpy
    import statsmodels.api as sm

    x = sm.add_constant(numpy.arange(10.0))
    return sm.OLS(3.0 + 2.0 * numpy.arange(10.0), x).fit().params.tolist()


def _smoke_numba() -> Any:
    import numpy
    from numba import njit

    @njit
    def dot(a: Any, b: Any) -> float:
        s = 0.0
        for i in range(a.shape[0]):
            s += a[i] * b[i]
        return s

    a = numpy.arange(100.0)
    return float(dot(a, a))


def _smoke_cv2() -> Any:
    import cv2
    import numpy

    img = numpy.zeros((16, 16), numpy.float32)
    img[8, 8] = 1.0
    return float(cv2.GaussianBlur(img, (5, 5), 1.0).sum())


def _smoke_protobuf() -> Any:
    from google.protobuf import descriptor_pb2

    msg = descriptor_pb2.FileDescriptorProto(name="t.proto", package="p")
    return msg.SerializeToString().hex()


def _smoke_tomli() -> Any:
    import tomli

    return repr(tomli.loads("[owner]\ndob = 1979-05-27T07:32:00Z\nports = [1, 2]\n"))


def _smoke_chardet() -> Any:
    import chardet

    return chardet.detect("Größe und schöne Grüße aus Köln".encode("latin-1"))


def _smoke_torch() -> Any:
    import torch

    return torch.ones(3).sum().item()


SMOKE: dict[str, tuple[Callable[[], Any], bool]] = {
    "numpy": (_smoke_numpy, False),
    "scipy": (_smoke_scipy, False),
    "pandas": (_smoke_pandas, False),
    "sklearn": (_smoke_sklearn, False),
    "matplotlib": (_smoke_matplotlib, False),
    "psutil": (_smoke_psutil, True),
    "numexpr": (_smoke_numexpr, False),
    "pyarrow": (_smoke_pyarrow, False),
    "h5py": (_smoke_h5py, False),
    "threadpoolctl": (_smoke_threadpoolctl, False),
    "statsmodels": (_smoke_statsmodels, False),
    "numba": (_smoke_numba, False),
    "cv2": (_smoke_cv2, False),
    "google.protobuf": (_smoke_protobuf, False),
    "tomli": (_smoke_tomli, False),
    "chardet": (_smoke_chardet, False),
    "torch": (_smoke_torch, False),
}
"""Known smoke tests by import name: (function, whether its result is the
owner's CPU count rather than one value for all)."""


# --- the child ------------------------------------------------------------------------


def _skipped(name: str) -> bool:
    """Whether a submodule is left out of the walk (tests, setup scripts, ...)."""
    return any("test" in p or p in _SKIP_PARTS for p in name.split("."))


def _discover(top: Any, cap: int = MAX_SUBMODULES) -> list[str]:
    """Names of top's submodules, breadth first, found without importing any
    (pkgutil.walk_packages would import every subpackage, tests included).

    >>> import json
    >>> _discover(json)
    ['json.decoder', 'json.encoder', 'json.scanner', 'json.tool']
    """
    out: list[str] = []
    queue: list[tuple[list[str], str]] = []
    if getattr(top, "__path__", None) is not None:
        queue.append((list(top.__path__), top.__name__ + "."))
    while queue and len(out) < cap:
        path, prefix = queue.pop(0)
        for info in sorted(pkgutil.iter_modules(path, prefix), key=lambda i: i.name):
            if _skipped(info.name):
                continue
            out.append(info.name)
            if len(out) >= cap:
                break
            if info.ispkg:
                try:
                    spec = info.module_finder.find_spec(info.name)  # type: ignore[call-arg]
                except Exception:
                    spec = None
                locs = spec.submodule_search_locations if spec is not None else None
                if locs:
                    queue.append((list(locs), info.name + "."))
    return out


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


def _code_file(module: Any) -> str | None:
    """The loaded object that defines module (its PyModuleDef), or None.
    mypyc's compiled modules are made by their group's shared library
    ("<hash>__mypyc") without loading the file their __file__ names."""
    from vlcs._extension import module_def

    d = module_def(module)
    info = _DlInfo()
    if d is None or not _dladdr(d, ctypes.byref(info)) or not info.dli_fname:
        return None
    return os.fsdecode(info.dli_fname)


def _ext_modules() -> dict[str, tuple[str, str | None]]:
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


def _run_smoke(fn: Callable[[], Any]) -> dict[str, Any]:
    try:
        return {"value": _plain(fn())}
    except KeyboardInterrupt:
        raise
    except BaseException as e:
        return {"error": _describe(e)}


def child(pkg: str, share: Sequence[str] = ()) -> dict[str, Any]:
    """Check pkg in this (fresh) interpreter; returns a JSON-able result.

    Every step records what it found; the parent decides what is a failure.
    """
    import vlcs
    from vlcs._linkmap import namespace_files

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
    res["shared_by_vlcs"] = bool(
        getattr(getattr(vlcs, "_owners", None), "is_shared", lambda n: False)(pkg)
    )

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
    res["submodule_errors"] = {
        n: {k: subs[k][n] for k in live if not _is_module(subs[k][n])}
        for n in ok_base
        if any(not _is_module(subs[k][n]) for k in live)
    }

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
        res["extensions_outside"] = sorted(
            n
            for n, f in private.items()
            if os.path.realpath(f) not in in_ns and os.path.realpath(exts[n][1] or f) not in in_ns
        )
        res["context_info_packages"] = a.info().get("python_packages", [])
    res["not_private"] = same

    # 4. the smoke test, in both contexts at once, then in the base
    known = SMOKE.get(pkg)
    if known is not None and len(live) == 2:
        fn, per_cpu = known
        _stage("smoke test in contexts a and b at once")
        futs = {k: c.submit(_run_smoke, fn) for k, c in ctxs.items()}
        smoke = {k: f.result() for k, f in futs.items()}
        _stage("smoke test in the base")
        smoke["base"] = _run_smoke(fn)
        if per_cpu:
            expected = {"a": len(a.cpus), "b": len(b.cpus), "base": os.cpu_count()}
            smoke["expected"] = expected
        res["smoke"] = smoke
    _stage("done")
    return res


def _child_main(pkg: str, out: str, share: Sequence[str]) -> int:
    import faulthandler

    faulthandler.enable()  # a crash prints where each thread was, for the parent
    res = child(pkg, share)
    Path(out).write_text(json.dumps(res, default=repr))
    sys.stdout.flush()
    sys.stderr.flush()
    # Leave at once: an atexit handler or a pool's teardown of a broken copy must
    # not turn a finished check into a crash.
    os._exit(0)


# --- the parent: run the child, classify ----------------------------------------------


def _run_child(pkg: str, timeout: float, share: Sequence[str] = ()) -> dict[str, Any]:
    """Run the child for pkg; returns {result, returncode, stderr, timed_out, seconds}."""
    with tempfile.TemporaryDirectory(prefix="vlcs-check-") as tmp:
        out = os.path.join(tmp, "result.json")
        argv = [sys.executable, str(Path(__file__).resolve()), "--child", pkg, "--result", out]
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


def check_package(
    pkg: str,
    timeout: float = DEFAULT_TIMEOUT,
    *,
    try_share: bool = True,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Check one package (a child process; then, where it fails in contexts
    but not in the base, a second child with ``vlcs.share`` to test the fix).

    >>> check_package("numpy")["ok"]   # doctest: +SKIP
    True
    """
    entry = _verdict(pkg, _run_child(pkg, timeout))
    if entry["ok"] or not try_share or entry["kind"] in ("base", "child"):
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


def pip_name(pkg: str) -> str:
    """What to pip install for an import name.

    >>> pip_name("sklearn"), pip_name("numpy")
    ('scikit-learn', 'numpy')
    """
    return PIP_NAMES.get(pkg) or PIP_NAMES.get(pkg.partition(".")[0]) or pkg.partition(".")[0]


def installed(pkg: str) -> bool:
    """Whether pkg can be imported in the base (found, not imported)."""
    try:
        return importlib.util.find_spec(pkg) is not None
    except (ImportError, ValueError):
        return False
    except Exception:
        return True  # its parent package is there but fails: the child will say how


def check_packages(
    packages: Sequence[str], timeout: float = DEFAULT_TIMEOUT, progress: bool = True
) -> list[dict[str, Any]]:
    """Check each package in turn; progress on stderr."""
    out = []

    def say(text: str) -> None:
        if progress:
            print(text, file=sys.stderr, flush=True)

    for i, pkg in enumerate(packages, 1):
        say(f"checking {pkg} ({i}/{len(packages)})...")
        out.append(check_package(pkg, timeout, progress=say if progress else None))
    return out


def format_entry(e: dict[str, Any]) -> str:
    """One line (two with a fix) for a report entry."""
    if e["ok"]:
        line = (
            f"PASS {e['package']} ({e['submodules']} submodules, "
            f"{e['extension_modules']} extension modules, smoke: {e['smoke']})"
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


_PUBLIC_KEYS = ("package", "ok", "submodules", "extension_modules", "smoke", "error", "kind", "fix")


def run(packages: Sequence[str], as_json: bool = False, timeout: float = DEFAULT_TIMEOUT) -> int:
    """``vlcs check``: 0 when every package passes, 1 when one fails, 2 for a
    usage error (none given, one not installed)."""
    if not packages:
        print("vlcs check: no package given; usage: vlcs check PKG [PKG...]", file=sys.stderr)
        return 2
    if timeout <= 0:
        print(f"vlcs check: --timeout takes seconds > 0; got {timeout}", file=sys.stderr)
        return 2
    missing = [p for p in packages if not installed(p)]
    if missing:
        for p in missing:
            print(f"vlcs check: {p}: not installed: pip install {pip_name(p)}", file=sys.stderr)
        return 2
    entries = check_packages(packages, timeout)
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
    """This file as a script: ``python check.py PKG... [--json] [--timeout S]``
    (the same as ``vlcs check``), or the child (``--child PKG --result FILE``)."""
    p = argparse.ArgumentParser(prog="vlcs check", description="Check packages in contexts.")
    p.add_argument("packages", nargs="*", metavar="PKG")
    p.add_argument("--json", action="store_true")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT)
    p.add_argument("--child", metavar="PKG", help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    p.add_argument("--share", action="append", default=[], help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        return _child_main(args.child, args.result, args.share)
    return run(args.packages, args.json, args.timeout)


if __name__ == "__main__":
    raise SystemExit(main())

"""The ``vlcs`` command: a thin layer over the native runtime.

vlcs run [--static-tls BYTES] -- PROGRAM [ARGS...]
vlcs info [--cflags] [--libs] [--json]
vlcs bench all [--quick] [--cases N,M] [--out DIR] [--json]
vlcs bench core|strict|shim|python [--json]
vlcs demo
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

from vlcs import __version__
from vlcs._paths import include_dir, native_dir, program_path


def _run(args: argparse.Namespace) -> int:
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        print("vlcs run: no program given; usage: vlcs run -- PROGRAM [ARGS...]", file=sys.stderr)
        return 2
    launcher = str(program_path("vlcs-run"))
    argv = [launcher]
    if args.static_tls is not None:
        argv += ["--static-tls", str(args.static_tls)]
    argv += ["--", *command]
    # exec: the program replaces this process, as with env(1) or taskset(1).
    os.execv(launcher, argv)
    return 127  # not reached


def _glibc_version() -> str:
    name, version = platform.libc_ver()
    return f"{name} {version}".strip()


def info_dict() -> dict[str, Any]:
    """What is installed where, and what this machine offers."""
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    return {
        "version": __version__,
        "native_dir": str(native_dir()),
        "include_dir": str(include_dir()),
        "library": str(native_dir() / "libvlcs.so"),
        "launcher": str(native_dir() / "vlcs-run"),
        "cpus_usable": sorted(os.sched_getaffinity(0)),
        "glibc": _glibc_version(),
        "python": platform.python_version(),
        "glibc_tunables": tunables,
        "many_contexts_enabled": "glibc.rtld.nns" in tunables,
    }


def _info(args: argparse.Namespace) -> int:
    if args.cflags or args.libs:
        parts = []
        if args.cflags:
            parts.append(f"-I{include_dir()}")
        if args.libs:
            lib = native_dir()
            parts.append(f"-L{lib} -Wl,-rpath,{lib} -lvlcs")
        print(" ".join(parts))
        return 0
    info = info_dict()
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        for key, value in info.items():
            print(f"{key:22} {value}")
    return 0


_SUITES = {"core": "vlcs-bench-core", "strict": "vlcs-bench-strict"}


def bench_program(name: str) -> dict[str, Any]:
    """Run a C benchmark program under the launcher; its JSON output.
    Raises subprocess.CalledProcessError (with stderr) when it fails."""
    proc = subprocess.run(
        [str(program_path("vlcs-run")), "--", str(program_path(name))],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(proc.stdout)


def _bench_all(args: argparse.Namespace) -> int:
    from vlcs.evaluation import CASES, run_all
    from vlcs.evaluation.report import write

    try:
        cases = [int(x) for x in args.cases.split(",")] if args.cases else sorted(CASES)
    except ValueError:
        cases = [-1]
    if any(n not in CASES for n in cases):
        print(
            f"vlcs bench all: --cases takes numbers from 1 to {len(CASES)} separated by "
            f"commas, e.g. --cases 1,5; got '{args.cases}'",
            file=sys.stderr,
        )
        return 2
    doc = run_all(cases, quick=args.quick)
    report = write(doc, args.out)
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print(report.read_text())
    print(
        f"vlcs bench all: report in {report}, JSON in {report.with_name('results.json')}",
        file=sys.stderr,
    )
    return 1 if any("error" in c for c in doc["cases"]) else 0


def _bench(args: argparse.Namespace) -> int:
    if args.suite == "all":
        return _bench_all(args)
    if args.suite == "python":
        from vlcs import bench_python

        result = bench_python.run(repeats=args.repeats)
        print(json.dumps(result, indent=2) if args.json else bench_python.report(result))
        return 0
    if args.suite == "shim":
        from vlcs.bench_calls import run

        print("vlcs bench shim: building and measuring (a few seconds)...", file=sys.stderr)
        try:
            result = run()
        except subprocess.CalledProcessError as e:
            print(f"vlcs bench shim: a step failed: {e}", file=sys.stderr)
            return 1
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            sc, sv = result["calls"]["shim_call"], result["calls"]["service_call"]
            print(
                f"direct call {sc['direct_ns']:.2f} ns, through a shim {sc['shim_ns']:.2f} ns "
                f"(+{sc['overhead_ns']:.2f} ns; target <= +5 ns)"
            )
            print(
                f"service call from the base {sv['base_ns']:.2f} ns, from a context "
                f"{sv['context_ns']:.2f} ns ({sv['ratio']:.2f}x)"
            )
        return 0
    program = _SUITES.get(args.suite)
    if program is None:
        print(
            f"vlcs bench: unknown suite '{args.suite}'; "
            f"available: all, {', '.join(_SUITES)}, shim, python",
            file=sys.stderr,
        )
        return 2
    print(f"vlcs bench {args.suite}: measuring (a few seconds)...", file=sys.stderr)
    try:
        result = bench_program(program)
    except subprocess.CalledProcessError as e:
        print(e.stderr, file=sys.stderr, end="")
        print(
            f"vlcs bench {args.suite}: the benchmark failed (exit {e.returncode})",
            file=sys.stderr,
        )
        return 1
    result["machine"] = {
        "cpu_model": _cpu_model(),
        "cpus": os.cpu_count(),
        "glibc": _glibc_version(),
        "kernel": platform.release(),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    elif args.suite == "core":
        _print_core(result)
    else:
        _print_strict(result)
    return 0


def _target(r: dict[str, Any]) -> str:
    if "meets_target" not in r:
        return ""
    if "target_ratio" in r:
        goal = f"<= {r['target_ratio']}x"
    elif "target_extra_ns" in r:
        goal = f"<= +{r['target_extra_ns'] / 1000:g} us"
    else:
        goal = f"<= {r.get('target_ns', 0) / 1000:g} us"
    return f"{goal} {'ok' if r['meets_target'] else 'MISSED'}"


def _print_core(result: dict[str, Any]) -> None:
    print(f"{'call':32} {'inside':>12} {'outside':>12} {'ratio':>7}  target")
    for name, r in result["calls"].items():
        print(
            f"{name:32} {r['inside_ns']:10.1f}ns {r['outside_ns']:10.1f}ns "
            f"{r['ratio']:6.2f}x  {_target(r)}"
        )
    print()
    for name, r in result["contexts"].items():
        print(f"{name:40} {r['ns'] / 1000:10.2f} us  {_target(r)}")
    print()
    for name, r in result["load"].items():
        print(
            f"load {name:30} once {r['once_ms']:7.2f} ms, "
            f"4 contexts {r['four_contexts_ms']:7.2f} ms ({r['ratio']:.1f}x)"
        )


def _print_strict(result: dict[str, Any]) -> None:
    print(f"{'call':28} {'plain':>10} {'strict':>10} {'ratio':>7} {'floor':>10}  target")
    for name, r in result["calls"].items():
        floor = f"{r['platform_floor_ns']:8.1f}ns" if "platform_floor_ns" in r else " " * 10
        print(
            f"{name:28} {r['plain_ns']:8.1f}ns {r['strict_ns']:8.1f}ns "
            f"{r['ratio']:6.2f}x {floor}  {_target(r)}"
        )
    print("floor: the same call under a do-nothing seccomp filter / empty SIGSYS handler")


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _demo(args: argparse.Namespace) -> int:
    if args.which == "python":
        from vlcs import demo_python

        demo_python.run(out_png=args.png, repeats=args.repeats)
        return 0
    demo = program_path("vlcs-demo-nested-gemm")
    return subprocess.call([str(program_path("vlcs-run")), "--", str(demo), str(args.repeats)])


def _shim(args: argparse.Namespace) -> int:
    from vlcs.shim import ShimError, generate

    try:
        report = generate(args.library, args.output)
    except (ShimError, OSError) as e:
        print(f"vlcs shim: {e}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(
        f"wrote {report['shim']}: {report['functions']} functions dispatched per context"
        f" ({report['cxx_functions']} of them C++)"
    )
    data = report["data_symbols_not_dispatched"] + report["tls_symbols_not_dispatched"]
    if data:
        shown = ", ".join(data[:8]) + (" ..." if len(data) > 8 else "")
        print(
            f"not in the shim: {len(data)} data symbols ({shown}); a program that uses them "
            "directly cannot run on this shim. Full list in "
            f"{Path(report['shim']).name}.json"
        )
    print(f"use: LD_LIBRARY_PATH={Path(args.output).resolve()} ./your-program")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="vlcs", description="Virtual Library Contexts for Linux.")
    p.add_argument("--version", action="version", version=f"vlcs {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)

    r = sub.add_parser(
        "run",
        help="start a program with the glibc tunables that many contexts need",
        description="Start PROGRAM with GLIBC_TUNABLES raised (glibc.rtld.nns=16, "
        "glibc.rtld.optional_static_tls) so that up to 15 contexts fit in one process.",
    )
    r.add_argument("--static-tls", type=int, metavar="BYTES", help="spare static TLS (65536)")
    r.add_argument("command", nargs=argparse.REMAINDER, help="-- PROGRAM [ARGS...]")
    r.set_defaults(func=_run)

    i = sub.add_parser("info", help="where vlcs is installed; compiler flags")
    i.add_argument("--cflags", action="store_true", help="print the include flag")
    i.add_argument("--libs", action="store_true", help="print the link flags")
    i.add_argument("--json", action="store_true", help="print JSON")
    i.set_defaults(func=_info)

    b = sub.add_parser("bench", help="run a benchmark suite")
    b.add_argument("suite", help="all (the evaluation), core, strict, shim or python")
    b.add_argument("--json", action="store_true", help="print JSON")
    b.add_argument("--repeats", type=int, default=5, help="repeats per side (python)")
    b.add_argument("--quick", action="store_true", help="all: smaller sizes (~5 min on 2 cores)")
    b.add_argument("--cases", help="all: which cases, e.g. 1,5 (default: every case)")
    b.add_argument("--out", default="vlcs-bench-results", help="all: folder for the report")
    b.set_defaults(func=_bench)

    s = sub.add_parser("shim", help="generate a transparent-mode shim for a library")
    s.add_argument("library", help="the real shared library, e.g. /usr/lib/.../libarpack.so.2")
    s.add_argument("-o", "--output", required=True, help="folder to write the shim into")
    s.add_argument("--json", action="store_true", help="print the report as JSON")
    s.set_defaults(func=_shim)

    d = sub.add_parser("demo", help="run a demo: python (h5py + numpy tasks) or gemm (C++)")
    d.add_argument("which", nargs="?", choices=["python", "gemm"], default="python")
    d.add_argument("--repeats", type=int, default=3)
    d.add_argument("--png", default="vlcs-demo.png", help="chart of the python demo")
    d.set_defaults(func=_demo)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except FileNotFoundError as e:
        print(f"vlcs: {e}", file=sys.stderr)
        return 1

"""``vlcs bench ...`` and ``vlcs demo ...``: parsing and dispatch.

The ``vlcs`` command hands these two sub-commands over with their arguments;
``python -m vlcs_bench bench core`` is the same thing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path


def _bench_all(args: argparse.Namespace) -> int:
    from vlcs_bench.evaluation import CASES, run_all
    from vlcs_bench.evaluation.report import write

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
    print(json.dumps(doc, indent=2) if args.json else report.read_text())
    print(
        f"vlcs bench all: report in {report}, JSON in {report.with_name('results.json')}",
        file=sys.stderr,
    )
    return 1 if any("error" in c for c in doc["cases"]) else 0


def _bench_python(args: argparse.Namespace) -> int:
    from vlcs_bench import python_imports

    result = python_imports.run(repeats=args.repeats)
    print(json.dumps(result, indent=2) if args.json else python_imports.report(result))
    return 0


def _bench_imports(args: argparse.Namespace) -> int:
    from vlcs_bench import module_table

    result = module_table.run(
        repeats=args.repeats, instructions=args.instructions, quick=args.quick
    )
    print(json.dumps(result, indent=2) if args.json else module_table.report(result))
    return 0


def _bench_scale(args: argparse.Namespace) -> int:
    from vlcs_bench import scale

    counts = scale.COUNTS if not args.quick else (1, 15, 32)
    result = scale.run(counts=counts, quick=args.quick)
    print(json.dumps(result, indent=2) if args.json else scale.report(result))
    return 1 if any("error" in r for r in result["rows"]) else 0


def _bench_create(args: argparse.Namespace) -> int:
    from vlcs_bench import creation

    print("vlcs bench create: building and measuring (about 10 s)...", file=sys.stderr)
    try:
        result = creation.run(prototype=args.prototype)
    except RuntimeError as e:  # could not be built
        print(f"vlcs bench create: {e}", file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as e:
        print(e.stderr, file=sys.stderr, end="")
        print(f"vlcs bench create: a run failed (exit {e.returncode})", file=sys.stderr)
        return 1
    print(json.dumps(result, indent=2) if args.json else creation.report(result))
    return 0


def _bench_recycle(args: argparse.Namespace) -> int:
    from vlcs_bench import recycle

    result = recycle.run(requests=args.requests)
    print(json.dumps(result, indent=2) if args.json else recycle.report(result))
    return 1 if any("error" in w for w in result["ways"].values()) else 0


def _bench_exec(args: argparse.Namespace) -> int:
    from vlcs_bench import exec_bench

    try:
        result = exec_bench.run(instances=args.instances, repeats=min(args.repeats, 5))
    except RuntimeError as e:
        print(f"vlcs bench exec: {e}", file=sys.stderr)
        return 1
    print(json.dumps(result, indent=2) if args.json else exec_bench.report(result))
    return 0


def _bench_own(args: argparse.Namespace) -> int:
    from vlcs_bench import own_python

    print("vlcs bench own: measuring (a minute or two)...", file=sys.stderr)
    result = own_python.run(workers=args.instances, repeats=args.repeats, quick=args.quick)
    print(json.dumps(result, indent=2) if args.json else own_python.report(result))
    return (
        0
        if all(r["same_result"] for ways in result["workloads"].values() for r in ways.values())
        else 1
    )


def _bench_reuse(args: argparse.Namespace) -> int:
    from vlcs_bench import reuse

    print("vlcs bench reuse: measuring (a minute)...", file=sys.stderr)
    result = reuse.run(workers=args.instances, repeats=args.repeats)
    print(json.dumps(result, indent=2) if args.json else reuse.report(result))
    return 1 if any("error" in r for r in result["ways"].values()) else 0


def _bench_shim(args: argparse.Namespace) -> int:
    from vlcs_bench import tables
    from vlcs_bench.calls import run

    print("vlcs bench shim: building and measuring (a few seconds)...", file=sys.stderr)
    try:
        result = run()
    except subprocess.CalledProcessError as e:
        print(f"vlcs bench shim: a step failed: {e}", file=sys.stderr)
        return 1
    print(json.dumps(result, indent=2) if args.json else tables.shim(result))
    return 0


_PROGRAMS = {"core": "vlcs-bench-core", "strict": "vlcs-bench-strict"}


def _bench_program(args: argparse.Namespace) -> int:
    from vlcs_bench import programs, tables
    from vlcs_bench.machine import cpu_model, glibc_version

    print(f"vlcs bench {args.suite}: building and measuring (a few seconds)...", file=sys.stderr)
    try:
        result = programs.run_json(_PROGRAMS[args.suite])
    except RuntimeError as e:  # could not be built
        print(f"vlcs bench {args.suite}: {e}", file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as e:
        print(e.stderr, file=sys.stderr, end="")
        print(
            f"vlcs bench {args.suite}: the benchmark failed (exit {e.returncode})",
            file=sys.stderr,
        )
        return 1
    result["machine"] = {
        "cpu_model": cpu_model(),
        "cpus": os.cpu_count(),
        "glibc": glibc_version(),
        "kernel": platform.release(),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(tables.core(result) if args.suite == "core" else tables.strict(result))
    return 0


_SUITES = {
    "all": _bench_all,
    "core": _bench_program,
    "strict": _bench_program,
    "shim": _bench_shim,
    "python": _bench_python,
    "imports": _bench_imports,
    "exec": _bench_exec,
    "own": _bench_own,
    "recycle": _bench_recycle,
    "reuse": _bench_reuse,
    "create": _bench_create,
    "scale": _bench_scale,
}


def _bench(args: argparse.Namespace) -> int:
    run = _SUITES.get(args.suite)
    if run is None:
        print(
            f"vlcs bench: unknown suite '{args.suite}'; available: {', '.join(_SUITES)}",
            file=sys.stderr,
        )
        return 2
    return run(args)


def _demo(args: argparse.Namespace) -> int:
    if args.which == "python":
        from vlcs_bench import demo

        demo.run(out_png=args.png, repeats=args.repeats)
        return 0
    from vlcs_bench.programs import launch

    try:
        argv = launch("vlcs-demo-nested-gemm", str(args.repeats))
    except RuntimeError as e:
        print(f"vlcs demo gemm: {e}", file=sys.stderr)
        return 1
    return subprocess.call(argv)


def add_bench_arguments(b: argparse.ArgumentParser) -> None:
    b.add_argument(
        "suite",
        help="all (the evaluation), core, create, strict, shim, python, imports, recycle, "
        "reuse, exec, own or scale",
    )
    b.add_argument("--json", action="store_true", help="print JSON")
    b.add_argument("--repeats", type=int, default=5, help="repeats per side (python)")
    b.add_argument("--requests", type=int, default=1000, help="recycle: requests per way")
    b.add_argument(
        "--instances",
        type=int,
        help="exec, own, reuse: instances, workers (default: one per CPU)",
    )
    b.add_argument(
        "--quick",
        action="store_true",
        help="all, own, scale, imports: smaller sizes (all: ~6 min on 2 cores)",
    )
    b.add_argument(
        "--instructions",
        action="store_true",
        help="imports: count each read's instructions too (callgrind; steady where time is not)",
    )
    b.add_argument("--cases", help="all: which cases, e.g. 1,5 (default: every case)")
    b.add_argument(
        "--prototype",
        type=Path,
        help="create: also time the paper's prototype, built from this checkout of "
        "pecos/Virtual-Library-Context",
    )
    b.add_argument("--out", default="vlcs-bench-results", help="all: folder for the report")
    b.set_defaults(func=_bench)


def add_demo_arguments(d: argparse.ArgumentParser) -> None:
    d.add_argument("which", nargs="?", choices=["python", "gemm"], default="python")
    d.add_argument("--repeats", type=int, default=3)
    d.add_argument("--png", default="vlcs-demo.png", help="chart of the python demo")
    d.set_defaults(func=_demo)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="vlcs", description="vlcs benchmarks and demos.")
    sub = p.add_subparsers(dest="cmd", required=True)
    add_bench_arguments(sub.add_parser("bench", help="run a benchmark suite"))
    add_demo_arguments(
        sub.add_parser("demo", help="run a demo: python (h5py + numpy tasks) or gemm (C++)")
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))

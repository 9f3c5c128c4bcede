"""The ``vlcs`` command: parses its arguments and dispatches to the package.

vlcs run [--contexts N | --static-tls BYTES] -- PROGRAM [ARGS...]
vlcs info [--cflags] [--libs] [--json]
vlcs shim LIBRARY -o DIR [--json]
vlcs check PKG [PKG...] [--json] [--timeout S] [--python own]
vlcs tune TASKS.toml [--cpus LIST] [--method smart|grid] [--step N | --places core|l3...]
          [--overlap] [--repeats N] [--timeout S] [--out DIR] [--dask ADDRESS] [--json]
vlcs bench all [--quick] [--cases N,M] [--out DIR] [--json]   (package vlcs-bench)
vlcs bench core|strict|shim|python [--json]                   (package vlcs-bench)
vlcs demo [python|gemm]                                       (package vlcs-bench)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from vlcs._cpus import format_list, place_cpus
from vlcs._exec import OUTPUTS, STDINS
from vlcs._lib import auto_services
from vlcs._paths import include_dir, install_info, native_dir, program_path
from vlcs._topo import PLACES, hwloc_library
from vlcs._version import __version__


def _run(args: argparse.Namespace) -> int:
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        print("vlcs run: no program given; usage: vlcs run -- PROGRAM [ARGS...]", file=sys.stderr)
        return 2
    launcher = str(program_path("vlcs-run"))
    argv = [launcher]
    if args.trace:
        os.environ["VLCS_TRACE_FILE"] = os.path.abspath(args.trace)
    if args.static_tls is not None:
        argv += ["--static-tls", str(args.static_tls)]
    if args.contexts is not None:
        argv += ["--contexts", str(args.contexts)]
    argv += ["--", *command]
    # exec: the program replaces this process, as with env(1) or taskset(1).
    os.execv(launcher, argv)
    return 127  # not reached


def _exec(args: argparse.Namespace) -> int:
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        print(
            "vlcs exec: no program given; usage: vlcs exec -n N -- PROGRAM [ARGS...]",
            file=sys.stderr,
        )
        return 2
    env = {}
    for item in args.env:
        key, eq, value = item.partition("=")
        if not eq or not key:
            print(f"vlcs exec: --env takes NAME=VALUE; got {item!r}", file=sys.stderr)
            return 2
        env[key] = value
    tuned = "glibc.rtld.nns" in os.environ.get("GLIBC_TUNABLES", "")
    if args.instances > 4 and not tuned and args.raw_argv is not None:
        # Each instance is a context with a namespace of its own: past a
        # few, start again under the launcher, which raises glibc's
        # namespaces and static TLS to what 15 contexts need (a few fit
        # without, and skip the second start of Python).
        launcher = str(program_path("vlcs-run"))
        os.execv(launcher, [launcher, "--", sys.executable, "-m", "vlcs", *args.raw_argv])
    from vlcs._errors import VlcsError
    from vlcs._exec import exec_instances

    try:
        statuses = exec_instances(
            command,
            args.instances,
            cpus=args.cpus,
            env=env,
            output=args.output,
            stdin=args.stdin,
            places=args.places,
            stdout=args.stdout,
            stderr=args.stderr,
        )
    except (VlcsError, ValueError, TypeError, OSError) as e:
        print(f"vlcs exec: {e}", file=sys.stderr)
        return 127 if isinstance(e, VlcsError) and e.code == 2 else 126
    except KeyboardInterrupt:
        # as a shell's Ctrl-C ends its processes: the instances end with
        # this process, now, none of their exit handlers run
        sys.stdout.flush()
        print("vlcs exec: interrupted: the instances end with the process", file=sys.stderr)
        sys.stderr.flush()
        os._exit(130)
    return next((s for s in statuses if s != 0), 0)


def _topo(args: argparse.Namespace) -> int:
    if args.topology and args.synthetic:
        print("vlcs topo: give --topology or --synthetic, not both", file=sys.stderr)
        return 2
    if args.topology:
        os.environ["VLCS_TOPOLOGY"] = args.topology
    elif args.synthetic:
        os.environ["VLCS_TOPOLOGY"] = "synthetic:" + args.synthetic
    from vlcs import _topo
    from vlcs._errors import VlcsError

    try:
        machine = _topo.describe()
        cpus = None if args.cpus is None else place_cpus(args.cpus)
        if cpus is None and (args.topology or args.synthetic):
            cpus = machine.get("pu") and [c for pu in machine["pu"] for c in pu]
        splits = _topo.split(args.workers, args.places, cpus) if args.workers else []
    except (VlcsError, ValueError) as e:
        print(f"vlcs topo: {e}", file=sys.stderr)
        return 1

    def where(cpus: list[int]) -> str:
        """The smallest domain holding every one of cpus."""
        holding = [
            (len(o), f"{kind}:{i}")
            for kind in PLACES[:-1]  # every domain wider than a hardware thread
            for i, o in enumerate(machine.get(kind, []))
            if set(cpus) <= set(o)
        ]
        return min(holding)[1] if holding else "machine"

    if args.json:
        print(
            json.dumps(
                {"topology": machine, "workers": [{"cpus": s, "inside": where(s)} for s in splits]},
                indent=2,
            )
        )
        return 0
    for kind, objs in machine.items():
        lists = "  ".join(format_list(o) for o in objs[:16]) + ("  ..." if len(objs) > 16 else "")
        print(f"{kind:8} {len(objs):4}  {lists}")
    for i, s in enumerate(splits):
        print(f"worker {i}: cpus {format_list(s)} (inside {where(s)})")
    return 0


def _trace(args: argparse.Namespace) -> int:
    from vlcs._trace_show import NoPlots, draw

    try:
        summary = draw(args.trace, args.output)
    except NoPlots as e:
        print(f"vlcs trace show: {e}", file=sys.stderr)
        return 1
    except (OSError, ValueError) as e:
        print(f"vlcs trace show: {e}", file=sys.stderr)
        return 1
    except (KeyError, TypeError, AttributeError) as e:
        print(
            f"vlcs trace show: {args.trace} is not a trace vlcs wrote (an event lacks {e}); "
            "give the file `vlcs run --trace` or vlcs.trace() wrote",
            file=sys.stderr,
        )
        return 1
    print(summary)
    return 0


def _doctor(args: argparse.Namespace) -> int:
    from vlcs._doctor import main as doctor

    return doctor(as_json=args.json)


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
    info = install_info()
    # what the first load into a context makes services (docs/gpus.md)
    names = [s["name"] for s in auto_services()]
    info["auto_services"] = ", ".join(names) if names else "none (VLCS_AUTO_SERVICES is empty)"
    from vlcs._errors import VlcsError

    try:
        info["hwloc"] = hwloc_library()
    except VlcsError as e:
        info["hwloc"] = f"none: {e}"
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        width = max(map(len, info))
        for key, value in info.items():
            print(f"{key:{width}} {value}")
    return 0


_BENCH_MISSING = (
    "vlcs {cmd}: the benchmarks and demos are a separate package, vlcs-bench, which is not "
    "installed; from a vlcs source tree run `pip install ./bench` (./run demo and ./run test "
    "install it)"
)


def _bench_package(args: argparse.Namespace) -> int:
    """Hand `vlcs bench ...` / `vlcs demo ...` to the vlcs-bench package."""
    try:
        from vlcs_bench.cli import main as bench_main
    except ImportError as e:
        if e.name is None or not e.name.startswith("vlcs_bench"):
            raise
        print(_BENCH_MISSING.format(cmd=args.cmd), file=sys.stderr)
        return 1
    return bench_main([args.cmd, *args.rest])


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


def _check(args: argparse.Namespace) -> int:
    from vlcs.check import run

    return run(args.packages, as_json=args.json, timeout=args.timeout, python=args.python)


def _tune(args: argparse.Namespace) -> int:
    from vlcs._errors import VlcsError
    from vlcs._tune import TuneError, load_tasks, tune

    try:
        plan = tune(
            load_tasks(args.tasks),
            args.cpus,
            args.method,
            step=args.step,
            places=args.places,
            overlap=args.overlap,
            repeats=args.repeats,
            timeout=args.timeout,
            out=args.out,
            dask=args.dask,
        )
    except (TuneError, VlcsError) as e:
        print(f"vlcs tune: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(plan, indent=2))
    else:
        for t in plan["tasks"]:
            env = " ".join(f"{k}={v}" for k, v in t["env"].items())
            print(f"{t['name']:20} CPUs {t['cpus']}" + (f"  {env}" if env else ""))
        print(
            f"makespan {plan['makespan_s']:.3f} s (sharing every CPU "
            f"{plan['baselines']['shared_s']:.3f} s, one after another "
            f"{plan['baselines']['sequential_s']:.3f} s); {plan['runs']} runs of the grid's "
            f"{plan['grid_runs']}; plan in {Path(args.out) / 'plan.json'}"
        )
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="vlcs", description="Virtual Library Contexts for Linux.")
    p.add_argument("--version", action="version", version=f"vlcs {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)

    r = sub.add_parser(
        "run",
        help="start a program with the glibc tunables that many contexts need",
        description="Start PROGRAM with GLIBC_TUNABLES raised (glibc.rtld.nns=16, "
        "glibc.rtld.optional_static_tls) so that 15 contexts with namespaces of their own and "
        "hundreds in copy mode fit in one process.",
    )
    sized = r.add_mutually_exclusive_group()
    sized.add_argument("--static-tls", type=int, metavar="BYTES", help="spare static TLS (65536)")
    sized.add_argument(
        "--contexts",
        type=int,
        metavar="N",
        help="size static TLS for N contexts (256 bytes each; never below 65536, which holds "
        "15 namespaces and 256 copy-mode contexts with libgomp)",
    )
    r.add_argument(
        "--trace",
        metavar="OUT.json",
        help="record a timeline (Chrome trace events; VLCS_TRACE_FILE)",
    )
    r.add_argument("command", nargs=argparse.REMAINDER, help="-- PROGRAM [ARGS...]")
    r.set_defaults(func=_run)

    e = sub.add_parser(
        "exec",
        help="run a program N times at once in this process, each instance in a context",
        description="Run PROGRAM (dynamically linked, position-independent: gcc's and Debian's "
        "default) N times at once inside this process, each instance in a context of its own "
        "(its globals and its libraries', its share of the CPUs, its environment with "
        "VLCS_INSTANCE=i and VLCS_INSTANCES=N), each on a thread of its own. {i} in an "
        "argument becomes the instance's number. An instance's exit ends it only; the exit "
        "status is the first non-zero one, or 0.",
    )
    e.add_argument("-n", "--instances", type=int, required=True, metavar="N")
    e.add_argument(
        "--cpus", help='the CPUs split among the instances, e.g. "0-7" or "numa:0" (default: all)'
    )
    e.add_argument(
        "--places",
        choices=PLACES,
        help="split along the topology: each instance's CPUs inside one such domain",
    )
    e.add_argument(
        "--env", action="append", default=[], metavar="NAME=VALUE", help="for every instance"
    )
    e.add_argument(
        "--output",
        choices=OUTPUTS,
        default="tag",
        help="tag: each whole line prefixed with [i] (default); plain: as written",
    )
    e.add_argument(
        "--stdin",
        choices=STDINS,
        default="first",
        help="who reads this process's stdin: instance 0 (default, the others read nothing) or all",
    )
    e.add_argument(
        "--stdout",
        metavar="FILE",
        help="each instance's stdout to a file of its own, {i} its number (out.{i}), as written",
    )
    e.add_argument("--stderr", metavar="FILE", help="the same for stderr (err.{i})")
    e.add_argument("command", nargs=argparse.REMAINDER, help="-- PROGRAM [ARGS...]")
    e.set_defaults(func=_exec)

    tp = sub.add_parser(
        "topo",
        help="the machine as vlcs sees it (hwloc), and the splits it makes for N workers",
        description="Print the machine's packages, NUMA nodes, caches, cores and hardware "
        "threads with their CPUs, and with --workers the CPUs each of N workers would get "
        "(split along --places). --topology or --synthetic plan for a node you are not on.",
    )
    tp.add_argument("--topology", metavar="FILE.xml", help="an hwloc XML export (lstopo FILE.xml)")
    tp.add_argument("--synthetic", metavar="DESC", help='e.g. "pack:2 numa:2 l3:4 core:8 pu:2"')
    tp.add_argument("--workers", type=int, metavar="N", help="show the split for N workers")
    tp.add_argument(
        "--places",
        default="core",
        choices=PLACES,
        help="the domains a worker's CPUs stay inside (default core)",
    )
    tp.add_argument("--cpus", help="the CPUs to split (a list or a place; default: all)")
    tp.add_argument("--json", action="store_true", help="print JSON")
    tp.set_defaults(func=_topo)

    tr = sub.add_parser("trace", help="draw a trace vlcs recorded (vlcs run --trace, vlcs.trace)")
    trs = tr.add_subparsers(dest="trace_cmd", required=True)
    show = trs.add_parser(
        "show",
        help="draw a trace as a picture: CPUs x time coloured by context, lends marked",
    )
    show.add_argument("trace", help="the trace (JSON)")
    show.add_argument("-o", "--output", default="timeline.png", help="the PNG to write")
    show.set_defaults(func=_trace)

    d = sub.add_parser(
        "doctor",
        help="what this machine and Python give vlcs, and what to do where they fall short",
    )
    d.add_argument("--json", action="store_true", help="print JSON")
    d.set_defaults(func=_doctor)

    i = sub.add_parser("info", help="where vlcs is installed; compiler flags")
    i.add_argument("--cflags", action="store_true", help="print the include flag")
    i.add_argument("--libs", action="store_true", help="print the link flags")
    i.add_argument("--json", action="store_true", help="print JSON")
    i.set_defaults(func=_info)

    for cmd, text in (
        ("bench", "run a benchmark suite (package vlcs-bench): all, core, strict, shim, python"),
        ("demo", "run a demo (package vlcs-bench): python (h5py + numpy tasks) or gemm (C++)"),
    ):
        b = sub.add_parser(cmd, help=text, add_help=False, prefix_chars="\0")
        b.add_argument("rest", nargs=argparse.REMAINDER)
        b.set_defaults(func=_bench_package)

    s = sub.add_parser("shim", help="generate a transparent-mode shim for a library")
    s.add_argument("library", help="the real shared library, e.g. /usr/lib/.../libarpack.so.2")
    s.add_argument("-o", "--output", required=True, help="folder to write the shim into")
    s.add_argument("--json", action="store_true", help="print the report as JSON")
    s.set_defaults(func=_shim)

    c = sub.add_parser(
        "check",
        help="check that packages work in contexts (each in a fresh interpreter)",
        description="Import each package in two contexts at once and in the base, in a fresh "
        "interpreter: its submodules, private copies, extension modules in the context's "
        "namespace, a smoke test for well-known packages. Exit 0 if all pass, 1 if one fails.",
    )
    c.add_argument("packages", nargs="+", metavar="PKG", help="import names: numpy sklearn cv2")
    c.add_argument("--json", action="store_true", help="print one JSON document")
    c.add_argument(
        "--timeout", type=float, default=300.0, metavar="S", help="seconds per package (300)"
    )
    c.add_argument(
        "--python",
        choices=("shared", "own"),
        default="shared",
        help="own: in contexts with a CPython runtime of their own each (python='own')",
    )
    c.set_defaults(func=_check)

    t = sub.add_parser(
        "tune",
        help="find the CPU partition of concurrent tasks (the auto-tuner)",
        description="Measure the tasks of TASKS (TOML [[task]] tables or JSON) running at once "
        "in CPU partitions, each trial in a fresh process, and write the best plan "
        "(plan.json, report.md, heatmap.png for two tasks). smart fits each task's scaling "
        "from a few runs alone and measures only the promising partitions; grid measures all. "
        'A task\'s [task.choices] (e.g. OMP_NUM_THREADS = ["{cpus}", "1"]) are crossed '
        "with the partitions.",
    )
    t.add_argument("tasks", help="the tasks file, e.g. tasks.toml")
    t.add_argument("--cpus", help='the CPUs to split, e.g. "0-15" (default: all usable)')
    t.add_argument("--method", choices=("smart", "grid"), default="smart")
    t.add_argument("--step", type=int, default=1, help="CPU counts in multiples of N (1)")
    t.add_argument("--overlap", action="store_true", help="allow tasks to share CPUs")
    t.add_argument(
        "--places",
        choices=[p for p in PLACES if p != "pu"],
        help="give each task whole domains of this type (no task across two L3s or NUMA "
        "nodes; a core's hardware threads together): fewer, better partitions",
    )
    t.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="at most N interleaved rounds over the measured configurations, until the "
        "best stays the best (1)",
    )
    t.add_argument("--timeout", type=float, default=600.0, metavar="S", help="seconds per trial")
    t.add_argument("--out", default="tune", help="folder for plan.json, report.md (./tune)")
    t.add_argument(
        "--dask",
        metavar="ADDRESS",
        help="run the trials on the workers of this Dask scheduler (identical machines, one "
        "trial per machine at a time)",
    )
    t.add_argument("--json", action="store_true", help="print the plan as JSON")
    t.set_defaults(func=_tune)

    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.raw_argv = sys.argv[1:] if argv is None else None  # to start again as given
    try:
        return int(args.func(args))
    except FileNotFoundError as e:
        print(f"vlcs: {e}", file=sys.stderr)
        return 1

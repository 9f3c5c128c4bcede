"""``vlcs bench`` and ``vlcs demo``: handed to the vlcs-bench package, the one module of
the runtime that names it."""

from __future__ import annotations

import argparse
import sys

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


def add(sub: argparse._SubParsersAction) -> None:
    """The subcommand's parser, on sub."""
    for cmd, text in (
        ("bench", "run a benchmark suite (package vlcs-bench): all, core, strict, shim, python"),
        ("demo", "run a demo (package vlcs-bench): python (h5py + numpy tasks) or gemm (C++)"),
    ):
        b = sub.add_parser(cmd, help=text, add_help=False, prefix_chars="\0")
        b.add_argument("rest", nargs=argparse.REMAINDER)
        b.set_defaults(func=_bench_package)

"""``vlcs topo``: the machine as vlcs sees it, and the splits it makes for N workers."""

from __future__ import annotations

import argparse
import json
import os
import sys

from vlcs._cpus import format_list, place_cpus
from vlcs._topo import PLACES


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


def add(sub: argparse._SubParsersAction) -> None:
    """The subcommand's parser, on sub."""
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

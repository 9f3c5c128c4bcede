"""``vlcs info``: where vlcs is installed; compiler flags."""

from __future__ import annotations

import argparse
import json

from vlcs._lib import auto_services
from vlcs._paths import include_dir, install_info, native_dir
from vlcs._topo import hwloc_library


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


def add(sub: argparse._SubParsersAction) -> None:
    """The subcommand's parser, on sub."""
    i = sub.add_parser("info", help="where vlcs is installed; compiler flags")
    i.add_argument("--cflags", action="store_true", help="print the include flag")
    i.add_argument("--libs", action="store_true", help="print the link flags")
    i.add_argument("--json", action="store_true", help="print JSON")
    i.set_defaults(func=_info)

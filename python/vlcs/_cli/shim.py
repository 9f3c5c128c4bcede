"""``vlcs shim``: a transparent-mode shim generated for a library."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


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


def add(sub: argparse._SubParsersAction) -> None:
    """The subcommand's parser, on sub."""
    s = sub.add_parser("shim", help="generate a transparent-mode shim for a library")
    s.add_argument("library", help="the real shared library, e.g. /usr/lib/.../libarpack.so.2")
    s.add_argument("-o", "--output", required=True, help="folder to write the shim into")
    s.add_argument("--json", action="store_true", help="print the report as JSON")
    s.set_defaults(func=_shim)

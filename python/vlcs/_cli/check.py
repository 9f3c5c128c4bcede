"""``vlcs check``: packages tried in contexts, each in a fresh interpreter."""

from __future__ import annotations

import argparse


def _check(args: argparse.Namespace) -> int:
    from vlcs.check import run

    return run(args.packages, as_json=args.json, timeout=args.timeout, python=args.python)


def add(sub: argparse._SubParsersAction) -> None:
    """The subcommand's parser, on sub."""
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

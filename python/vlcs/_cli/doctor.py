"""``vlcs doctor``: what this machine and Python give vlcs."""

from __future__ import annotations

import argparse


def _doctor(args: argparse.Namespace) -> int:
    from vlcs._doctor import main as doctor

    return doctor(as_json=args.json)


def add(sub: argparse._SubParsersAction) -> None:
    """The subcommand's parser, on sub."""
    d = sub.add_parser(
        "doctor",
        help="what this machine and Python give vlcs, and what to do where they fall short",
    )
    d.add_argument("--json", action="store_true", help="print JSON")
    d.set_defaults(func=_doctor)

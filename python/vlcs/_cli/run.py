"""``vlcs run``: a program started with the glibc tunables many contexts need."""

from __future__ import annotations

import argparse
import os
import sys

from vlcs._paths import program_path


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


def add(sub: argparse._SubParsersAction) -> None:
    """The subcommand's parser, on sub."""
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

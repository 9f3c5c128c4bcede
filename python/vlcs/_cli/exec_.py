"""``vlcs exec``: a program run N times at once in this process, each instance in a context."""

from __future__ import annotations

import argparse
import os
import sys
import time

from vlcs._choices import OUTPUTS, PLACES, STDINS
from vlcs._cli.again import start_again_if_many


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
    if args.raw_argv is not None:
        # Each instance is a context with a namespace of its own while
        # glibc has one, then renamed copies: past a few, start again under
        # the launcher (a few fit without, and skip the second start of
        # Python; `vlcs` checks this before it builds its parser).
        start_again_if_many(args.instances, args.raw_argv)
    from vlcs._errors import VlcsError
    from vlcs._exec import exec_instances

    if "TZ" in env:
        # Every instance gets the same --env: this process, which runs
        # nothing else, takes its time zone too, so that the instances past
        # the namespaces (libc's one zone per process) see it as well.
        os.environ["TZ"] = env["TZ"]
        time.tzset()  # libc loaded the zone already: localtime_r would keep it

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


def add(sub: argparse._SubParsersAction) -> None:
    """The subcommand's parser, on sub."""
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

"""``vlcs trace show``: a recorded trace drawn as a picture."""

from __future__ import annotations

import argparse
import sys


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


def add(sub: argparse._SubParsersAction) -> None:
    """The subcommand's parser, on sub."""
    tr = sub.add_parser("trace", help="draw a trace vlcs recorded (vlcs run --trace, vlcs.trace)")
    trs = tr.add_subparsers(dest="trace_cmd", required=True)
    show = trs.add_parser(
        "show",
        help="draw a trace as a picture: CPUs x time coloured by context, lends marked",
    )
    show.add_argument("trace", help="the trace (JSON)")
    show.add_argument("-o", "--output", default="timeline.png", help="the PNG to write")
    show.set_defaults(func=_trace)

"""``vlcs tune``: the auto-tuner of concurrent tasks' CPU partitions."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from vlcs._choices import PLACES


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


def add(sub: argparse._SubParsersAction) -> None:
    """The subcommand's parser, on sub."""
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

"""``vlcs trace show``: a trace vlcs recorded, drawn as a picture.

Top: CPUs x time, each CPU coloured by the context that held it while a
thread worked inside that context (its CPU set from its enters and from the
elastic lends and reclaims), lends and reclaims marked.  Bottom: threads x
time, "inside <context>" slices and pool tasks.  For people who would
rather look than open Perfetto.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from vlcs._cpus import parse_list
from vlcs._plots import MISSING, pyplot


class NoPlots(RuntimeError):
    """matplotlib is missing: the summary of the trace, no picture."""


def load(path: str) -> list[dict[str, Any]]:
    with open(path) as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise ValueError(f"{path} holds no trace events")
    return sorted((e for e in events if "ts" in e), key=lambda e: e["ts"])


def spans(events: list[dict[str, Any]]) -> list[tuple[int, str, float, float, dict[str, Any]]]:
    """(tid, name, begin, end, begin's args) of every closed B/E slice."""
    open_: dict[tuple[int, str], list[tuple[float, dict[str, Any]]]] = defaultdict(list)
    out = []
    for e in events:
        key = (e.get("tid", 0), e.get("name", ""))
        if e["ph"] == "B":
            open_[key].append((e["ts"], e.get("args", {})))
        elif e["ph"] == "E" and open_[key]:
            ts, args = open_[key].pop()
            out.append((key[0], key[1], ts, e["ts"], args))
    return out


def draw(path: str, output: str) -> str:
    """Draw the trace at path into output (PNG); a one-line summary.
    Raises NoPlots, carrying the summary, without matplotlib."""
    events = load(path)
    if not events:
        raise ValueError(f"{path} holds no timed events")
    t0 = events[0]["ts"]
    sl = spans(events)
    contexts = sorted(
        {
            a.get("context", n.removeprefix("inside "))
            for _, n, _, _, a in sl
            if n.startswith("inside ")
        }
    )
    lends = [e for e in events if e.get("cat") == "elastic" and e["ph"] == "i"]
    duration = (events[-1]["ts"] - t0) / 1e3
    summary = (
        f"{len(contexts)} contexts, {len(sl)} slices, {len(lends)} lends and "
        f"reclaims over {duration:.1f} ms"
    )
    plt = pyplot()
    if plt is None:
        raise NoPlots(f"{path}: {summary}; no picture written: {MISSING}")
    # each context's CPU set over time: from its enters and its lends/reclaims
    sets: dict[str, list[tuple[float, list[int]]]] = defaultdict(list)
    for e in events:
        args = e.get("args", {})
        if e["ph"] == "B" and e.get("cat") == "context":
            sets[args.get("context", "")].append((e["ts"], parse_list(args.get("cpus", ""))))
        elif e in lends:
            sets[args["context"]].append((e["ts"], parse_list(args["to"])))
    colour = {c: plt.cm.tab10(i % 10) for i, c in enumerate(contexts)}
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(11, 6.5), sharex=True)
    for _tid, name, begin, end, args in sl:
        if not name.startswith("inside "):
            continue
        ctx = args.get("context", name.removeprefix("inside "))
        changes = [(ts, cpus) for ts, cpus in sets[ctx] if ts <= end]
        for k, (ts, cpus) in enumerate(changes):
            lo = max(ts, begin)
            hi = changes[k + 1][0] if k + 1 < len(changes) else end
            hi = min(hi, end)
            if hi <= lo:
                continue
            for cpu in cpus:
                top.broken_barh(
                    [((lo - t0) / 1e3, (hi - lo) / 1e3)], (cpu - 0.4, 0.8), color=colour[ctx]
                )
    for e in lends:
        top.axvline((e["ts"] - t0) / 1e3, color="grey", linewidth=0.6, linestyle=":")
    held = sorted({c for v in sets.values() for _, cpus in v for c in cpus})
    top.set_yticks(held, [str(c) for c in held])
    top.set_ylabel("CPU")
    top.set_title("CPUs held by contexts while a thread works inside them (dotted: lend/reclaim)")
    tids = sorted({tid for tid, *_ in sl})
    for tid, name, begin, end, args in sl:
        row = tids.index(tid)
        if name.startswith("inside "):
            ctx = args.get("context", name.removeprefix("inside "))
            bottom.broken_barh(
                [((begin - t0) / 1e3, (end - begin) / 1e3)],
                (row - 0.4, 0.8),
                color=colour.get(ctx, "grey"),
            )
        else:
            bottom.broken_barh(
                [((begin - t0) / 1e3, (end - begin) / 1e3)], (row - 0.15, 0.3), color="black"
            )
    bottom.set_yticks(range(len(tids)), [str(t) for t in tids])
    bottom.set_ylabel("thread")
    bottom.set_xlabel("ms")
    bottom.set_title("threads: inside a context (colour), tasks (black)")
    handles = [plt.Rectangle((0, 0), 1, 1, color=colour[c]) for c in contexts]
    if handles:
        top.legend(handles, contexts, loc="upper right", fontsize="small")
    fig.tight_layout()
    fig.savefig(output, dpi=110)
    plt.close(fig)
    return f"{output}: {summary}"

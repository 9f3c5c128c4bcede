"""What a tuning writes besides plan.json: report.md and, for two
tasks, the heatmap."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vlcs._cpus import parse_list
from vlcs._plots import MISSING, pyplot
from vlcs._tune import space as _space


def task_text(name: str, cpus: str, env: Mapping[str, str]) -> str:
    """One task of a configuration, as labels and the report write it."""
    return f"{name}={cpus}" + "".join(f" {k}={v}" for k, v in env.items())


def write_report(
    plan: dict[str, Any], out: Path, names: list[str], n: int, found: _space.SearchResult
) -> None:
    lines = [
        f"# vlcs tune: {' + '.join(names)}",
        "",
        f"Method {plan['method']}"
        + (
            " (the grid is smaller than three profiles: measured whole)"
            if plan["method"] == "smart" and plan["searched"] == "grid"
            else ""
        )
        + f": {plan['runs']} trial runs (the grid: {plan['grid_runs']}), "
        f"{plan['tuning_s']:.0f} s, {plan['rounds']} round(s) of the measured configurations "
        f"({plan['trial_runs']} trial runs in all); CPUs {plan['cpus']} on "
        f"{plan['machine']['hostname']} ({plan['machine']['cpu_model']})"
        + (
            f"; each task holds whole {plan['places']['type']} domains "
            f"({', '.join(plan['places']['domains'])})."
            if plan.get("places")
            else "."
        ),
        "",
        "| task | CPUs | environment |",
        "|---|---|---|",
        *[
            f"| {t['name']} | {t['cpus']} | {' '.join(f'{k}={v}' for k, v in t['env'].items())} |"
            for t in plan["tasks"]
        ],
        "",
        f"Makespan {plan['makespan_s']:.3f} s; all tasks sharing every CPU "
        f"{plan['baselines']['shared_s']:.3f} s; one after another "
        f"{plan['baselines']['sequential_s']:.3f} s.",
    ]
    if plan["prediction_error"] is not None:
        lines += [
            "",
            "Predicted versus measured makespan: "
            f"{100 * plan['prediction_error']:.0f} % mean error.",
        ]
    lines += ["", "| configuration | measured s | predicted s |", "|---|---|---|"]
    for m in plan["measured"]:
        pred = f"{m['predicted_s']:.3f}" if "predicted_s" in m else ""
        split = ", ".join(
            task_text(n, c, e) for n, c, e in zip(names, m["cpus"], m["env"], strict=True)
        )
        lines.append(f"| {split} | {m['makespan_s']:.3f} | {pred} |")
    wc = plan["without_contexts"]
    if wc["one_count_per_process"]:
        why = (
            f"{' and '.join(wc['one_count_per_process'])} (used by more than one task) has one "
            "thread count per process, so only equal counts are reachable"
        )
    else:
        why = "no library the tasks share has one thread count per process"
    best = "none measured" if wc["best_s"] is None else f"the best measured {wc['best_s']:.3f} s"
    lines += [
        "",
        "Without contexts (thread pools seen: "
        + "; ".join(f"{n}: {', '.join(p) or 'none seen'}" for n, p in wc["pools"].items())
        + f"): {why}; {len(wc['reachable'])} of the {wc['splits']} CPU splits are reachable so "
        f"({best}, timed with contexts"
        + ("; dotted in the heatmap)." if len(wc["reachable"]) < wc["splits"] else ")."),
    ]
    if plan["failures"]:
        lines += ["", "Failed trials:", *[f"- {k}: {v}" for k, v in plan["failures"].items()]]
    if len(names) == 2 and _heatmap(plan, out / "heatmap.png", names, n, found):
        lines += ["", "![makespan by CPUs per task](heatmap.png)"]
    elif len(names) == 2:
        lines += ["", f"(No heatmap: {MISSING}.)"]
        print(f"vlcs tune: heatmap.png skipped: {MISSING}", file=sys.stderr)
    (out / "report.md").write_text("\n".join(lines) + "\n")


def heatmap_cells(
    found: _space.SearchResult,
    n: int,
    reachable: Sequence[Sequence[int]],
    sizes: Sequence[int] | None = None,
) -> tuple[list[list[float]], list[tuple[int, int]], tuple[int, int]]:
    """What the heatmap of two tasks draws: values[b - 1][a - 1] is the
    makespan with a CPUs for the first task and b for the second (the best
    over their environment choices; nan where not measured), the cells
    reachable without contexts, and the optimum's cell, as (a, b).  With
    the domains' sizes (a tuning by places), a and b count domains and n is
    their number."""

    def cell(counts: Sequence[int]) -> tuple[int, int]:
        a, b = _space.domains_of(tuple(counts), sizes) if sizes else counts
        return a, b

    values = [[float("nan")] * n for _ in range(n)]
    for cfg, t in found.measured.items():
        a, b = cell(cfg.counts)
        if t != float("inf") and not values[b - 1][a - 1] <= t:
            values[b - 1][a - 1] = t
    marks = [cell(c) for c in reachable]
    return values, marks, cell(found.best.counts)


def domain_ticks(kind: str, k: int) -> tuple[str, str]:
    """The heatmap's tick labels for k domains: the first task's (it takes
    the first ones) and the second's (its count; where they lie depends on
    the first's).

    >>> domain_ticks("l3", 3)
    ('l3:0-2', '3 l3')
    """
    return (f"{kind}:0" if k == 1 else f"{kind}:0-{k - 1}"), f"{k} {kind}"


def _heatmap(
    plan: dict[str, Any], path: Path, names: list[str], n: int, found: _space.SearchResult
) -> bool:
    """The paper's Fig. 2: cells are makespans by CPUs per task, blank
    where not measured, the optimum boxed, the counts reachable without
    contexts dotted.  False when matplotlib is missing."""
    plt = pyplot()
    if plt is None:
        return False
    from matplotlib.patches import Rectangle

    places = plan.get("places")
    sizes = [len(parse_list(d)) for d in places["domains"]] if places else None
    if sizes:
        n = len(sizes)
    values, marks, (a, b) = heatmap_cells(found, n, plan["without_contexts"]["reachable"], sizes)
    fig, ax = plt.subplots(figsize=(max(4.0, 1.6 + 0.45 * n), max(3.4, 1.4 + 0.45 * n)))
    im = ax.imshow(values, origin="lower", cmap="viridis_r")
    if places:  # cells by domain: where the first task lies, how many the second holds
        ticks = [domain_ticks(places["type"], i + 1) for i in range(n)]
        ax.set_xticks(range(n), [t[0] for t in ticks], rotation=45, ha="right")
        ax.set_yticks(range(n), [t[1] for t in ticks])
        ax.set_xlabel(f"{places['type']} domains of {names[0]}")
        ax.set_ylabel(f"{places['type']} domains of {names[1]}")
    else:
        ax.set_xticks(range(n), [str(i + 1) for i in range(n)])
        ax.set_yticks(range(n), [str(i + 1) for i in range(n)])
        ax.set_xlabel(f"CPUs of {names[0]}")
        ax.set_ylabel(f"CPUs of {names[1]}")
    ax.add_patch(Rectangle((a - 1.5, b - 1.5), 1, 1, fill=False, edgecolor="red", linewidth=2.5))
    if marks and len(marks) < plan["without_contexts"]["splits"]:  # all: nothing to mark
        ax.scatter(
            [x - 1 for x, _ in marks],
            [y - 1 for _, y in marks],
            s=18,
            c="white",
            edgecolors="black",
            linewidths=0.6,
            label="reachable without contexts",
        )
        ax.legend(loc="upper left", bbox_to_anchor=(0.0, -0.16), fontsize=8, frameon=False)
    fig.colorbar(im, ax=ax, label="makespan (s)")
    ax.set_title(
        f"{plan['method']}: {plan['runs']} runs, best {plan['makespan_s']:.3f} s", fontsize=10
    )
    fig.savefig(path, dpi=90, bbox_inches="tight")
    plt.close(fig)
    return True

"""The evaluation's outputs: JSON, a Markdown report with a table per case,
and a PNG chart per measured group (matplotlib, drawn off-screen)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from vlcs._plots import MISSING, pyplot


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60]


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "NO"
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"
    return "" if v is None else str(v)


def _contexts_row(group: dict[str, Any]) -> dict[str, Any] | None:
    rows = [r for r in group["rows"] if "context" in r["strategy"].lower()]
    return rows[-1] if rows else None


def summary_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """One line per measured group: contexts vs the best other strategy."""
    out = []
    for case in doc["cases"]:
        for g in case.get("groups", []):
            if g["kind"] != "strategies":
                continue
            ctx = _contexts_row(g)
            if ctx is None:
                continue
            others = [r for r in g["rows"] if r is not ctx and r["strategy"] != g["baseline"]]
            best = max(others, key=lambda r: r["speedup"]) if others else None
            out.append(
                {
                    "case": case["case"],
                    "group": g["title"],
                    "contexts_speedup": ctx["speedup"],
                    "ideal_speedup": g.get("ideal_speedup"),
                    "contexts_p": ctx["p"],
                    "best_other": best["strategy"] if best else "",
                    "best_other_speedup": best["speedup"] if best else None,
                }
            )
    return out


def _group_md(g: dict[str, Any], png: str | None) -> list[str]:
    lines = [f"**{g['title']}**", ""]
    if g["kind"] == "table":
        lines.append("| " + " | ".join(g["columns"]) + " |")
        lines.append("|" + "---|" * len(g["columns"]))
        for row in g["rows"]:
            lines.append("| " + " | ".join(_fmt(v) for v in row) + " |")
    else:
        ideal = g.get("ideal_speedup")
        lines.append(
            f"Baseline: {g['baseline']}; {g['repeats']} interleaved repeats; "
            f"ideal speedup {_fmt(ideal) + 'x' if ideal else 'n/a'}"
            + (f" (makespan lower bound {g['ideal_s']:.3f} s)" if g.get("ideal_s") else "")
        )
        lines.append("")
        lines.append("| strategy | median s | min–max s | speedup | p | same result |")
        lines.append("|---|---|---|---|---|---|")
        for r in g["rows"]:
            lines.append(
                f"| {r['strategy']} | {r['median_s']:.3f} | {r['min_s']:.3f}–{r['max_s']:.3f} "
                f"| {r['speedup']:.2f}x | {r['p']:.2f} | {_fmt(r['same_result'])} |"
            )
        if png:
            lines += ["", f"![{g['title']}]({png})"]
    if g.get("note"):
        lines += ["", g["note"]]
    lines.append("")
    return lines


def _chart(g: dict[str, Any], path: Path) -> None:
    plt = pyplot()

    rows = g["rows"]
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(rows) + 1.4))
    names = [r["strategy"] for r in rows]
    colors = ["#2a7" if "context" in n.lower() else "#999" for n in names]
    ax.barh(names, [r["speedup"] for r in rows], color=colors)
    ideal = g.get("ideal_speedup")
    top = max([r["speedup"] for r in rows] + [ideal or 0, 1.0])
    if ideal:
        ax.axvline(ideal, color="k", ls="--", lw=1)
        ax.text(ideal, len(rows) - 0.4, f" ideal {ideal:.2f}x", va="bottom")
    ax.axvline(1.0, color="#c33", lw=0.8)
    ax.set_xlim(0, top * 1.2)
    ax.set_xlabel(f"speedup over {g['baseline']} (higher is better)")
    ax.invert_yaxis()
    ax.set_title(g["title"], fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _heatmap(h: dict[str, Any], path: Path) -> None:
    plt = pyplot()

    fig, ax = plt.subplots(figsize=(4.5, 3.8))
    im = ax.imshow(h["values"], cmap="viridis_r", origin="lower")
    ax.set_xticks(range(len(h["x"])), h["x"])
    ax.set_yticks(range(len(h["y"])), h["y"])
    ax.set_xlabel(h["xlabel"])
    ax.set_ylabel(h["ylabel"])
    for i, row in enumerate(h["values"]):
        for j, v in enumerate(row):
            if v is not None:
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", color="w", fontsize=8)
    fig.colorbar(im, ax=ax, label=h["label"])
    ax.set_title(h["title"], fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _move_traces(doc: dict[str, Any], out: Path) -> None:
    """The traces the cases recorded (temporary files), moved beside the
    report under names of their groups; the JSON then names those."""
    for case in doc["cases"]:
        for i, g in enumerate(case.get("groups", [])):
            t = g.get("timeline")
            if not t or not Path(t["trace"]).is_absolute():
                continue
            src = Path(t["trace"])
            name = f"case{case['case']}-{i}-{_slug(g['title'])}.trace.json"
            if src.exists():
                shutil.move(src, out / name)
                shutil.rmtree(src.parent, ignore_errors=True)
                t["trace"] = name
            else:
                g.pop("timeline")


def _timeline_md(g: dict[str, Any], out: Path, charts: bool) -> list[str]:
    """A group's traced run, drawn as vlcs trace show draws it."""
    t = g.get("timeline")
    if not t or not (out / t["trace"]).exists():
        return []
    lines = [
        f"Where the cores went in one more run of *{t['strategy']}*: "
        f"[{t['trace']}]({t['trace']}) (Chrome trace-event JSON: open it in Perfetto)."
    ]
    if charts:
        from vlcs._trace_show import draw

        png = t["trace"].removesuffix(".trace.json") + "-timeline.png"
        draw(str(out / t["trace"]), str(out / png))
        lines += ["", f"![timeline of {t['strategy']}]({png})"]
    return [*lines, ""]


def write(doc: dict[str, Any], out_dir: str | Path, charts: bool = True) -> Path:
    """results.json, report.md and the PNGs into out_dir; returns report.md."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _move_traces(doc, out)
    skipped = charts and pyplot() is None
    if skipped:
        charts = False
        print(f"vlcs bench: charts skipped, {MISSING}; results.json and report.md are written")
    (out / "results.json").write_text(json.dumps(doc, indent=2) + "\n")
    m = doc["machine"]
    libs = ", ".join(f"{k} {v}" for k, v in m["libraries"].items() if v)
    md = [
        "# vlcs evaluation",
        "",
        f"Mode: {doc['mode']}; started {doc['started']}.  ",
        f"Machine: {m['cpu_model']}, {m['cpus']} CPUs, {m['memory_gib']} GiB; "
        f"Linux {m['kernel']}, {m['glibc']}, Python {m['python']}; vlcs {m['vlcs']}.  ",
        f"Libraries: {libs}.",
        "",
        "Speedups are medians over interleaved repeats, relative to each group's baseline; "
        "p = best median / this median (nOS-V's performance score, 1 = best strategy). "
        "A speedup below 1 is a slowdown and is reported as measured.",
        "",
        "## Summary",
        "",
        *([f"_Charts skipped: {MISSING}._", ""] if skipped else []),
        "| case | workload | contexts speedup | ideal | p | best other strategy |",
        "|---|---|---|---|---|---|",
    ]
    for s in summary_rows(doc):
        other = f"{s['best_other']} {s['best_other_speedup']:.2f}x" if s["best_other"] else ""
        ideal = f"{s['ideal_speedup']:.2f}x" if s["ideal_speedup"] else ""
        md.append(
            f"| {s['case']} | {s['group']} | {s['contexts_speedup']:.2f}x | {ideal} "
            f"| {s['contexts_p']:.2f} | {other} |"
        )
    md.append("")
    for case in doc["cases"]:
        md += [f"## {case['case']}. {case.get('title', case['name'])}", ""]
        if case.get("models"):
            md += [f"*Models:* {case['models']}", ""]
        if "error" in case:
            md += [f"**Failed:** {case['error']}", ""]
            continue
        for i, g in enumerate(case.get("groups", [])):
            png = None
            if charts and g["kind"] == "strategies":
                png = f"case{case['case']}-{i}-{_slug(g['title'])}.png"
                _chart(g, out / png)
            md += _group_md(g, png)
            md += _timeline_md(g, out, charts)
        for h in case.get("heatmaps", []):
            png = f"case{case['case']}-{_slug(h['title'])}.png"
            if charts:
                _heatmap(h, out / png)
                md += [f"![{h['title']}]({png})", ""]
        for n in case.get("notes", []):
            md += [f"- {n}"]
        md += ["", f"_Case time: {case['elapsed_s']:.0f} s._", ""]
    path = out / "report.md"
    path.write_text("\n".join(md) + "\n")
    return path

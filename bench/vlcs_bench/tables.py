"""Plain-text tables of the micro-benchmarks (``vlcs bench core|strict|shim``)."""

from __future__ import annotations

from typing import Any


def _target(r: dict[str, Any]) -> str:
    if "meets_target" not in r:
        return ""
    if "target_ratio" in r:
        goal = f"<= {r['target_ratio']}x"
    elif "target_extra_ns" in r:
        goal = f"<= +{r['target_extra_ns'] / 1000:g} us"
    else:
        goal = f"<= {r.get('target_ns', 0) / 1000:g} us"
    return f"{goal} {'ok' if r['meets_target'] else 'MISSED'}"


def core(result: dict[str, Any]) -> str:
    lines = [f"{'call':32} {'inside':>12} {'outside':>12} {'ratio':>7}  target"]
    for name, r in result["calls"].items():
        lines.append(
            f"{name:32} {r['inside_ns']:10.1f}ns {r['outside_ns']:10.1f}ns "
            f"{r['ratio']:6.2f}x  {_target(r)}"
        )
    lines.append("")
    for name, r in result["contexts"].items():
        lines.append(f"{name:40} {r['ns'] / 1000:10.2f} us  {_target(r)}")
    lines.append("")
    for name, r in result["load"].items():
        lines.append(
            f"load {name:30} once {r['once_ms']:7.2f} ms, "
            f"4 contexts {r['four_contexts_ms']:7.2f} ms ({r['ratio']:.1f}x)"
        )
    return "\n".join(lines)


def strict(result: dict[str, Any]) -> str:
    lines = [f"{'call':28} {'plain':>10} {'strict':>10} {'ratio':>7} {'floor':>10}  target"]
    for name, r in result["calls"].items():
        floor = f"{r['platform_floor_ns']:8.1f}ns" if "platform_floor_ns" in r else " " * 10
        lines.append(
            f"{name:28} {r['plain_ns']:8.1f}ns {r['strict_ns']:8.1f}ns "
            f"{r['ratio']:6.2f}x {floor}  {_target(r)}"
        )
    lines.append("floor: the same call under a do-nothing seccomp filter / empty SIGSYS handler")
    return "\n".join(lines)


def shim(result: dict[str, Any]) -> str:
    sc, sv = result["calls"]["shim_call"], result["calls"]["service_call"]
    gc = result["calls"]["guarded_call"]
    return (
        f"direct call {sc['direct_ns']:.2f} ns, through a shim {sc['shim_ns']:.2f} ns "
        f"(+{sc['overhead_ns']:.2f} ns; target <= +5 ns)\n"
        f"service call from the base {sv['base_ns']:.2f} ns, from a context "
        f"{sv['context_ns']:.2f} ns ({sv['ratio']:.2f}x)\n"
        "a call into a context: vlcs_enter + call + vlcs_leave "
        f"{gc['enter_call_leave_ns']:.1f} ns, vlcs_ctx_call {gc['ctx_call_ns']:.1f} ns "
        f"({gc['ratio']:.2f}x); the base's direct call "
        f"{gc['base_before_handlers_ns']:.2f} ns before the fault handlers, "
        f"{gc['base_after_handlers_ns']:.2f} ns after"
    )

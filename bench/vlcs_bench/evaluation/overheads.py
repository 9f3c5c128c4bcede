"""Case 1 (paper Table 2): what each vlcs operation costs."""

from __future__ import annotations

from typing import Any

from vlcs_bench.evaluation._harness import say, table
from vlcs_bench.programs import run_json as bench_program

TITLE = "Overheads (paper Table 2)"
MODELS = (
    "the fixed costs a user pays: creating and entering contexts, calls vlcs "
    "interposes (affinity queries, forged /proc files), ordinary syscalls that it "
    "does not, and calls through the Service context and a transparent-mode shim; "
    "each timed in and out of a context in one run (C, vlcs-bench-core/-strict)."
)


def run(quick: bool) -> dict[str, Any]:
    from vlcs_bench.calls import run as bench_calls

    say("overheads: contexts and interposed calls (vlcs-bench-core)")
    core = bench_program("vlcs-bench-core")
    say("overheads: strict mode (vlcs-bench-strict)")
    strict = bench_program("vlcs-bench-strict")
    say("overheads: shim and Service calls (compiles a small library)")
    calls = bench_calls()

    ops = [[name, r["ns"] / 1000] for name, r in core["contexts"].items()]
    interposed = [
        [name, r["outside_ns"], r["inside_ns"], r["ratio"]] for name, r in core["calls"].items()
    ]
    sc, sv = calls["calls"]["shim_call"], calls["calls"]["service_call"]
    interposed.append(
        [
            "call through a transparent-mode shim",
            sc["direct_ns"],
            sc["shim_ns"],
            sc["shim_ns"] / sc["direct_ns"],
        ]
    )
    interposed.append(["call into a Service library", sv["base_ns"], sv["context_ns"], sv["ratio"]])
    strict_rows = [
        [name, r["plain_ns"], r["strict_ns"], r["ratio"], r.get("platform_floor_ns")]
        for name, r in strict["calls"].items()
    ]
    return {
        "groups": [
            table("Context operations", ["operation", "µs"], ops),
            table(
                "Calls outside vs inside a context (ns per call)",
                ["call", "outside ns", "inside ns", "ratio"],
                interposed,
                note="open_read_proc_cpuinfo is faster inside: the context's /proc/cpuinfo "
                "is forged in memory, lists only its CPUs and skips the kernel's file.",
            ),
            table(
                "Strict mode (seccomp + SIGSYS) vs plain (ns per call)",
                ["call", "plain ns", "strict ns", "ratio", "platform floor ns"],
                strict_rows,
                note="platform floor: the same call under a do-nothing filter / empty SIGSYS "
                "handler, i.e. what the kernel mechanism alone costs on this machine.",
            ),
        ],
        "raw": {"core": core, "strict": strict, "calls": calls},
    }

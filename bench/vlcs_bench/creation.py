"""`vlcs bench create`: what making one context costs, side by side with
glibc's own ``dlmopen(LM_ID_NEWLM)`` of the same small library.

That dlmopen is what the paper's prototype does per context before its
monitor's part (a registration through shared memory and a signal, and a
ptrace stop at every file the loader opens), so it is a floor for the
prototype as well as for vlcs.  Four ways, each in fresh processes under
the ``vlcs-run`` launcher (the same glibc tunables for all), their order
alternating from one round to the next:

* dlmopen: ``dlmopen(LM_ID_NEWLM, lib, RTLD_NOW)``;
* dlmopen-local: libc in a new namespace, then the library by a second
  ``dlmopen``: what glibc alone charges for a library kept local (the
  first object of a new namespace is its global scope, whose symbols reach
  every later load there);
* namespace: ``vlcs_ctx_create`` and ``vlcs_ctx_load`` of the library, in a
  linker namespace of its own (its libc, vlcs's interposer);
* copies: the same in copy mode (renamed copies, no namespace);
* with ``--prototype DIR`` (a checkout of pecos/Virtual-Library-Context),
  the prototype itself: "prototype" as its examples run it (its ptrace
  monitor started once, then per context a Context with CPU 0,
  ``register_vlc`` and a ``Loader`` of the library) and "prototype-bare"
  (the Context and Loader alone: no monitor, so no CPU set).

Each process makes PER_RUN contexts (glibc has 16 namespaces); its first
one also pays the process's one-time set-up and is reported apart.  The
figures are medians over every later context of every round.

Example::

    $ vlcs bench create
    $ vlcs bench create --prototype ~/src/Virtual-Library-Context
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from vlcs import program_path

from vlcs_bench import programs
from vlcs_bench._build import CSRC, build

WAYS = ("dlmopen", "dlmopen-local", "namespace", "copies")
PROTOTYPE_WAYS = ("prototype", "prototype-bare")
#: contexts per process: glibc's 16 namespaces less the base's and a spare
PER_RUN = 12


def tiny_library() -> str:
    """Path of the small library every context loads first (built once)."""
    return str(
        build("vlcs-bench-tiny", ["create_tiny.c"], ["-O2", "-shared", "-fPIC"], src_dir=CSRC)
    )


def prototype_program(checkout: Path) -> Path:
    """The prototype's driver (csrc/proto_create.cpp) built against the
    headers of `checkout`; RuntimeError when they are not there."""
    include = Path(checkout).expanduser().resolve() / "include"
    if not (include / "VLC" / "runtime.h").exists():
        raise RuntimeError(
            f"{include}/VLC/runtime.h is missing: give a checkout of pecos/Virtual-Library-Context"
        )
    args = ["-O2", "-std=c++17", "-DNDEBUG", "-w", f"-I{include}", "-pthread"]
    return build(
        "vlcs-bench-proto-create", ["proto_create.cpp"], args, compiler="c++", src_dir=CSRC
    )


def _times(argv: list[str]) -> list[float]:
    proc = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=120)
    last = [line for line in proc.stdout.splitlines() if line.startswith("{")][-1]
    return [float(t) for t in json.loads(last)["us"]]


def run(rounds: int = 7, progress: bool = True, prototype: Path | None = None) -> dict[str, Any]:
    """Times of every way over `rounds` rounds: {"ways": {way: {"first_us",
    "then_us", "contexts"}}, "ratios": {way: then_us / dlmopen's}}; the
    prototype's ways too when `prototype` names its checkout."""
    lib = tiny_library()
    ways_run = WAYS
    argv_of = {w: programs.launch("vlcs-bench-create", lib, w, str(PER_RUN)) for w in WAYS}
    if prototype is not None:
        driver = str(prototype_program(prototype))
        launcher = str(program_path("vlcs-run"))
        for w in PROTOTYPE_WAYS:
            argv_of[w] = [launcher, "--", driver, lib, w, str(PER_RUN)]
        ways_run = WAYS + PROTOTYPE_WAYS
    first: dict[str, list[float]] = {w: [] for w in ways_run}
    then: dict[str, list[float]] = {w: [] for w in ways_run}
    for r in range(rounds):
        if progress:
            print(f"vlcs bench create: round {r + 1} of {rounds}", file=sys.stderr)
        for way in ways_run if r % 2 == 0 else ways_run[::-1]:
            us = _times(argv_of[way])
            first[way].append(us[0])
            then[way].extend(us[1:])
    ways = {
        w: {
            "first_us": round(statistics.median(first[w]), 1),
            "then_us": round(statistics.median(then[w]), 1),
            "contexts": len(first[w]) + len(then[w]),
        }
        for w in ways_run
    }
    floor = ways["dlmopen"]["then_us"]
    return {
        "library": lib,
        "rounds": rounds,
        "ways": ways,
        "ratios": {w: round(ways[w]["then_us"] / floor, 2) for w in ways_run if w != "dlmopen"},
    }


_NAMES = {
    "dlmopen": "glibc dlmopen(LM_ID_NEWLM)",
    "dlmopen-local": "glibc: libc's namespace, then lib",
    "namespace": "vlcs context, namespace",
    "copies": "vlcs context, copies",
    "prototype": "prototype (its monitor on)",
    "prototype-bare": "prototype, no monitor",
}


def report(result: dict[str, Any]) -> str:
    """The result as a table."""
    lines = [
        f"{'one context and its first library':34} {'first':>9} {'then':>9}  vs dlmopen",
    ]
    for w, v in result["ways"].items():
        ratio = "" if w == "dlmopen" else f"{result['ratios'][w]:.2f}x"
        lines.append(f"{_NAMES[w]:34} {v['first_us']:7.0f}us {v['then_us']:7.0f}us  {ratio}")
    lines.append(
        f"(medians of {result['rounds']} rounds in fresh processes, {PER_RUN} contexts each; "
        "'first': a process's first, with its one-time set-up)"
    )
    return "\n".join(lines)

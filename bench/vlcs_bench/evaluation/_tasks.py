"""Pieces the cases share: running callables on plain threads, splitting
the CPUs between two contexts (the jobs themselves: vlcs_bench.jobs)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


def on_threads(*calls: Callable[[], Any]) -> list[Any]:
    """Run the calls on one plain thread each; results in order."""
    out: list[Any] = [None] * len(calls)
    errors: list[BaseException] = []

    def one(i: int) -> None:
        try:
            out[i] = calls[i]()
        except BaseException as e:  # re-raised below, on the caller's thread
            errors.append(e)

    ts = [threading.Thread(target=one, args=(i,)) for i in range(len(calls))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]
    return out


def progress_reporters() -> tuple[Callable[[], None], int]:
    """What the elastic strategies report their iterations with:
    ``vlcs.progress`` for Python loops, and the address of
    ``vlcs_ctx_progress`` for the C kernels' ``_p`` forms."""
    import ctypes

    import vlcs

    fn = ctypes.CDLL(str(vlcs.library_path())).vlcs_ctx_progress
    return vlcs.progress, ctypes.cast(fn, ctypes.c_void_p).value or 0


def split_cpus(ncpu: int, first: int) -> tuple[str, str]:
    """CPU lists for two contexts: `first` CPUs, then the rest."""
    first = max(1, min(first, ncpu - 1))
    a = "0" if first == 1 else f"0-{first - 1}"
    b = str(first) if first == ncpu - 1 else f"{first}-{ncpu - 1}"
    return a, b


def tuned_partition(tasks: list[Any], quick: bool) -> tuple[dict[str, Any], str]:
    """vlcs tune's plan for `tasks` (vlcs.Task, importable by name) on this
    machine, each task on whole cores, and a sentence on what it chose and
    what the tuning cost."""
    import tempfile

    import vlcs

    with tempfile.TemporaryDirectory(prefix="vlcs-eval-tune-") as d:
        plan = vlcs.tune(tasks, places="core", out=d, progress=False, repeats=1 if quick else 2)
    chosen = " | ".join(t["cpus"] for t in plan["tasks"])
    return plan, (
        f"vlcs tune --places core chose {chosen} in {plan['runs']} runs and "
        f"{plan['tuning_s']:.1f} s (its {plan['searched']} search)."
    )


def same_sizes(plan: dict[str, Any], cpus: tuple[str, ...]) -> bool:
    """Whether the plan gives each task as many CPUs as `cpus` does (on a
    machine of like cores, "1 | 0" is "0 | 1")."""
    from vlcs._cpus import parse_list

    return [len(parse_list(t["cpus"])) for t in plan["tasks"]] == [len(parse_list(c)) for c in cpus]

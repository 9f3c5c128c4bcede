"""The Python side of a context's view: ``os.cpu_count()``,
``os.sched_getaffinity()`` and ``os.process_cpu_count()`` answer with the
calling thread's context's CPUs, as the C-level queries of its libraries do
(the C side forges them in src/view.c and src/interpose/).
``multiprocessing.cpu_count`` calls ``os.cpu_count`` at call time.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

real_cpu_count = os.cpu_count
real_sched_getaffinity = os.sched_getaffinity
_real_process_cpu_count = getattr(os, "process_cpu_count", None)

# () -> the calling thread's context's CPUs, or None outside contexts
_context_cpus: Callable[[], list[int] | None] = lambda: None  # noqa: E731
_installed = False


def _cpu_count() -> int | None:
    cpus = _context_cpus()
    return len(cpus) if cpus is not None else real_cpu_count()


def _sched_getaffinity(pid: int) -> set[int]:
    real = real_sched_getaffinity(pid)
    cpus = _context_cpus() if pid in (0, os.getpid(), threading.get_native_id()) else None
    if cpus is None:
        return real
    return (real & set(cpus)) or set(cpus)


def _process_cpu_count() -> int | None:
    cpus = _context_cpus()
    return len(cpus) if cpus is not None else _real_process_cpu_count()


def install(context_cpus: Callable[[], list[int] | None]) -> None:
    """Make os.cpu_count & co answer for the calling thread's context (idempotent)."""
    global _installed, _context_cpus
    _context_cpus = context_cpus
    if _installed:
        return
    _installed = True
    os.cpu_count = _cpu_count
    os.sched_getaffinity = _sched_getaffinity
    if _real_process_cpu_count is not None:
        os.process_cpu_count = _process_cpu_count

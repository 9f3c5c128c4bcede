"""A timeline of where the cores went, as Chrome trace-event JSON.

``with vlcs.trace("out.json"):`` records the events of the block (libvlcs
writes them, src/trace.c): "inside <context>" slices per thread, elastic
contexts' home, current and lent CPUs with an instant per lend and reclaim,
library pool resizes, and ``ContextPoolExecutor`` tasks (queued, running).
Open the file in Perfetto's UI (ui.perfetto.dev) or chrome://tracing, or
draw it: ``vlcs trace show out.json -o timeline.png``.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from typing import Any

from vlcs._lib import c_string, check, lib


@contextlib.contextmanager
def trace(path: str | os.PathLike[str]) -> Iterator[str]:
    """Record the block's events into path (Chrome trace-event JSON).

    >>> import os, tempfile, vlcs
    >>> with vlcs.trace(os.path.join(tempfile.mkdtemp(), "t.json")) as path:
    ...     pass
    >>> os.path.exists(path)
    True
    """
    where = os.fspath(path)
    check(lib().vlcs_trace_start(c_string(where, "the trace file", path=True)))
    try:
        yield where
    finally:
        check(lib().vlcs_trace_stop())


def mark(name: str, phase: str, **args: Any) -> None:
    """A mark on this thread: phase "B"/"E" (a slice) or "i" (an instant).
    Costs a call into libvlcs, which returns at once when no trace runs."""
    raw = json.dumps(args).encode() if args else None
    lib().vlcs_trace_mark(name.encode(errors="replace"), phase.encode(), raw)

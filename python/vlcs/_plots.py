"""matplotlib for the commands that draw (``vlcs tune``'s heatmap,
``vlcs trace show``), optional: ``pip install 'vlcs[plots]'`` brings it.
Without it they still write their data and say in one line what they
skipped."""

from __future__ import annotations

from typing import Any

MISSING = "matplotlib is not installed (pip install 'vlcs[plots]')"


def pyplot() -> Any | None:
    """matplotlib.pyplot drawing off-screen, or None without matplotlib.

    >>> pyplot() is None or hasattr(pyplot(), "subplots")
    True
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt

"""A pytest plugin that runs a whole test session inside one vlcs context.

Loaded with ``-p vlcs_suite_plugin`` (this folder on PYTHONPATH): at
configure time it makes a context with every CPU and enters it on the main
thread, so conftest files, test modules, the package under test and every
test import and run inside it, with private copies of everything that is
not the standard library or pytest's own; threads the tests start belong
to it.  It leaves and closes the context when the session ends, and says so
on the terminal's header line.
"""

from __future__ import annotations

from typing import Any

_ctx: Any = None


def pytest_configure(config: Any) -> None:
    global _ctx
    import vlcs

    _ctx = vlcs.VLC(name="suite")
    _ctx.__enter__()


def pytest_report_header(config: Any) -> str:
    return f"vlcs: every test runs inside context {_ctx.name!r} (CPUs {_ctx.cpus})"


def pytest_unconfigure(config: Any) -> None:
    global _ctx
    if _ctx is None:
        return
    import warnings

    import vlcs

    type(_ctx).__exit__(_ctx, None, None, None)
    with warnings.catch_warnings():
        # a context whose modules are still referenced keeps its namespace: expected here
        warnings.simplefilter("ignore", vlcs.NamespaceKeptWarning)
        try:
            _ctx.close()
        except vlcs.ContextBusyError:
            pass  # a test left a thread running in it: the process ends anyway
    _ctx = None

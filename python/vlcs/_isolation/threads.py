"""Threads belong where they were started: a ``threading.Thread`` started by
a thread that is inside a context (``with ctx:``, ``ctx.submit``, a
context's executor or pool thread) belongs to that context for its whole
life, as a thread its libraries started does (``vlcs_thread_adopt``), so its
imports, ``sys.modules``, CPU view, environment and libraries are the
context's; it leaves when it ends.  Like a library's thread it does not keep
the context from closing: a context closed while such threads run keeps its
namespace (``NamespaceKeptWarning`` says why) and the threads go on as the
base's.  Started from the base, a thread is the base's.  This covers what
starts threads through ``threading``: ``concurrent.futures.ThreadPoolExecutor``,
the helper threads of ``multiprocessing.Pool`` and ``ProcessPoolExecutor``
(which pickle in them), asyncio's default executor, loky's.

Opting out, for a thread meant for the base: :func:`base_thread` before
``start()``, or start it inside ``with starting_in_base():`` (vlcs's own
worker threads are started so).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

TYPE_CHECKING = False  # typing is not imported at run time (see vlcs/__init__.py)
if TYPE_CHECKING:
    from typing import Any

_real_start = threading.Thread.start
_real_bootstrap_inner = threading.Thread._bootstrap_inner  # type: ignore[attr-defined]
_installed = False
_local = threading.local()

# () -> the calling thread's context (a vlcs.VLC) or None; set by install()
_current: Callable[[], Any] = lambda: None  # noqa: E731
# ctx -> the calling thread belongs to it (vlcs_thread_adopt), or nothing if
# it is closed; set by install()
_adopt: Callable[[Any], None] = lambda ctx: None  # noqa: E731

_BASE = object()  # a thread marked for the base


def base_thread(thread: threading.Thread) -> threading.Thread:
    """Mark a thread that is not started yet to start in the base, whichever
    context starts it; returns the thread.

    >>> import threading, vlcs
    >>> t = vlcs.base_thread(threading.Thread(target=print))
    """
    if thread.is_alive() or thread._started.is_set():
        raise RuntimeError(f"base_thread(): {thread.name} is started already")
    thread.__dict__["_vlcs_context"] = _BASE
    return thread


@contextlib.contextmanager
def starting_in_base() -> Iterator[None]:
    """Threads started by the calling thread inside the block are the base's
    (an executor that creates its workers on submit, a pool)."""
    before = getattr(_local, "base", False)
    _local.base = True
    try:
        yield
    finally:
        _local.base = before


def _start(self: threading.Thread) -> None:
    if "_vlcs_context" not in self.__dict__ and not getattr(_local, "base", False):
        ctx = _current()
        if ctx is not None:
            self.__dict__["_vlcs_context"] = ctx
    _real_start(self)


def _bootstrap_inner(self: threading.Thread) -> None:
    ctx = self.__dict__.pop("_vlcs_context", None)
    if ctx is not None and ctx is not _BASE:
        # before the thread is marked started: start() returns with it inside;
        # a context closed meanwhile leaves it the base's
        _adopt(ctx)
    return _real_bootstrap_inner(self)


def install(current: Callable[[], Any], adopt: Callable[[Any], None]) -> None:
    """Make threads started inside a context start inside it (idempotent)."""
    global _installed, _current, _adopt
    _current, _adopt = current, adopt
    if _installed:
        return
    _installed = True
    threading.Thread.start = _start  # type: ignore[method-assign]
    threading.Thread._bootstrap_inner = _bootstrap_inner  # type: ignore[attr-defined]

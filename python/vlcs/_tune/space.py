"""The search space of ``vlcs tune`` and the two ways through it.

A configuration gives each task a number of CPUs and, for a task with
environment choices (OMP_NUM_THREADS = "{cpus}" or "1", say), one of
them; CPU lists are assigned in task order from the tuning's CPU set, so
counts (4, 12) over "0-15" are "0-3" | "4-15".  Two baselines are always
part of a tuning: every task on every CPU at once ("shared"), and the
tasks one after another with every CPU ("sequential").

``grid`` measures every configuration.  ``smart`` measures each task alone
on a few CPU counts (once per environment choice), fits Amdahl's law
t(c) = a + b / c to each, predicts every configuration's makespan as the
slowest task's predicted time, and measures only the most promising
configurations, within a third of the grid's runs.  Both are pure
functions of a ``measure`` callback, so the search itself is tested with
tasks of known scaling.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

Counts = tuple[int, ...]


class Config(NamedTuple):
    """One point of the space: each task's CPU count, and the index of the
    environment choice each task runs with (0 for a task without choices)."""

    counts: Counts
    env: tuple[int, ...]


def configurations(
    ncpus: int,
    ntasks: int,
    step: int = 1,
    overlap: bool = False,
    choices: Sequence[int] | None = None,
) -> list[Config]:
    """Every way to give each task a CPU count: multiples of `step` (and
    the whole set), at least one each; disjoint CPUs unless `overlap`;
    crossed with each task's environment choices (`choices`: how many
    each task has; one each by default).

    >>> [c.counts for c in configurations(4, 2)]
    [(1, 1), (1, 2), (1, 3), (2, 1), (2, 2), (3, 1)]
    >>> len(configurations(4, 2, choices=[2, 3]))
    36
    """
    sizes = sorted(
        {c for c in range(step, ncpus + 1, step)} | {ncpus} | ({1} if step > 1 else set())
    )
    envs = list(itertools.product(*(range(k) for k in (choices or [1] * ntasks))))
    out = []
    for combo in itertools.product(sizes, repeat=ntasks):
        if overlap or sum(combo) <= ncpus:
            out += [Config(tuple(combo), env) for env in envs]
    return out


def aligned_configurations(
    sizes: Sequence[int], ntasks: int, choices: Sequence[int] | None = None
) -> list[Config]:
    """Every way to give each task whole domains of the topology (an L3, a
    NUMA node, a core...), at least one each, disjoint: ``sizes`` are the
    domains' CPU counts in the order tasks take them (cpu_lists then gives
    each task whole domains); crossed with the environment choices.  Far
    fewer cells than every count, and none that straddles a domain.

    >>> [c.counts for c in aligned_configurations([4, 4, 4], 2)]
    [(4, 4), (4, 8), (8, 4)]
    >>> [c.counts for c in aligned_configurations([2, 6], 2)]
    [(2, 6)]
    """
    bounds = [0, *itertools.accumulate(sizes)]
    envs = list(itertools.product(*(range(k) for k in (choices or [1] * ntasks))))
    out = []
    for ks in itertools.product(range(1, len(sizes) + 1), repeat=ntasks):
        if sum(ks) > len(sizes):
            continue
        at, counts = 0, []
        for k in ks:
            counts.append(bounds[at + k] - bounds[at])
            at += k
        out += [Config(tuple(counts), env) for env in envs]
    return out


def domains_of(counts: Counts, sizes: Sequence[int]) -> tuple[int, ...]:
    """How many domains each task of an aligned configuration holds.

    >>> domains_of((4, 8), [4, 4, 4])
    (1, 2)
    """
    bounds = [0, *itertools.accumulate(sizes)]
    out, at, total = [], 0, 0
    for c in counts:
        total += c
        k = bounds.index(total) - at
        out.append(k)
        at += k
    return tuple(out)


def reachable(counts: Counts, families: Sequence[Collection[str]], shared: Collection[str]) -> bool:
    """Whether the tasks' thread counts could be set so in one process
    without contexts, with the libraries' own thread-count APIs: tasks that
    use one library whose count is one per process (``shared``: OpenBLAS's
    openblas_set_num_threads, torch.set_num_threads) must use the same
    count; a per-thread count (omp_set_num_threads) constrains nothing.

    >>> reachable((4, 4), [{"openblas"}, {"openblas"}], {"openblas"})
    True
    >>> reachable((4, 12), [{"openblas"}, {"openblas", "openmp"}], {"openblas"})
    False
    >>> reachable((4, 12), [{"openmp"}, {"openblas"}], {"openblas"})
    True
    """
    for lib in shared:
        used = {c for c, f in zip(counts, families, strict=True) if lib in f}
        if len(used) > 1:
            return False
    return True


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


_SCALED = re.compile(r"\{cpus([*/])(\d+)\}")


def fill(text: str, cpus: Sequence[int]) -> str:
    """A task's environment value or argument with its placeholders filled:
    {cpus} (the count), {cpus*K} and {cpus/K} (times or divided by an
    integer K, rounded down, at least 1) and {cpulist} (the list).

    >>> fill("OMP_NUM_THREADS={cpus} on {cpulist}", [4, 5, 6])
    'OMP_NUM_THREADS=3 on 4-6'
    >>> fill("{cpus*2} {cpus/2} {cpus/4}", [0, 1, 2, 3, 4, 5])
    '12 3 1'
    """
    n = len(cpus)

    def scaled(m: re.Match[str]) -> str:
        k = int(m.group(2))
        if k == 0:
            raise ValueError(f"{m.group(0)}: K must be at least 1")
        return str(n * k if m.group(1) == "*" else max(1, n // k))

    text = _SCALED.sub(scaled, text)
    return text.replace("{cpus}", str(n)).replace("{cpulist}", format_cpus(cpus))


def fill_env(env: Mapping[str, str], cpus: Sequence[int]) -> dict[str, str]:
    """A task's variables with their placeholders filled (see fill).

    >>> fill_env({"OMP_NUM_THREADS": "{cpus}"}, [2, 3])
    {'OMP_NUM_THREADS': '2'}
    """
    return {k: fill(str(v), cpus) for k, v in env.items()}


def env_choices(choices: Mapping[str, Sequence[str]]) -> list[dict[str, str]]:
    """Every combination of a task's environment choices, in order (the
    first value of each variable first).

    >>> for env in env_choices({"OMP_NUM_THREADS": ["{cpus}", "1"], "OMP_PROC_BIND": ["close"]}):
    ...     print(env)
    {'OMP_NUM_THREADS': '{cpus}', 'OMP_PROC_BIND': 'close'}
    {'OMP_NUM_THREADS': '1', 'OMP_PROC_BIND': 'close'}
    >>> env_choices({})
    [{}]
    """
    names = list(choices)
    return [
        dict(zip(names, values, strict=True))
        for values in itertools.product(*(list(choices[k]) for k in names))
    ]


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

    best: Config
    best_s: float
    measured: dict[Config, float]
    runs: int  # trial runs used, the profiling runs of `smart` included
    predicted: dict[Config, float] = field(default_factory=dict)
    #: (task, environment choice) -> [(CPU count, seconds alone)]
    profiles: dict[tuple[int, int], list[tuple[int, float]]] = field(default_factory=dict)

    @property
    def prediction_error(self) -> float | None:
        """Mean |predicted - measured| / measured over the measured
        configurations `smart` predicted; None for `grid`."""
        inf = float("inf")
        both = [
            c
            for c in self.measured
            if c in self.predicted and inf not in (self.measured[c], self.predicted[c])
        ]
        if not both:
            return None
        return sum(
            abs(self.predicted[c] - self.measured[c]) / self.measured[c] for c in both
        ) / len(both)


def grid(
    space: list[Config],
    measure: Callable[[Config], float],
    measure_many: Callable[[list[Config]], list[float]] | None = None,
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


def profile_runs(ncpus: int, space: Sequence[Config]) -> int:
    """How many runs alone `smart` profiles with: each task on each of
    profile_counts, once per environment choice of that task."""
    return len(profile_counts(ncpus)) * sum(_choices(space))


def _choices(space: Sequence[Config]) -> list[int]:
    """How many environment choices each task has in the space."""
    return [max(c.env[t] for c in space) + 1 for t in range(len(space[0].env))]


Alone = tuple[int, int, int]  # (task, CPU count, environment choice)


def smart(
    space: list[Config],
    ncpus: int,
    measure: Callable[[Config], float],
    measure_alone: Callable[[int, int, int], float],
    budget: int | None = None,
    alone_many: Callable[[list[Alone]], list[float]] | None = None,
) -> SearchResult:
    """Profile, fit, predict, then measure the most promising configurations.

    measure_alone(task, count, env): seconds of the task alone on `count`
    CPUs with its environment choice `env`; alone_many: the same for a
    list of (task, count, env), all at once.  budget: the most trial runs,
    profiling included (default: a third of the space, and at least the
    profiling plus one configuration)."""
    counts = profile_counts(ncpus)
    pairs = [(t, c, e) for t, k in enumerate(_choices(space)) for e in range(k) for c in counts]
    times = alone_many(pairs) if alone_many else [measure_alone(*p) for p in pairs]
    profiles: dict[tuple[int, int], list[tuple[int, float]]] = {}
    for (t, c, e), s in zip(pairs, times, strict=True):
        profiles.setdefault((t, e), []).append((c, s))
    runs = len(pairs)
    # A profile run that failed (inf) says nothing of the scaling; a choice
    # whose every profile failed is predicted to fail.
    models = {
        k: Amdahl.fit(ok) if (ok := [(c, s) for c, s in p if s != float("inf")]) else None
        for k, p in profiles.items()
    }

    def predict(cfg: Config) -> float:
        out = 0.0
        for t, (c, e) in enumerate(zip(cfg.counts, cfg.env, strict=True)):
            m = models[(t, e)]
            out = max(out, m(c) if m is not None else float("inf"))
        return out

    predicted = {cfg: predict(cfg) for cfg in space}
    order = sorted(space, key=lambda cfg: (predicted[cfg], cfg))
    if budget is None:
        budget = max(len(space) // 3, runs + 1)
    measured: dict[Config, float] = {}
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
            (
                abs(predicted[c] - m) / m
                for c, m in measured.items()
                if m != float("inf") and predicted[c] != float("inf")
            ),
            default=0.0,
        )
        rest = [predicted[c] for c in order if c not in measured]
        if not rest or min(rest) * (1 - err) > best:
            break
    best_cfg = min(measured, key=lambda c: measured[c])
    return SearchResult(best_cfg, measured[best_cfg], measured, runs, predicted, profiles)

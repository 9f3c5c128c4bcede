"""The tuning itself: baselines, the search (space.py) over measured
trials, the best partition, and plan.json."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from vlcs import _topo
from vlcs._tune import space as _space
from vlcs._tune.report import task_text, write_report
from vlcs._tune.space import Config, format_cpus
from vlcs._tune.tasks import Task, TuneError, as_task
from vlcs._tune.trials import Cluster, Run, Trials, machine

METHODS = ("smart", "grid")


def tune(
    tasks: Sequence[Task | str | Callable[..., Any] | Sequence[str]],
    cpus: str | Sequence[int] | None = None,
    method: str = "smart",
    *,
    step: int = 1,
    overlap: bool = False,
    repeats: int = 1,
    timeout: float = 600.0,
    out: str | Path | None = None,
    progress: bool = True,
    dask: Any = None,
    places: str | None = None,
) -> dict[str, Any]:
    """Find the CPU partition that runs `tasks` at once fastest.

    tasks: vlcs.Task objects, or functions importable by name,
    "module:function" strings and programs' argv lists (see as_task).

    dask: a Dask scheduler address (or a distributed.Client): the trials
    run on its workers' machines, which must be identical, one trial per
    machine at a time, the grid's and the profiles' side by side.

    places: "core", "l2", "l3", "numa" or "package": each task gets whole
    domains of that type (hwloc's, see vlcs topo), taken in the topology's
    order, so no task straddles two L3s or NUMA nodes and a core's hardware
    threads stay together; the search space shrinks to those splits and the
    heatmap counts domains.

    repeats: at most that many rounds; after the search, the baselines and
    every configuration measured are run again, interleaved, until the best
    (by median) stays the best from one round to the next.

    Returns the plan (also written to out/plan.json with out/report.md and,
    for two tasks, out/heatmap.png): each task's CPU list and environment,
    the makespans measured, the baselines (all tasks sharing every CPU;
    one after another), the runs used and the grid's size.

    >>> import vlcs
    >>> vlcs.tune([], cpus="0")
    Traceback (most recent call last):
    ...
    vlcs._tune.tasks.TuneError: give at least two tasks to tune (got 0)
    """
    if method not in METHODS:
        raise TuneError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
    tasks = [as_task(t) for t in tasks]
    if len(tasks) < 2:
        raise TuneError(f"give at least two tasks to tune (got {len(tasks)})")
    names = [t.name for t in tasks]
    if len(set(names)) != len(names):
        raise TuneError(
            f"task names must differ; got {names} (give each a vlcs.Task with its own name)"
        )
    if step < 1 or repeats < 1 or timeout <= 0:
        raise TuneError("step and repeats must be at least 1 and timeout positive")
    if places is not None:
        if places not in _topo.PLACES or places == "pu":
            raise TuneError(
                f"places must be one of {', '.join(p for p in _topo.PLACES if p != 'pu')}; "
                f"got {places!r}"
            )
        if step != 1 or overlap:
            raise TuneError(
                "places gives each task whole domains of its own: it goes with neither step nor "
                "overlap"
            )
        if dask is not None:
            raise TuneError(
                "places are read from this machine's topology, and with dask the trials run "
                "on other machines: give the CPUs to split as a list instead"
            )
    specs = [t.spec() for t in tasks]
    cluster = Cluster(dask) if dask is not None else None
    try:
        return _tune(
            tasks,
            names,
            specs,
            cluster,
            cpus,
            method,
            step,
            overlap,
            repeats,
            timeout,
            out,
            progress,
            places,
        )
    finally:
        if cluster is not None:
            cluster.close()


def _tune(
    tasks: list[Task],
    names: list[str],
    specs: list[dict[str, Any]],
    cluster: Cluster | None,
    cpus: str | Sequence[int] | None,
    method: str,
    step: int,
    overlap: bool,
    repeats: int,
    timeout: float,
    out: str | Path | None,
    progress: bool,
    places: str | None,
) -> dict[str, Any]:
    from vlcs._context import VLC

    if cluster is not None:
        usable = next(iter(cluster.machines.values()))["cpus_usable"]
        cpu_ids = sorted(usable) if cpus is None else _parse_cpus(cpus)
        if not set(cpu_ids) <= set(usable):
            raise TuneError(
                f"the Dask workers' machines may use CPUs {format_cpus(usable)}; "
                f"{format_cpus(cpu_ids)} is not among them"
            )
    elif cpus is None:
        cpu_ids = sorted(os.sched_getaffinity(0))
    else:
        probe = VLC(cpus=cpus, name="tune-cpus")  # vlcs's own parser and checks
        cpu_ids = sorted(probe.cpus)
        probe.close()
    domains: list[list[int]] = []
    if places is not None:
        domains = _domains(places, cpu_ids)
        if len(domains) < len(tasks):
            raise TuneError(
                f"{len(tasks)} tasks need at least {len(tasks)} {places} domains, and CPUs "
                f"{format_cpus(cpu_ids)} hold {len(domains)}: give a narrower places (core) or "
                "more CPUs"
            )
        cpu_ids = [c for d in domains for c in d]  # tasks take whole domains, in order
    sizes = [len(d) for d in domains]
    n = len(cpu_ids)
    if n < len(tasks) and not overlap:
        raise TuneError(f"{len(tasks)} tasks need at least as many CPUs without --overlap; got {n}")
    outdir = Path(out) if out is not None else None
    if outdir:
        outdir.mkdir(parents=True, exist_ok=True)

    trials = Trials(specs, cpu_ids, outdir, timeout, progress)
    trials.cluster = cluster
    choices = [_space.env_choices(s["choices"]) for s in specs]
    # What each configuration runs, made once; configurations that run the
    # same thing (choices equal once filled in: "{cpus}" and "1" on one
    # CPU) are one, the first of them.
    by_label: dict[str, tuple[Config, Run]] = {}
    counts = [len(c) for c in choices]
    for cfg in (
        _space.aligned_configurations(sizes, len(tasks), counts)
        if places is not None
        else _space.configurations(n, len(tasks), step, overlap, counts)
    ):
        run = _split(names, cpu_ids, choices, cfg)
        by_label.setdefault(run.label, (cfg, run))
    split_of = dict(by_label.values())
    grid_space = list(split_of)

    def measure(cfg: Config) -> float:
        return trials.measure(split_of[cfg])

    def alone(task: int, count: int, env: int) -> Run:
        lists = [cpu_ids[:count] if i == task else [cpu_ids[0]] for i in range(len(tasks))]
        envs = [choices[i][env if i == task else 0] for i in range(len(tasks))]
        label = _label(names[task : task + 1], lists[task : task + 1], envs[task : task + 1])
        return Run(f"{label} alone", "split", lists, envs, task)

    def measure_alone(task: int, count: int, env: int) -> float:
        return trials.measure(alone(task, count, env))

    def measure_many(cfgs: list[Config]) -> list[float]:
        return trials.measure_many([split_of[c] for c in cfgs])

    def alone_many(items: list[tuple[int, int, int]]) -> list[float]:
        return trials.measure_many([alone(*a) for a in items])

    every = [cpu_ids] * len(tasks)
    defaults = [c[0] for c in choices]  # the baselines run each task's first choice
    baselines = [
        Run("shared: every task on " + format_cpus(cpu_ids), "shared", every, defaults),
        Run("sequential on " + format_cpus(cpu_ids), "sequential", every, defaults),
    ]
    small = _grid_is_cheaper(grid_space, n)
    trials.total = (len(grid_space) if method == "grid" or small else len(grid_space) // 3) + 2
    t0 = time.monotonic()
    shared, sequential = trials.measure_many(baselines)
    many = cluster is not None
    if method == "grid" or small:
        # A grid no larger than three profiles is cheaper measured whole.
        found = _space.grid(grid_space, measure, measure_many if many else None)
    else:
        found = _space.smart(
            grid_space, n, measure, measure_alone, alone_many=alone_many if many else None
        )
    # More rounds, interleaved over the baselines and every configuration
    # measured, until the best stays the best from one round to the next
    # (or `repeats` rounds): noise on a shared machine moves single runs.
    rounds, previous = 1, found.best
    for rnd in range(2, repeats + 1):
        trials._say(f"round {rnd} of at most {repeats}")
        values = trials.measure_many([*(split_of[c] for c in found.measured), *baselines], rnd)
        found.measured.update(zip(found.measured, values, strict=False))
        shared, sequential = values[-2:]
        rounds = rnd
        best = min(found.measured, key=lambda c: found.measured[c])
        found.best, found.best_s = best, found.measured[best]
        if best == previous:
            break
        previous = best
    wall = time.monotonic() - t0
    if found.best_s == float("inf"):
        raise TuneError(
            "every trial failed: " + "; ".join(f"{k}: {v}" for k, v in trials.errors.items())
        )
    best_run = split_of[found.best]
    plan: dict[str, Any] = {
        "version": 1,
        "method": method,
        "searched": "grid" if method == "grid" or small else "smart",
        "machine": machine(),
        "cpus": format_cpus(cpu_ids),
        "places": None
        if places is None
        else {"type": places, "domains": [format_cpus(d) for d in domains]},
        "tasks": [
            {
                "name": t.name,
                "cpus": format_cpus(c),
                "env": _space.fill_env({**s["env"], **e}, c),
            }
            for t, s, c, e in zip(tasks, specs, best_run.lists, best_run.env, strict=True)
        ],
        "makespan_s": found.best_s,
        "spread_s": trials.spread(best_run.label),
        "baselines": {"shared_s": shared, "sequential_s": sequential},
        "runs": found.runs + 2,
        "grid_runs": len(grid_space) + 2,
        "rounds": rounds,
        "trial_runs": sum(len(v) for v in trials.times.values()) + len(trials.errors),
        "tuning_s": wall,
        "prediction_error": found.prediction_error,
        "choices": {t.name: len(c) for t, c in zip(tasks, choices, strict=True) if len(c) > 1},
        "measured": [
            {
                "config": list(cfg.counts),
                "cpus": [format_cpus(c) for c in split_of[cfg].lists],
                "env": [
                    _space.fill_env(e, c)
                    for c, e in zip(split_of[cfg].lists, split_of[cfg].env, strict=True)
                ],
                "makespan_s": t,
                **({"predicted_s": found.predicted[cfg]} if cfg in found.predicted else {}),
            }
            for cfg, t in sorted(found.measured.items())
        ],
        "without_contexts": _without_contexts(names, trials.pools, grid_space, found),
        "failures": trials.errors,
        "ran_on": sorted(trials.ran_on),
        "dask": None if cluster is None else {"hosts": sorted(cluster.hosts)},
    }
    if outdir:
        (outdir / "plan.json").write_text(json.dumps(plan, indent=2) + "\n")
        write_report(plan, outdir, names, n, found)
    return plan


def _label(names: Sequence[str], lists: Sequence[list[int]], env: Sequence[dict[str, str]]) -> str:
    """A configuration as people read it and the cache keys it: each
    task's CPUs and its environment choice, filled in."""
    return " | ".join(
        task_text(n, format_cpus(c), _space.fill_env(e, c))
        for n, c, e in zip(names, lists, env, strict=True)
    )


def _split(
    names: list[str], cpu_ids: list[int], choices: list[list[dict[str, str]]], cfg: Config
) -> Run:
    lists = _space.cpu_lists(cpu_ids, cfg.counts)
    env = [c[i] for c, i in zip(choices, cfg.env, strict=True)]
    return Run(_label(names, lists, env), "split", lists, env)


def _without_contexts(
    names: list[str],
    pools: Mapping[str, set[tuple[str, str]]],
    grid_space: list[Config],
    found: _space.SearchResult,
) -> dict[str, Any]:
    """Which CPU counts of the space a process without contexts could also
    set with the libraries' own thread-count APIs (the paper's marks in
    its Fig. 2), and the best measured of those: where tasks share a
    library whose count is one per process (OpenBLAS, torch), only equal
    counts."""
    families = [{f for f, _ in pools.get(n, ())} for n in names]
    per_process = {f for n in names for f, per in pools.get(n, ()) if per == "process"}
    shared = sorted(f for f in per_process if sum(f in fs for fs in families) > 1)
    ok = {c.counts for c in grid_space if _space.reachable(c.counts, families, shared)}
    tried = [c for c in found.measured if c.counts in ok]
    best = min(tried, key=lambda c: found.measured[c]) if tried else None
    return {
        "pools": {n: sorted(f for f, _ in pools.get(n, ())) for n in names},
        "one_count_per_process": shared,
        "reachable": [list(c) for c in sorted(ok)],
        "splits": len({c.counts for c in grid_space}),
        "best_s": None if best is None else found.measured[best],
    }


def _domains(places: str, cpu_ids: list[int]) -> list[list[int]]:
    """The CPUs to split grouped by domain of that type, in the topology's
    order; a CPU in none is a domain of its own."""
    here = set(cpu_ids)
    doms = [d for o in _topo.objects(places) if (d := sorted(set(o) & here))]
    covered = {c for d in doms for c in d}
    doms += [[c] for c in cpu_ids if c not in covered]
    return sorted(doms, key=lambda d: d[0])


def _parse_cpus(cpus: str | Sequence[int]) -> list[int]:
    if not isinstance(cpus, str):
        return sorted(int(c) for c in cpus)
    out: list[int] = []
    for part in filter(None, cpus.split(",")):
        lo, _, hi = part.partition("-")
        try:
            out.extend(range(int(lo), int(hi or lo) + 1))
        except ValueError:
            raise TuneError(f'cpus must be a list like "0-3,8"; got {cpus!r}') from None
    return sorted(set(out))


def _grid_is_cheaper(space: list[Config], ncpus: int) -> bool:
    """Whether measuring every configuration costs no more than three
    profiles (each task alone on a few CPU counts): then `smart` does that."""
    return len(space) <= 3 * _space.profile_runs(ncpus, space)

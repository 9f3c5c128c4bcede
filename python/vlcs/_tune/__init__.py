"""``vlcs tune``: find the CPU partition of concurrent tasks, and say what
finding it cost (the paper's auto-tuner, with a search that needs a
fraction of the grid's runs).

The search (space.py) is a pure function of a ``measure`` callback; this
module turns tasks into trials (trial.py: each a fresh process under
``vlcs-run``, with a timeout), caches what was measured so an interrupted
tuning resumes, shows progress, and writes plan.json, report.md and, for
two tasks, the heatmap.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import platform
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from vlcs._tune import space as _space
from vlcs._tune.space import Config, format_cpus

METHODS = ("smart", "grid")


class TuneError(ValueError):
    """A tuning that cannot start: bad tasks, CPUs or options."""


@dataclass
class Task:
    """A task to tune: a Python function run inside a context, or a program
    run as its own process confined to its CPUs.

    call: "module:function" (or a function importable by that name);
    args: its keyword arguments; command: argv of a program; env: variables
    for the task, where "{cpus}" becomes its CPU count ("{cpus*2}",
    "{cpus/2}": times or divided by an integer) and "{cpulist}" its CPU
    list; choices: variables whose values the tuning tries, each a list
    (every combination is crossed with the CPU partitions; the first
    values are the task's default, which the baselines use).

    >>> Task("solver", command=["./solver"], env={"OMP_NUM_THREADS": "{cpus}"}).kind
    'command'
    >>> t = Task("gemm", call="m:f", choices={"OPENBLAS_NUM_THREADS": ["{cpus}", "1"]})
    """

    name: str
    call: str | Callable[..., Any] | None = None
    args: Mapping[str, Any] = field(default_factory=dict)
    command: Sequence[str] | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    choices: Mapping[str, Sequence[str]] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return "call" if self.call is not None else "command"

    def spec(self) -> dict[str, Any]:
        """The JSON form a trial process gets; TuneError when it cannot run."""
        if (self.call is None) == (self.command is None):
            raise TuneError(f"task '{self.name}': give exactly one of call and command")
        out: dict[str, Any] = {
            "name": self.name,
            "env": {k: str(v) for k, v in self.env.items()},
            "choices": self._choices(),
        }
        if self.call is not None:
            out["call"] = _call_name(self.name, self.call)
            out["args"] = dict(self.args)
            try:
                json.dumps(out["args"])
            except TypeError as e:
                raise TuneError(f"task '{self.name}': args must be JSON values ({e})") from None
        else:
            argv = [str(a) for a in (self.command or [])]
            if not argv:
                raise TuneError(f"task '{self.name}': command is empty")
            if shutil.which(argv[0]) is None:
                raise TuneError(f"task '{self.name}': program {argv[0]!r} not found")
            out["command"] = argv
        for text in [*out["env"].values(), *(v for vs in out["choices"].values() for v in vs)]:
            try:
                _space.fill(text, [0])
            except ValueError as e:
                raise TuneError(f"task '{self.name}': {e}") from None
        return out

    def _choices(self) -> dict[str, list[str]]:
        if not isinstance(self.choices, Mapping):
            raise TuneError(f"task '{self.name}': choices must map variables to lists of values")
        out = {}
        for k, values in self.choices.items():
            if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
                raise TuneError(
                    f"task '{self.name}': choices of {k} must be a non-empty list of values; "
                    f"got {values!r}"
                )
            if k in self.env:
                raise TuneError(f"task '{self.name}': give {k} in env or in choices, not both")
            out[k] = [str(v) for v in values]
        return out


def _call_name(task: str, call: str | Callable[..., Any]) -> str:
    if callable(call):
        module, qualname = getattr(call, "__module__", None), getattr(call, "__qualname__", "")
        if not module or module == "__main__" or "<" in qualname:
            raise TuneError(
                f"task '{task}': {call!r} cannot be imported by a fresh process; define it at "
                "the top level of a module"
            )
        call = f"{module}:{qualname}"
    module, sep, function = call.partition(":")
    if not sep or not module or not function:
        raise TuneError(f"task '{task}': call must be 'module:function'; got {call!r}")
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        found = None
    if found is None:
        raise TuneError(
            f"task '{task}': module {module!r} not found on sys.path (the current directory "
            "and PYTHONPATH)"
        )
    return call


def load_tasks(path: str | Path) -> list[Task]:
    """Tasks from a TOML (``[[task]]`` tables) or JSON ({"task": [...]}) file."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise TuneError(f"cannot read {p}: {e.strerror}") from None
    try:
        if p.suffix == ".json":
            doc = json.loads(text)
        else:
            try:
                import tomllib
            except ModuleNotFoundError:  # Python 3.10
                try:
                    import tomli as tomllib
                except ModuleNotFoundError:
                    raise TuneError(
                        f"{p}: reading TOML on Python {platform.python_version()} needs tomli "
                        "(pip install tomli), or give the tasks as JSON"
                    ) from None
            doc = tomllib.loads(text)
    except (ValueError, TypeError) as e:
        raise TuneError(f"{p}: {e}") from None
    entries = doc.get("task")
    if not isinstance(entries, list) or not entries:
        raise TuneError(f"{p}: no [[task]] entries")
    tasks = []
    for i, t in enumerate(entries):
        unknown = set(t) - {"name", "call", "args", "command", "env", "choices"}
        if unknown:
            raise TuneError(f"{p}: task {i + 1}: unknown keys {sorted(unknown)}")
        tasks.append(
            Task(
                t.get("name", f"task{i + 1}"),
                t.get("call"),
                t.get("args", {}),
                t.get("command"),
                t.get("env", {}),
                t.get("choices", {}),
            )
        )
    return tasks


def machine() -> dict[str, Any]:
    """What a plan records of the machine it was made on."""
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next(
                (ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), ""
            )
    except OSError:
        pass
    return {
        "hostname": platform.node(),
        "cpu_model": model,
        "cpus_usable": sorted(os.sched_getaffinity(0)),
    }


class _Run(NamedTuple):
    """What one trial runs: its label (the cache's key too), the mode, each
    task's CPUs and environment choice, and which task alone (or None)."""

    label: str
    mode: str
    lists: list[list[int]]
    env: list[dict[str, str]]
    only: int | None = None


class _Trials:
    """Runs trials in fresh processes, with a cache on disk and progress.

    Every run is one line of out/trials.jsonl (the tuning's key, the
    configuration, its makespan and each task's time, or the error), so an
    interrupted tuning resumes with what it had."""

    def __init__(
        self,
        tasks: list[dict[str, Any]],
        cpus: list[int],
        out: Path | None,
        timeout: float,
        progress: bool,
    ) -> None:
        self.tasks, self.cpus, self.timeout = tasks, cpus, timeout
        self.progress = progress
        self.key = hashlib.sha1(json.dumps([tasks, cpus], sort_keys=True).encode()).hexdigest()[:12]
        self.times: dict[str, list[float]] = {}
        self.errors: dict[str, str] = {}
        self.args: dict[str, _Run] = {}
        # task name -> {(thread-pool family, threads_per)} its contexts had
        self.pools: dict[str, set[tuple[str, str]]] = {t["name"]: set() for t in tasks}
        self.cache_path = out / "trials.jsonl" if out else None
        if self.cache_path and self.cache_path.exists():
            for line in self.cache_path.read_text().splitlines():
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue  # a line cut by an interruption
                if rec.get("tuning") != self.key:
                    continue
                if rec.get("error"):
                    self.errors[rec["config"]] = rec["error"]
                else:
                    self.times.setdefault(rec["config"], []).append(rec["makespan"])
                    self._saw_pools(rec.get("pools", {}))
        self.runs = 0  # trial executions this tuning needed (cached ones included)
        self.ran_on: set[str] = set()  # machine:process that started the trials
        self.cluster: _Cluster | None = None
        self.started = time.monotonic()
        self.best: tuple[float, str] | None = None
        self.total: int | None = None

    def _say(self, text: str) -> None:
        if self.progress:
            print(f"vlcs tune: {text}", file=sys.stderr, flush=True)

    def _count(self) -> str:
        """Runs done, as a bar when the total is known (smart's is its
        budget: it may stop before; rounds of --repeats go past it)."""
        if not self.total:
            return str(self.runs)
        done = min(20, 20 * self.runs // self.total)
        return f"{'#' * done}{'.' * (20 - done)} {self.runs}/{self.total}"

    def _saw_pools(self, pools: Mapping[str, list[list[Any]]]) -> None:
        for name, found in pools.items():
            self.pools.setdefault(name, set()).update((p[0], p[1]) for p in found)

    def _spec(self, run: _Run) -> dict[str, Any]:
        return {
            "tasks": self.tasks,
            "mode": run.mode,
            "cpus": run.lists,
            "env": run.env,
            "only": run.only,
            "path": [p for p in sys.path if p],
        }

    def _once(self, run: _Run) -> dict[str, Any]:
        from vlcs._tune.trial import run_isolated

        spec = self._spec(run)
        if self.cluster is not None:  # on a worker's machine, not the tuner's
            return self.cluster.run([("", spec)], self.timeout)[0][1]
        return run_isolated(spec, self.timeout)

    def measure(self, run: _Run, runs: int = 1) -> float:
        """The median makespan of `runs` runs of a configuration (those in
        the cache count); inf once it failed."""
        label = run.label
        self.args[label] = run
        have = self.times.setdefault(label, [])
        while label not in self.errors and len(have) < runs:
            self._record(label, self._once(run))
        self.runs += 1
        if label in self.errors:
            self._say(f"[{self._count()}] {label}: FAILED: {self.errors[label]}")
            return float("inf")
        t = statistics.median(have[:runs])
        if run.only is None and run.mode == "split" and (self.best is None or t < self.best[0]):
            self.best = (t, label)
        best = f"best {self.best[0]:.3f} s ({self.best[1]})" if self.best else "no best yet"
        self._say(
            f"[{self._count()}] {label}: {t:.3f} s; "
            f"{best}; {time.monotonic() - self.started:.0f} s elapsed"
        )
        return t

    def _record(self, label: str, r: dict[str, Any]) -> None:
        rec: dict[str, Any] = {"tuning": self.key, "config": label}
        if "error" in r:
            self.errors[label] = rec["error"] = r["error"]
        else:
            self.times.setdefault(label, []).append(r["makespan"])
            self.ran_on.add(r.get("ran_on", "?"))
            self._saw_pools(r.get("pools", {}))
            rec.update(makespan=r["makespan"], each=r["each"], pools=r.get("pools", {}))
        if self.cache_path:
            with self.cache_path.open("a") as f:
                f.write(json.dumps(rec) + "\n")

    def measure_many(self, items: list[_Run], runs: int = 1) -> list[float]:
        """Several configurations.  On a Dask cluster their trials run at
        once, one per worker machine at a time (a trial owns its machine's
        CPUs); without one, one after another."""
        if self.cluster is not None:
            jobs = []
            for run in items:
                self.args[run.label] = run
                if run.label not in self.errors:
                    missing = runs - len(self.times.get(run.label, []))
                    jobs += [(run.label, self._spec(run))] * max(0, missing)
            for label, r in self.cluster.run(jobs, self.timeout):
                self._record(label, r)
        return [self.measure(run, runs) for run in items]

    def spread(self, label: str) -> list[float]:
        t = self.times.get(label)
        return [min(t), max(t)] if t else []


def check_identical(machines: Mapping[str, Mapping[str, Any]]) -> None:
    """TuneError unless every worker machine has the same CPU model and the
    same usable CPUs: a plan is only as good as the machine it was made on."""
    seen: dict[tuple[str, tuple[int, ...]], list[str]] = {}
    for addr, m in machines.items():
        key = (str(m.get("cpu_model")), tuple(m.get("cpus_usable", ())))
        seen.setdefault(key, []).append(f"{m.get('hostname', '?')} ({addr})")
    if len(seen) > 1:
        kinds = "; ".join(
            f"{', '.join(w)}: {model or 'unknown CPU'}, CPUs {format_cpus(list(cpus))}"
            for (model, cpus), w in seen.items()
        )
        raise TuneError(f"the Dask workers' machines differ ({kinds}); tune on identical machines")


class _Cluster:
    """Trials on the workers of a Dask cluster: one worker per machine, one
    trial per machine at a time."""

    def __init__(self, dask: Any) -> None:
        try:
            from distributed import Client
        except ImportError:
            raise TuneError(
                "--dask needs the distributed package (pip install distributed)"
            ) from None
        self.own = not isinstance(dask, Client)  # made here: closed here
        self.client = Client(dask, timeout="30s") if self.own else dask
        workers = self.client.scheduler_info()["workers"]
        if not workers:
            raise TuneError(f"the Dask cluster at {self.client.scheduler.address} has no workers")
        self.machines = self.client.run(machine)
        check_identical(self.machines)
        self.hosts: dict[str, str] = {}  # host -> the worker that runs its trials
        for addr, w in sorted(workers.items()):
            self.hosts.setdefault(w["host"], addr)

    def close(self) -> None:
        if self.own:
            self.client.close()

    def run(
        self, jobs: list[tuple[str, dict[str, Any]]], timeout: float
    ) -> list[tuple[str, dict[str, Any]]]:
        from distributed import as_completed

        from vlcs._tune.trial import run_isolated

        queue, done = list(jobs), []
        free = list(self.hosts)
        flying: dict[Any, tuple[str, str]] = {}
        pending = as_completed()
        while queue or flying:
            while queue and free:
                host = free.pop()
                label, spec = queue.pop(0)
                f = self.client.submit(
                    run_isolated,
                    spec,
                    timeout,
                    workers=[self.hosts[host]],
                    pure=False,
                    allow_other_workers=False,
                )
                flying[f] = (host, label)
                pending.add(f)
            f = next(pending)
            host, label = flying.pop(f)
            free.append(host)
            try:
                done.append((label, f.result()))
            except Exception as e:  # the worker died or the trial could not start there
                done.append((label, {"error": f"on {host}: {type(e).__name__}: {e}"}))
        return done


def as_task(task: Task | str | Callable[..., Any] | Sequence[str]) -> Task:
    """A Task from what ``tune`` accepts: a Task, a function importable by
    name, "module:function", or a program's argv; named after the function
    or the program.

    >>> as_task(["./solver", "--n", "4000"]).name, as_task("mytrain:run").name
    ('solver', 'run')
    """
    if isinstance(task, Task):
        return task
    if isinstance(task, str):
        return Task(task.rpartition(":")[2] or task, call=task)
    if callable(task):
        return Task(getattr(task, "__name__", "task"), call=task)
    if isinstance(task, Sequence) and task and all(isinstance(a, str) for a in task):
        return Task(os.path.basename(task[0]), command=list(task))
    raise TuneError(
        "a task is a vlcs.Task, a function, 'module:function' or a program's argv list; "
        f"got {task!r}"
    )


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
) -> dict[str, Any]:
    """Find the CPU partition that runs `tasks` at once fastest.

    tasks: vlcs.Task objects, or functions importable by name,
    "module:function" strings and programs' argv lists (see as_task).

    dask: a Dask scheduler address (or a distributed.Client): the trials
    run on its workers' machines, which must be identical, one trial per
    machine at a time, the grid's and the profiles' side by side.

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
    vlcs._tune.TuneError: give at least two tasks to tune (got 0)
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
    specs = [t.spec() for t in tasks]
    cluster = _Cluster(dask) if dask is not None else None
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
        )
    finally:
        if cluster is not None:
            cluster.close()


def _tune(
    tasks: list[Task],
    names: list[str],
    specs: list[dict[str, Any]],
    cluster: _Cluster | None,
    cpus: str | Sequence[int] | None,
    method: str,
    step: int,
    overlap: bool,
    repeats: int,
    timeout: float,
    out: str | Path | None,
    progress: bool,
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
    n = len(cpu_ids)
    if n < len(tasks) and not overlap:
        raise TuneError(f"{len(tasks)} tasks need at least as many CPUs without --overlap; got {n}")
    outdir = Path(out) if out is not None else None
    if outdir:
        outdir.mkdir(parents=True, exist_ok=True)

    trials = _Trials(specs, cpu_ids, outdir, timeout, progress)
    trials.cluster = cluster
    choices = [_space.env_choices(s["choices"]) for s in specs]
    # What each configuration runs, made once; configurations that run the
    # same thing (choices equal once filled in: "{cpus}" and "1" on one
    # CPU) are one, the first of them.
    by_label: dict[str, tuple[Config, _Run]] = {}
    for cfg in _space.configurations(n, len(tasks), step, overlap, [len(c) for c in choices]):
        run = _split(names, cpu_ids, choices, cfg)
        by_label.setdefault(run.label, (cfg, run))
    split_of = dict(by_label.values())
    grid_space = list(split_of)

    def measure(cfg: Config) -> float:
        return trials.measure(split_of[cfg])

    def alone(task: int, count: int, env: int) -> _Run:
        lists = [cpu_ids[:count] if i == task else [cpu_ids[0]] for i in range(len(tasks))]
        envs = [choices[i][env if i == task else 0] for i in range(len(tasks))]
        label = _label(names[task : task + 1], lists[task : task + 1], envs[task : task + 1])
        return _Run(f"{label} alone", "split", lists, envs, task)

    def measure_alone(task: int, count: int, env: int) -> float:
        return trials.measure(alone(task, count, env))

    def measure_many(cfgs: list[Config]) -> list[float]:
        return trials.measure_many([split_of[c] for c in cfgs])

    def alone_many(items: list[tuple[int, int, int]]) -> list[float]:
        return trials.measure_many([alone(*a) for a in items])

    every = [cpu_ids] * len(tasks)
    defaults = [c[0] for c in choices]  # the baselines run each task's first choice
    baselines = [
        _Run("shared: every task on " + format_cpus(cpu_ids), "shared", every, defaults),
        _Run("sequential on " + format_cpus(cpu_ids), "sequential", every, defaults),
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
        _report(plan, outdir, names, n, found)
    return plan


def _label(names: Sequence[str], lists: Sequence[list[int]], env: Sequence[dict[str, str]]) -> str:
    """A configuration as people read it and the cache keys it: each
    task's CPUs and its environment choice, filled in."""
    return " | ".join(
        _task_text(n, format_cpus(c), _space.fill_env(e, c))
        for n, c, e in zip(names, lists, env, strict=True)
    )


def _task_text(name: str, cpus: str, env: Mapping[str, str]) -> str:
    """One task of a configuration, as labels and the report write it."""
    return f"{name}={cpus}" + "".join(f" {k}={v}" for k, v in env.items())


def _split(
    names: list[str], cpu_ids: list[int], choices: list[list[dict[str, str]]], cfg: Config
) -> _Run:
    lists = _space.cpu_lists(cpu_ids, cfg.counts)
    env = [c[i] for c, i in zip(choices, cfg.env, strict=True)]
    return _Run(_label(names, lists, env), "split", lists, env)


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


def _report(
    plan: dict[str, Any], out: Path, names: list[str], n: int, found: _space.SearchResult
) -> None:
    lines = [
        f"# vlcs tune: {' + '.join(names)}",
        "",
        f"Method {plan['method']}"
        + (
            " (the grid is smaller than three profiles: measured whole)"
            if plan["method"] == "smart" and plan["searched"] == "grid"
            else ""
        )
        + f": {plan['runs']} trial runs (the grid: {plan['grid_runs']}), "
        f"{plan['tuning_s']:.0f} s, {plan['rounds']} round(s) of the measured configurations "
        f"({plan['trial_runs']} trial runs in all); CPUs {plan['cpus']} on "
        f"{plan['machine']['hostname']} ({plan['machine']['cpu_model']}).",
        "",
        "| task | CPUs | environment |",
        "|---|---|---|",
        *[
            f"| {t['name']} | {t['cpus']} | {' '.join(f'{k}={v}' for k, v in t['env'].items())} |"
            for t in plan["tasks"]
        ],
        "",
        f"Makespan {plan['makespan_s']:.3f} s; all tasks sharing every CPU "
        f"{plan['baselines']['shared_s']:.3f} s; one after another "
        f"{plan['baselines']['sequential_s']:.3f} s.",
    ]
    if plan["prediction_error"] is not None:
        lines += [
            "",
            "Predicted versus measured makespan: "
            f"{100 * plan['prediction_error']:.0f} % mean error.",
        ]
    lines += ["", "| configuration | measured s | predicted s |", "|---|---|---|"]
    for m in plan["measured"]:
        pred = f"{m['predicted_s']:.3f}" if "predicted_s" in m else ""
        split = ", ".join(
            _task_text(n, c, e) for n, c, e in zip(names, m["cpus"], m["env"], strict=True)
        )
        lines.append(f"| {split} | {m['makespan_s']:.3f} | {pred} |")
    wc = plan["without_contexts"]
    if wc["one_count_per_process"]:
        why = (
            f"{' and '.join(wc['one_count_per_process'])} (used by more than one task) has one "
            "thread count per process, so only equal counts are reachable"
        )
    else:
        why = "no library the tasks share has one thread count per process"
    best = "none measured" if wc["best_s"] is None else f"the best measured {wc['best_s']:.3f} s"
    lines += [
        "",
        "Without contexts (thread pools seen: "
        + "; ".join(f"{n}: {', '.join(p) or 'none seen'}" for n, p in wc["pools"].items())
        + f"): {why}; {len(wc['reachable'])} of the {wc['splits']} CPU splits are reachable so "
        f"({best}, timed with contexts"
        + ("; dotted in the heatmap)." if len(wc["reachable"]) < wc["splits"] else ")."),
    ]
    if plan["failures"]:
        lines += ["", "Failed trials:", *[f"- {k}: {v}" for k, v in plan["failures"].items()]]
    if len(names) == 2 and _heatmap(plan, out / "heatmap.png", names, n, found):
        lines += ["", "![makespan by CPUs per task](heatmap.png)"]
    (out / "report.md").write_text("\n".join(lines) + "\n")


def heatmap_cells(
    found: _space.SearchResult, n: int, reachable: Sequence[Sequence[int]]
) -> tuple[list[list[float]], list[tuple[int, int]], tuple[int, int]]:
    """What the heatmap of two tasks draws: values[b - 1][a - 1] is the
    makespan with a CPUs for the first task and b for the second (the best
    over their environment choices; nan where not measured), the cells
    reachable without contexts, and the optimum's cell, as (a, b)."""
    values = [[float("nan")] * n for _ in range(n)]
    for cfg, t in found.measured.items():
        a, b = cfg.counts
        if t != float("inf") and not values[b - 1][a - 1] <= t:
            values[b - 1][a - 1] = t
    marks = [(a, b) for a, b in reachable]
    a, b = found.best.counts
    return values, marks, (a, b)


def _heatmap(
    plan: dict[str, Any], path: Path, names: list[str], n: int, found: _space.SearchResult
) -> bool:
    """The paper's Fig. 2: cells are makespans by CPUs per task, blank
    where not measured, the optimum boxed, the counts reachable without
    contexts dotted.  False when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Rectangle
    except ImportError:
        return False
    values, marks, (a, b) = heatmap_cells(found, n, plan["without_contexts"]["reachable"])
    fig, ax = plt.subplots(figsize=(max(4.0, 1.6 + 0.45 * n), max(3.4, 1.4 + 0.45 * n)))
    im = ax.imshow(values, origin="lower", cmap="viridis_r")
    ax.set_xticks(range(n), [str(i + 1) for i in range(n)])
    ax.set_yticks(range(n), [str(i + 1) for i in range(n)])
    ax.set_xlabel(f"CPUs of {names[0]}")
    ax.set_ylabel(f"CPUs of {names[1]}")
    ax.add_patch(Rectangle((a - 1.5, b - 1.5), 1, 1, fill=False, edgecolor="red", linewidth=2.5))
    if marks and len(marks) < plan["without_contexts"]["splits"]:  # all: nothing to mark
        ax.scatter(
            [x - 1 for x, _ in marks],
            [y - 1 for _, y in marks],
            s=18,
            c="white",
            edgecolors="black",
            linewidths=0.6,
            label="reachable without contexts",
        )
        ax.legend(loc="upper left", bbox_to_anchor=(0.0, -0.16), fontsize=8, frameon=False)
    fig.colorbar(im, ax=ax, label="makespan (s)")
    ax.set_title(
        f"{plan['method']}: {plan['runs']} runs, best {plan['makespan_s']:.3f} s", fontsize=10
    )
    fig.savefig(path, dpi=90, bbox_inches="tight")
    plt.close(fig)
    return True

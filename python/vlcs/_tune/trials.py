"""Trials of ``vlcs tune``: each configuration run in a fresh process
(trial.py) with a timeout, a cache on disk so an interrupted tuning
resumes, progress lines, and Dask clusters of identical machines."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from vlcs._tune.space import format_cpus
from vlcs._tune.tasks import TuneError


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


class Run(NamedTuple):
    """What one trial runs: its label (the cache's key too), the mode, each
    task's CPUs and environment choice, and which task alone (or None)."""

    label: str
    mode: str
    lists: list[list[int]]
    env: list[dict[str, str]]
    only: int | None = None


class Trials:
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
        self.args: dict[str, Run] = {}
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
        self.cluster: Cluster | None = None
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

    def _spec(self, run: Run) -> dict[str, Any]:
        return {
            "tasks": self.tasks,
            "mode": run.mode,
            "cpus": run.lists,
            "env": run.env,
            "only": run.only,
            "path": [p for p in sys.path if p],
        }

    def _once(self, run: Run) -> dict[str, Any]:
        from vlcs._tune.trial import run_isolated

        spec = self._spec(run)
        if self.cluster is not None:  # on a worker's machine, not the tuner's
            return self.cluster.run([("", spec)], self.timeout)[0][1]
        return run_isolated(spec, self.timeout)

    def measure(self, run: Run, runs: int = 1) -> float:
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

    def measure_many(self, items: list[Run], runs: int = 1) -> list[float]:
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


class Cluster:
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

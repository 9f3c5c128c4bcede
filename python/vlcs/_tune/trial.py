"""One trial of ``vlcs tune``, in a fresh process: the tasks run at once in
their CPU sets (Python functions each in a context, programs each as a
process confined to its CPUs), or one after another; the times come back
as one JSON line on stdout.

    python -m vlcs._tune.trial < spec.json

The spec: {"tasks": [...], "mode": "split" | "shared" | "sequential",
"cpus": [[cpu, ...] per task], "env": [{variable: value} per task: the
environment choice each runs with], "only": task index or null}.  Setup
(importing a task's module into its context, starting nothing yet) is not
timed; each task's clock starts when all are launched.  The result also
names the thread pools each function's context had (the libraries whose
thread-count APIs decide what is reachable without contexts).
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import Future
from typing import Any

from vlcs._tune.space import fill, fill_env


def _function(ctx: Any, call: str) -> Any:
    module, _, qualname = call.partition(":")
    with ctx:
        obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


class _Running:
    """A launched task: a future of a context's executor, or a process."""

    def __init__(self, task: dict[str, Any], cpus: list[int], choice: dict[str, str]) -> None:
        self.task, self.cpus = task, cpus
        env = fill_env({**task.get("env", {}), **choice}, cpus)
        self.fn: Any = None
        self.ctx: Any = None
        self.argv: list[str] = []
        self.env = env
        if task.get("call"):
            from vlcs._context import VLC

            self.ctx = VLC(cpus=cpus, env=env, name=task["name"][:40])
            self.fn = _function(self.ctx, task["call"])
        else:
            self.argv = [fill(str(a), cpus) for a in task["command"]]
        self.started = 0.0
        self.done = 0.0
        self._future: Future[Any] | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.started = time.perf_counter()
        if self.ctx is not None:
            self._future = self.ctx.submit(self.fn, **self.task.get("args", {}))
            self._future.add_done_callback(lambda _f: setattr(self, "done", time.perf_counter()))
        else:
            cpus = set(self.cpus)
            self._proc = subprocess.Popen(
                self.argv,
                env={**os.environ, **self.env},
                preexec_fn=lambda: os.sched_setaffinity(0, cpus),
                stdout=subprocess.DEVNULL,
            )

    def wait(self) -> float:
        if self._future is not None:
            self._future.result()
            if not self.done:  # the callback runs in the worker; it has run by now
                self.done = time.perf_counter()
        else:
            assert self._proc is not None
            rc = self._proc.wait()
            self.done = time.perf_counter()
            if rc != 0:
                raise RuntimeError(
                    f"task '{self.task['name']}': {self.argv[0]} exited with status {rc}"
                )
        return self.done - self.started

    def pools(self) -> list[list[Any]]:
        """[family, threads_per, threads] of each thread pool in the task's
        context, as the library answers inside it after the run."""
        if self.ctx is None:
            return []
        try:
            pools = self.ctx.threadpools()
        except Exception:  # a side note of the trial: never what fails it
            return []
        found = {(p["api"], p["threads_per"], p["num_threads"]) for p in pools}
        return [list(p) for p in sorted(found)]


def run(spec: dict[str, Any]) -> dict[str, Any]:
    tasks, mode, cpus = spec["tasks"], spec["mode"], spec["cpus"]
    envs = spec.get("env") or [{} for _ in tasks]
    if spec.get("only") is not None:
        i = spec["only"]
        tasks, cpus, envs = [tasks[i]], [cpus[i]], [envs[i]]
    running = [_Running(t, c, e) for t, c, e in zip(tasks, cpus, envs, strict=True)]
    each: list[float] = []
    t0 = time.perf_counter()
    if mode == "sequential":
        for r in running:
            r.start()
            each.append(r.wait())
    else:
        for r in running:
            r.start()
        each = [r.wait() for r in running]
    import platform

    # Where it ran: the machine, and the process that started it (the tuner,
    # or a Dask worker).
    return {
        "makespan": time.perf_counter() - t0,
        "each": each,
        "pools": {r.task["name"]: r.pools() for r in running},
        "ran_on": f"{platform.node()}:{os.getppid()}",
    }


def run_isolated(spec: dict[str, Any], timeout: float) -> dict[str, Any]:
    """One trial in a fresh process under vlcs-run, started from this one
    (the tuner, or a Dask worker on another machine); its times, or
    {"error": why}.  A trial past `timeout` is killed with its programs."""
    from vlcs._paths import program_path

    argv = [str(program_path("vlcs-run")), "--", sys.executable, "-m", "vlcs._tune.trial"]
    p = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = p.communicate(json.dumps(spec), timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)  # its programs too
        p.communicate()
        return {"error": f"timed out after {timeout:g} s"}
    lines = out.strip().splitlines()
    if p.returncode != 0 or not lines:
        tail = (err.strip().splitlines() or ["no message"])[-1]
        return {"error": f"the trial process exited with status {p.returncode}: {tail}"}
    return dict(json.loads(lines[-1]))


def main() -> int:
    spec = json.load(sys.stdin)
    sys.path[:0] = spec.get("path", [])
    try:
        out = run(spec)
    except BaseException as e:  # reported to the tuner, which goes on
        out = {"error": f"{type(e).__name__}: {e}"}
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

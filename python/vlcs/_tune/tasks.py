"""What ``vlcs tune`` tunes: tasks (functions run in contexts, programs
confined to their CPUs), read from Python, TOML or JSON."""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vlcs._tune import space as _space


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

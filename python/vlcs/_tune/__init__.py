"""``vlcs tune``: find the CPU partition of concurrent tasks, and say what
finding it cost (the paper's auto-tuner, with a search that needs a
fraction of the grid's runs).

The search (space.py) is a pure function of a ``measure`` callback;
tasks.py says what is tuned, trials.py runs each configuration in a fresh
process (trial.py, under ``vlcs-run``, with a timeout), caches what was
measured so an interrupted tuning resumes and shows progress, tuning.py
drives the search and writes plan.json, and report.py writes report.md and,
for two tasks, the heatmap.  See README.md in this folder.
"""

from __future__ import annotations

from vlcs._tune.report import heatmap_cells
from vlcs._tune.tasks import Task, TuneError, as_task, load_tasks
from vlcs._tune.trials import check_identical, machine
from vlcs._tune.tuning import METHODS, tune

__all__ = [
    "METHODS",
    "Task",
    "TuneError",
    "as_task",
    "check_identical",
    "heatmap_cells",
    "load_tasks",
    "machine",
    "tune",
]

"""``vlcs tune``: the search over CPU partitions (with tasks of known
scaling, so the optimum is known), and real tunings on this machine's CPUs:
an OpenBLAS GEMM series and an OpenMP stencil as Python functions in
contexts, a C++ program as a command; the plan, its report and heatmap,
``VLC.from_plan``, resuming from the cache, and bad input."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import vlcs
from test_imports import needs_two, run_code
from vlcs._tune import space

DATA = Path(__file__).with_name("data")


# ---- the search, with tasks of known scaling -------------------------------


def model(serial: list[float], parallel: list[float]):
    """measure() of tasks that take serial + parallel / cpus seconds, and
    contend when CPUs are shared (overlap): the slowest task decides."""

    def measure(cfg: space.Config) -> float:
        return max(s + p / c for s, p, c in zip(serial, parallel, cfg.counts, strict=True))

    def alone(task: int, count: int, env: int) -> float:
        return serial[task] + parallel[task] / count

    return measure, alone


CASES = [
    ([0.1, 0.1], [8.0, 2.0], 16),  # unequal: the large one gets most CPUs
    ([0.5, 0.05], [4.0, 4.0], 16),  # one with a serial part
    ([0.2, 0.2, 0.2], [6.0, 3.0, 1.0], 12),  # three tasks
    ([0.0, 1.0], [12.0, 0.5], 24),  # the paper's 24 cores
]


@pytest.mark.parametrize(("serial", "parallel", "n"), CASES)
def test_grid_measures_every_configuration_once_and_finds_the_optimum(serial, parallel, n):
    measure, _ = model(serial, parallel)
    calls: list[space.Config] = []
    grid_space = space.configurations(n, len(serial))
    r = space.grid(grid_space, lambda c: calls.append(c) or measure(c))
    assert sorted(calls) == sorted(grid_space) and len(set(calls)) == len(calls)
    assert r.best_s == min(measure(c) for c in grid_space)
    assert all(sum(c.counts) <= n and min(c.counts) >= 1 for c in grid_space)


@pytest.mark.parametrize(("serial", "parallel", "n"), CASES)
def test_smart_is_within_5_percent_of_the_grid_with_a_third_of_its_runs(serial, parallel, n):
    measure, alone = model(serial, parallel)
    grid_space = space.configurations(n, len(serial))
    best = space.grid(grid_space, measure).best_s
    r = space.smart(grid_space, n, measure, alone)
    assert r.runs <= len(grid_space) / 3, (r.runs, len(grid_space))
    assert r.best_s <= best * 1.05, (r.best, r.best_s, best)
    assert r.prediction_error is not None and r.prediction_error < 0.01  # Amdahl tasks


def test_smart_survives_a_model_that_is_wrong():
    # Contention the model does not know: tasks slow each other down by
    # how many CPUs the other holds; smart still ends within its budget and
    # its answer is the best of what it measured.
    serial, parallel, n = [0.1, 0.1], [8.0, 4.0], 16

    def measure(cfg):
        a, b = cfg.counts
        return max(
            serial[0] + parallel[0] / a * (1 + b / 32), serial[1] + parallel[1] / b * (1 + a / 32)
        )

    grid_space = space.configurations(n, 2)
    r = space.smart(grid_space, n, measure, lambda t, c, e: serial[t] + parallel[t] / c)
    assert r.runs <= len(grid_space) / 3
    assert r.best_s == min(r.measured.values())
    assert r.best_s <= space.grid(grid_space, measure).best_s * 1.10


def test_smart_goes_on_past_failed_configurations():
    # The most promising configuration fails (inf): smart measures the next
    # ones instead of stopping, and picks a real one.
    measure, alone = model([0.1, 0.1], [8.0, 2.0])
    grid_space = space.configurations(16, 2)
    first = min(grid_space, key=lambda c: measure(c))
    r = space.smart(grid_space, 16, lambda c: float("inf") if c == first else measure(c), alone)
    assert r.best != first and r.best_s < float("inf")
    assert r.best_s <= space.grid(grid_space, measure).best_s * 1.05


def crossed():
    """Two tasks with two environment choices each and known scaling: the
    first is slow with its second choice (one thread); the second is
    faster with its second choice (a serial part it avoids)."""
    times = {
        (0, 0): (0.1, 8.0),
        (0, 1): (8.1, 0.0),
        (1, 0): (0.5, 6.0),
        (1, 1): (0.2, 6.0),
    }

    def alone(task: int, count: int, env: int) -> float:
        s, p = times[(task, env)]
        return s + p / count

    def measure(cfg: space.Config) -> float:
        return max(alone(t, c, e) for t, (c, e) in enumerate(zip(cfg.counts, cfg.env, strict=True)))

    return measure, alone


def test_environment_choices_are_crossed_with_the_partitions():
    measure, alone = crossed()
    splits = space.configurations(16, 2)
    grid_space = space.configurations(16, 2, choices=[2, 2])
    assert len(grid_space) == 4 * len(splits) == len(set(grid_space))
    assert {c.env for c in grid_space} == {(0, 0), (0, 1), (1, 0), (1, 1)}
    g = space.grid(grid_space, measure)
    assert g.runs == len(grid_space) and g.best.env == (0, 1)
    # smart profiles each choice of each task alone and fits each
    r = space.smart(grid_space, 16, measure, alone)
    assert sorted(r.profiles) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert all(len(p) == len(space.profile_counts(16)) for p in r.profiles.values())
    assert r.runs <= len(grid_space) / 3, (r.runs, len(grid_space))
    assert r.best.env == (0, 1) and r.best_s <= g.best_s * 1.05, (r.best, r.best_s, g.best_s)


def test_a_choice_that_fails_alone_is_predicted_to_fail():
    measure, alone = crossed()
    grid_space = space.configurations(12, 2, choices=[2, 2])

    def alone_or_fail(task, count, env):
        return float("inf") if (task, env) == (1, 1) else alone(task, count, env)

    def measure_or_fail(cfg):
        return float("inf") if cfg.env[1] == 1 else measure(cfg)

    r = space.smart(grid_space, 12, measure_or_fail, alone_or_fail)
    assert r.best.env == (0, 0) and r.best_s < float("inf")
    assert all(c.env[1] == 0 for c in r.measured), "configurations of the failed choice not run"


def test_the_examples_in_the_search_modules_docstrings_hold():
    import doctest

    r = doctest.testmod(space)
    assert r.attempted >= 10 and r.failed == 0


def test_fill_and_env_choices():
    assert space.fill("{cpus}/{cpus*2}/{cpus/2}/{cpulist}", [4, 5, 6, 7]) == "4/8/2/4-7"
    assert space.fill("{cpus/8}", [0]) == "1", "at least one"
    with pytest.raises(ValueError, match="at least 1"):
        space.fill("{cpus/0}", [0])
    assert space.env_choices({"A": ["1", "2"], "B": ["x", "y"]})[1] == {"A": "1", "B": "y"}


def test_reachable_without_contexts_and_the_heatmaps_cells():
    # Two tasks using OpenBLAS (one thread count per process): only equal
    # counts; with OpenMP beside it (a count per thread), any.
    ob, omp = {"openblas"}, {"openmp"}
    assert space.reachable((2, 2), [ob, ob | omp], {"openblas"})
    assert not space.reachable((1, 2), [ob, ob | omp], {"openblas"})
    assert space.reachable((1, 2), [omp, ob], {"openblas"})
    C = space.Config
    found = space.SearchResult(
        best=C((2, 1), (0, 0)),
        best_s=1.0,
        measured={
            C((1, 1), (0, 0)): 2.0,
            C((1, 1), (1, 0)): 1.5,  # the better choice is what the cell shows
            C((2, 1), (0, 0)): 1.0,
            C((1, 2), (0, 0)): float("inf"),  # failed: blank
        },
        runs=4,
    )
    pools = {"a": {("openblas", "process")}, "b": {("openblas", "process"), ("openmp", "thread")}}
    grid_space = space.configurations(3, 2, choices=[2, 1])  # (1,1) (1,2) (2,1)
    wc = vlcs._tune.tuning._without_contexts(["a", "b"], pools, grid_space, found)
    assert wc["one_count_per_process"] == ["openblas"] and wc["splits"] == 3
    assert wc["reachable"] == [[1, 1]] and wc["best_s"] == 1.5
    values, marks, best = vlcs._tune.heatmap_cells(found, 3, wc["reachable"])
    assert values[0][0] == 1.5 and values[0][1] == 1.0 and values[1][0] != values[1][0]  # nan
    assert marks == [(1, 1)] and best == (2, 1)
    # marks cover the space, measured or not
    big = space.configurations(8, 2)
    wc = vlcs._tune.tuning._without_contexts(["a", "b"], pools, big, found)
    assert wc["reachable"] == [[k, k] for k in range(1, 5)] and wc["best_s"] == 1.5
    other = {"a": {("openmp", "thread")}, "b": {("openblas", "process")}}
    wc = vlcs._tune.tuning._without_contexts(["a", "b"], other, grid_space, found)
    assert wc["one_count_per_process"] == [] and len(wc["reachable"]) == 3


def test_space_steps_overlap_and_cpu_lists():
    assert [c.counts for c in space.configurations(8, 2, step=4)] == [
        (1, 1),
        (1, 4),
        (4, 1),
        (4, 4),
    ]
    assert space.Config((6, 6), (0, 0)) in space.configurations(8, 2, overlap=True)
    assert space.cpu_lists([0, 1, 2, 3, 8, 9], (2, 4)) == [[0, 1], [2, 3, 8, 9]]
    assert space.format_cpus([3, 0, 1, 2, 8, 10, 11]) == "0-3,8,10-11"


def test_places_give_each_task_whole_domains_of_a_described_node():
    # The two-socket EPYC export (tests/topologies): 16 L3s of 8 cores, a
    # core's threads c and c + 128.  Splits by L3: 120 cells instead of
    # 32,640, each task's CPUs whole L3s, siblings together.
    xml = Path(__file__).resolve().parent.parent / "topologies" / "epyc-2s-8l3.xml"
    r = run_code(
        """
        import json
        from vlcs._tune import space, tuning
        doms = tuning._domains("l3", list(range(256)))
        order = [c for d in doms for c in d]
        cfgs = space.aligned_configurations([len(d) for d in doms], 2)
        splits = [space.cpu_lists(order, c.counts) for c in cfgs]
        print(json.dumps({"domains": doms, "cells": len(cfgs),
                          "every": len(space.configurations(256, 2)), "splits": splits}))
        """,
        VLCS_TOPOLOGY=str(xml),
    )
    l3 = [list(range(8 * k, 8 * k + 8)) + list(range(8 * k + 128, 8 * k + 136)) for k in range(16)]
    assert r["domains"] == l3
    assert r["cells"] == 120 and r["every"] == 32640
    for split in r["splits"]:
        for task in split:
            held = [d for d in l3 if set(d) <= set(task)]
            assert sorted(c for d in held for c in d) == sorted(task), task  # whole L3s only
        assert not set(split[0]) & set(split[1])


def test_the_heatmap_counts_domains_when_tuned_by_places():
    C = space.Config
    sizes = [4, 4, 4]  # three domains of 4 CPUs
    found = space.SearchResult(
        best=C((8, 4), (0,)),
        best_s=1.0,
        measured={C((4, 4), (0,)): 2.0, C((8, 4), (0,)): 1.0, C((4, 8), (0,)): 3.0},
        runs=3,
    )
    values, marks, best = vlcs._tune.heatmap_cells(found, 3, [[4, 4]], sizes)
    assert values[0][0] == 2.0 and values[0][1] == 1.0 and values[1][0] == 3.0
    assert marks == [(1, 1)] and best == (2, 1)
    assert vlcs._tune.report.domain_ticks("numa", 1) == ("numa:0", "1 numa")


@needs_two
def test_tuning_by_cores_on_this_machine(tmp_path):
    plan = vlcs.tune(
        [vlcs.Task("a", command=["true"]), vlcs.Task("b", command=["true"])],
        cpus="0-1",
        method="grid",
        places="core",
        out=tmp_path,
        progress=False,
    )
    assert plan["places"] == {"type": "core", "domains": ["0", "1"]}
    assert [m["cpus"] for m in plan["measured"]] == [["0", "1"]]
    assert "whole core domains (0, 1)" in (tmp_path / "report.md").read_text()
    if importlib.util.find_spec("matplotlib"):
        assert (tmp_path / "heatmap.png").stat().st_size > 0
    for bad, says in [
        ({"places": "die"}, "places must be one of"),
        ({"places": "core", "step": 2}, "neither step nor overlap"),
        ({"places": "package"}, "2 tasks need at least 2 package domains"),
    ]:
        with pytest.raises(vlcs.TuneError, match=says):
            vlcs.tune(
                [vlcs.Task("a", command=["true"]), vlcs.Task("b", command=["true"])],
                cpus="0-1",
                progress=False,
                **bad,
            )


# ---- real tunings -------------------------------------------------------------


@pytest.fixture(scope="module")
def kernels(tmp_path_factory) -> dict[str, str]:
    """An OpenMP stencil library and a C++ program, compiled for the tests."""
    d = tmp_path_factory.mktemp("kernels")
    stencil = d / "libstencil.so"
    subprocess.run(
        [
            "cc",
            "-O2",
            "-fopenmp",
            "-shared",
            "-fPIC",
            str(DATA / "tune_stencil.c"),
            "-o",
            str(stencil),
        ],
        check=True,
    )
    program = d / "spin"
    subprocess.run(
        ["c++", "-O2", "-fopenmp", str(DATA / "tune_spin.cpp"), "-o", str(program)], check=True
    )
    return {"stencil": str(stencil), "program": str(program)}


def _tasks(kernels: dict[str, str]) -> list[vlcs.Task]:
    return [
        vlcs.Task("gemm", call="tune_tasks:gemm_series", args={"n": 400, "reps": 6}),
        vlcs.Task(
            "stencil",
            call="tune_tasks:stencil",
            args={"library": kernels["stencil"], "n": 80, "iters": 30},
        ),
    ]


@pytest.fixture
def data_on_path(monkeypatch):
    monkeypatch.syspath_prepend(str(DATA))


@needs_two
def test_grid_tuning_of_real_tasks_writes_a_plan_that_from_plan_reproduces(
    kernels, data_on_path, tmp_path, capsys
):
    plan = vlcs.tune(_tasks(kernels), cpus="0-1", method="grid", out=tmp_path)
    # 2 CPUs, 2 tasks, disjoint: one partition, plus the two baselines
    assert plan["runs"] == plan["grid_runs"] == 3
    assert [t["cpus"] for t in plan["tasks"]] == ["0", "1"]
    assert plan["makespan_s"] > 0 and plan["baselines"]["sequential_s"] > 0
    assert json.loads((tmp_path / "plan.json").read_text()) == json.loads(json.dumps(plan))
    report = (tmp_path / "report.md").read_text()
    assert "| gemm | 0 |" in report
    if importlib.util.find_spec("matplotlib") is not None:
        assert "heatmap.png" in report
        assert (tmp_path / "heatmap.png").read_bytes()[:4] == b"\x89PNG"
    err = capsys.readouterr().err  # progress: a bar, runs done, the best so far, time
    if importlib.util.find_spec("matplotlib") is None:  # said once, in the report and here
        assert "No heatmap: matplotlib is not installed (pip install 'vlcs[plots]')" in report
        assert not (tmp_path / "heatmap.png").exists()
        assert "vlcs tune: heatmap.png skipped: matplotlib is not installed" in err
    assert "vlcs tune: [######.............. 1/3] shared: every task on 0-1:" in err
    assert "vlcs tune: [#################### 3/3] gemm=0 | stencil=1:" in err
    assert "best " in err and " s elapsed" in err
    ctx = vlcs.VLC.from_plan(tmp_path / "plan.json", "stencil")
    assert ctx.cpus == [1]
    # resuming: every trial comes from the cache, none runs again
    again = vlcs.tune(_tasks(kernels), cpus="0-1", method="grid", out=tmp_path, progress=False)
    assert again["makespan_s"] == plan["makespan_s"]
    assert len((tmp_path / "trials.jsonl").read_text().splitlines()) == 3


@needs_two
def test_smart_profiles_each_task_alone_and_predicts(kernels, data_on_path, monkeypatch):
    # On 2 CPUs the grid is one partition and smart measures it whole; made
    # to search anyway, it runs each task alone on 1 and 2 CPUs, fits, and
    # says how far its prediction was from what it measured.
    import vlcs._tune.tuning as t

    monkeypatch.setattr(t, "_grid_is_cheaper", lambda *a: False)
    plan = vlcs.tune(_tasks(kernels), cpus="0-1", method="smart", progress=False)
    assert plan["searched"] == "smart"
    assert plan["runs"] == 2 + 2 * 2 + 1  # baselines, profiles, the one partition
    assert plan["prediction_error"] is not None and plan["prediction_error"] >= 0
    assert plan["measured"][0]["predicted_s"] > 0
    assert [t["cpus"] for t in plan["tasks"]] == ["0", "1"]


@needs_two
def test_environment_choices_reach_the_libraries_and_openblas_limits_reach(data_on_path, tmp_path):
    # Two numpy GEMM series, CPUs shared allowed, the first trying
    # OPENBLAS_NUM_THREADS = its CPU count or 1: every distinct filled-in
    # configuration is measured once, each trial's OpenBLAS ran with the
    # count chosen, and both tasks' OpenBLAS (one count per process) leaves
    # only equal counts reachable without contexts.
    tasks = [
        vlcs.Task(
            "gemm",
            call="tune_tasks:gemm_series",
            args={"n": 300, "reps": 3},
            choices={"OPENBLAS_NUM_THREADS": ["{cpus}", "1"]},
        ),
        vlcs.Task("gemm2", call="tune_tasks:gemm_series", args={"n": 200, "reps": 3}),
    ]
    plan = vlcs.tune(tasks, cpus="0-1", method="grid", overlap=True, out=tmp_path, progress=False)
    # counts (1,1) (1,2) (2,1) (2,2); on one CPU "{cpus}" and "1" are the same
    assert plan["grid_runs"] == 6 + 2 and plan["choices"] == {"gemm": 2}
    assert not plan["failures"]
    seen = {}
    for line in (tmp_path / "trials.jsonl").read_text().splitlines():
        rec = json.loads(line)
        seen[rec["config"]] = {p[0]: p[2] for p in rec["pools"]["gemm"]}
    assert seen["gemm=0-1 OPENBLAS_NUM_THREADS=1 | gemm2=0-1"] == {"openblas": 1}
    assert seen["gemm=0-1 OPENBLAS_NUM_THREADS=2 | gemm2=0-1"] == {"openblas": 2}
    assert len(seen) == plan["grid_runs"]
    wc = plan["without_contexts"]
    assert wc["pools"] == {"gemm": ["openblas"], "gemm2": ["openblas"]}
    assert wc["one_count_per_process"] == ["openblas"]
    assert wc["reachable"] == [[1, 1], [2, 2]]
    gemm = plan["tasks"][0]
    assert gemm["env"]["OPENBLAS_NUM_THREADS"] in ("1", "2")
    measured = {
        (tuple(m["cpus"]), m["env"][0].get("OPENBLAS_NUM_THREADS")) for m in plan["measured"]
    }
    assert len(measured) == 6
    report = (tmp_path / "report.md").read_text()
    assert "OPENBLAS_NUM_THREADS=1" in report and "only equal counts are reachable" in report
    ctx = vlcs.VLC.from_plan(tmp_path / "plan.json", "gemm")
    assert ctx.getenv("OPENBLAS_NUM_THREADS") == gemm["env"]["OPENBLAS_NUM_THREADS"]


@needs_two
def test_tune_takes_plain_functions_and_argv_lists(kernels, data_on_path):
    import tune_tasks

    plan = vlcs.tune(
        [tune_tasks.gemm_series, [kernels["program"], "2000000", "{cpulist}"]],
        cpus="0-1",
        method="grid",
        progress=False,
    )
    assert [t["name"] for t in plan["tasks"]] == ["gemm_series", "spin"]
    assert not plan["failures"] and plan["runs"] == 3
    with pytest.raises(vlcs.TuneError, match="a task is a vlcs.Task, a function"):
        vlcs.tune([3, "tune_tasks:gemm_series"])
    with pytest.raises(vlcs.TuneError, match="task names must differ"):
        vlcs.tune(["tune_tasks:gemm_series", tune_tasks.gemm_series])


@needs_two
def test_cli_tunes_a_function_and_a_program_with_placeholders(kernels, tmp_path):
    gemm = {
        "name": "gemm",
        "call": "tune_tasks:gemm_series",
        "args": {"n": 300, "reps": 4},
        "choices": {"OPENBLAS_NUM_THREADS": ["{cpus}", "{cpus*2}"]},
    }
    spin = {
        "name": "spin",
        "command": [kernels["program"], "20000000", "{cpulist}"],
        "env": {"OMP_NUM_THREADS": "{cpus}"},
    }
    program = kernels["program"]
    if sys.version_info >= (3, 11):  # tomllib
        tasks = tmp_path / "tasks.toml"
        tasks.write_text(
            textwrap.dedent(
                f"""
                [[task]]
                name = "gemm"
                call = "tune_tasks:gemm_series"
                args = {{ n = 300, reps = 4 }}
                [task.choices]
                OPENBLAS_NUM_THREADS = ["{{cpus}}", "{{cpus*2}}"]

                [[task]]
                name = "spin"
                command = ["{program}", "20000000", "{{cpulist}}"]
                env = {{ OMP_NUM_THREADS = "{{cpus}}" }}
                """
            )
        )
    else:
        tasks = tmp_path / "tasks.json"
        tasks.write_text(json.dumps({"task": [gemm, spin]}))
    env = {**os.environ, "PYTHONPATH": str(DATA)}
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "vlcs",
            "tune",
            str(tasks),
            "--cpus",
            "0-1",
            "--out",
            str(tmp_path / "o"),
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    plan = json.loads(p.stdout)
    spin = next(t for t in plan["tasks"] if t["name"] == "spin")
    assert spin["env"] == {"OMP_NUM_THREADS": "1"}, "{cpus} filled with the chosen count"
    gemm = next(t for t in plan["tasks"] if t["name"] == "gemm")
    assert gemm["env"]["OPENBLAS_NUM_THREADS"] in ("1", "2")  # its CPU count, or twice it
    assert plan["grid_runs"] == 2 + 2 and plan["choices"] == {"gemm": 2}
    assert not plan["failures"]


@needs_two
def test_bad_input_is_refused_and_a_failing_trial_is_reported(kernels, data_on_path, tmp_path):
    with pytest.raises(vlcs.TuneError, match="module 'no_such_module' not found"):
        vlcs.tune(
            [vlcs.Task("a", call="no_such_module:f"), vlcs.Task("b", call="tune_tasks:gemm_series")]
        )
    with pytest.raises(vlcs.TuneError, match="program 'no-such-program' not found"):
        vlcs.tune([vlcs.Task("a", command=["no-such-program"]), vlcs.Task("b", command=["true"])])
    with pytest.raises(vlcs.VlcsError, match="not available|may use"):
        vlcs.tune(
            [vlcs.Task("a", command=["true"]), vlcs.Task("b", command=["true"])], cpus="0-1023"
        )
    true = vlcs.Task("b", command=["true"])
    for choices, says in (
        ({"OMP_NUM_THREADS": []}, "choices of OMP_NUM_THREADS must be a non-empty list"),
        ({"OMP_NUM_THREADS": "4"}, "must be a non-empty list of values; got '4'"),
        ({"X": ["1"]}, "give X in env or in choices, not both"),
        ({"OMP_NUM_THREADS": ["{cpus/0}"]}, r"\{cpus/0\}: K must be at least 1"),
    ):
        bad = vlcs.Task("a", command=["true"], env={"X": "1"}, choices=choices)
        with pytest.raises(vlcs.TuneError, match=says):
            vlcs.tune([bad, true])
    with pytest.raises(vlcs.TuneError, match="cannot be imported by a fresh process"):
        vlcs.tune([vlcs.Task("a", call=lambda: 0), vlcs.Task("b", command=["true"])])
    # a task that fails in every trial: reported, and the tuning says why
    with pytest.raises(vlcs.TuneError, match="every trial failed.*ZeroDivisionError"):
        vlcs.tune(
            [vlcs.Task("a", call="tune_tasks:fails"), vlcs.Task("b", command=["true"])],
            cpus="0-1",
            progress=False,
        )
    # one that hangs: each trial's timeout, its processes killed
    with pytest.raises(vlcs.TuneError, match="timed out after 1 s"):
        vlcs.tune(
            [vlcs.Task("a", command=["sleep", "61.5"]), vlcs.Task("b", command=["true"])],
            cpus="0-1",
            method="grid",
            timeout=1,
            progress=False,
        )
    left = subprocess.run(["pgrep", "-f", "sleep 61.5"], capture_output=True, text=True)
    assert left.stdout == "", "a timed-out trial's programs are killed"


@needs_two
def test_repeats_run_interleaved_rounds_until_the_best_is_stable(tmp_path):
    plan = vlcs.tune(
        [vlcs.Task("a", command=["true"]), vlcs.Task("b", command=["true"])],
        cpus="0-1",
        method="grid",
        repeats=4,
        out=tmp_path,
        progress=False,
    )
    # one split and two baselines per round; a second round at least, the
    # fourth at most
    assert 2 <= plan["rounds"] <= 4
    assert plan["trial_runs"] == 3 * plan["rounds"]
    lines = (tmp_path / "trials.jsonl").read_text().splitlines()
    assert len(lines) == plan["trial_runs"]
    lo, hi = plan["spread_s"]
    assert lo <= plan["makespan_s"] <= hi


def test_from_plan_refuses_another_machines_cpus_and_unknown_tasks(tmp_path):
    plan = {
        "version": 1,
        "machine": {"hostname": "bignode"},
        "tasks": [{"name": "a", "cpus": "0-1023", "env": {}}],
    }
    with pytest.raises(ValueError, match="cannot use CPU .* made on bignode"):
        vlcs.VLC.from_plan(plan, "a")
    with pytest.raises(ValueError, match="no task 'b'"):
        vlcs.VLC.from_plan(plan, "b")
    with pytest.raises(ValueError, match="not a plan"):
        vlcs.VLC.from_plan({"tasks": 3}, "a")


def test_base_untouched_after_a_tuning_in_this_process(kernels, data_on_path):
    # The trials run in other processes: this interpreter imported nothing
    # of the tasks (a numpy task leaves no numpy here) and its affinity and
    # environment are its own.
    r = run_code(
        f"""
        import json, os, sys, vlcs
        sys.path.insert(0, {str(DATA)!r})
        before = sorted(os.sched_getaffinity(0))
        vlcs.tune([vlcs.Task("a", call="tune_tasks:gemm_series", args={{"n": 200, "reps": 2}}),
                   vlcs.Task("b", command=["true"])], method="grid", progress=False)
        after = sorted(os.sched_getaffinity(0))
        print(json.dumps({{"numpy": "numpy" in sys.modules, "affinity": after == before,
                           "env": [k for k in os.environ if k.startswith("OMP_")]}}))
        """
    )
    assert r == {"numpy": False, "affinity": True, "env": []}


def test_cli_errors_are_one_sentence_and_exit_2(tmp_path):
    bad = tmp_path / "tasks.json"
    bad.write_text('{"task": [{"name": "a", "call": "m:f", "colour": "red"}]}')
    for args, says in (
        ([str(tmp_path / "missing.toml")], "cannot read"),
        ([str(bad)], "unknown keys ['colour']"),
    ):
        p = subprocess.run(
            [sys.executable, "-m", "vlcs", "tune", *args, "--out", str(tmp_path / "o")],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert p.returncode == 2 and says in p.stderr, (p.returncode, p.stderr)
        assert p.stderr.startswith("vlcs tune: ") and "Traceback" not in p.stderr


def test_check_identical_names_the_machines_that_differ():
    same = {"cpu_model": "EPYC", "cpus_usable": [0, 1], "hostname": "a"}
    vlcs._tune.check_identical({"tcp://a:1": same, "tcp://b:1": {**same, "hostname": "b"}})
    other = {"cpu_model": "Xeon", "cpus_usable": [0, 1, 2, 3], "hostname": "c"}
    with pytest.raises(vlcs.TuneError, match=r"machines differ .*c \(tcp://c:1\): Xeon, CPUs 0-3"):
        vlcs._tune.check_identical({"tcp://a:1": same, "tcp://c:1": other})


@needs_two
@pytest.mark.skipif(
    importlib.util.find_spec("distributed") is None, reason="pip install distributed"
)
def test_dask_runs_the_trials_on_the_clusters_workers(kernels, data_on_path, tmp_path):
    # distributed's nanny writes its workers' variables (OMP_NUM_THREADS=1,
    # OPENBLAS_NUM_THREADS=1, ...) into this process's environment, which
    # later tests' contexts would inherit
    saved = dict(os.environ)
    try:
        from distributed import Client, LocalCluster

        with LocalCluster(
            n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster:
            with Client(cluster) as client:
                worker_pids = set(client.run(os.getpid).values())
                plan = vlcs.tune(
                    _tasks(kernels),
                    method="grid",
                    dask=cluster.scheduler_address,
                    out=tmp_path,
                    progress=False,
                )
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert plan["dask"]["hosts"] and [t["cpus"] for t in plan["tasks"]] == ["0", "1"]
    assert not plan["failures"]
    # every trial was started by the worker process, none by this one
    started_by = {int(r.rsplit(":", 1)[1]) for r in plan["ran_on"]}
    assert started_by == worker_pids and os.getpid() not in started_by

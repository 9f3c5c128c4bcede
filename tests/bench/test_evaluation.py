"""`vlcs bench all`: the evaluation's summaries and its report as users read them."""

from __future__ import annotations

import json

import pytest
from conftest import vlcs_cmd
from vlcs_bench._build import KERNELS
from vlcs_bench.evaluation._harness import Strategy, measure, summarise
from vlcs_bench.evaluation.adoption import (
    file_lines_changed,
    lines_changed,
    plain_driver,
    vlcs_driver,
)


def test_summary_speedups_and_p_score() -> None:
    g = summarise(
        "two tasks",
        {"sequential": [2.0, 2.2, 1.9], "threads": [2.5, 2.4, 2.6], "contexts": [1.1, 1.0, 1.2]},
        ideal_speedup=2.0,
    )
    rows = {r["strategy"]: r for r in g["rows"]}
    assert g["baseline"] == "sequential"
    assert rows["contexts"]["median_s"] == 1.1
    assert rows["contexts"]["speedup"] == pytest.approx(2.0 / 1.1)
    assert rows["contexts"]["p"] == 1.0  # the best strategy
    assert rows["threads"]["speedup"] < 1  # a slowdown stays a slowdown
    assert rows["threads"]["p"] == pytest.approx(1.1 / 2.5)
    assert (rows["threads"]["min_s"], rows["threads"]["max_s"]) == (2.4, 2.6)


def test_measure_flags_a_strategy_whose_result_differs() -> None:
    g = measure(
        "checksums",
        [Strategy("right", lambda: [1.0, 2.0]), Strategy("wrong", lambda: [1.0, 2.5])],
        repeats=2,
        warmup=False,
    )
    same = {r["strategy"]: r["same_result"] for r in g["rows"]}
    assert same == {"right": True, "wrong": False}
    assert g["repeats"] == 2


def test_adoption_counts_the_lines_a_user_changes() -> None:
    assert lines_changed(plain_driver, plain_driver) == 0
    assert 3 <= lines_changed(plain_driver, vlcs_driver) <= 8
    # C++: the declaration and the call go, the context, loader, lookup and enter come
    assert 5 <= file_lines_changed(KERNELS / "adopt_plain.cpp", KERNELS / "adopt_vlcs.cpp") <= 10


def test_bench_all_quick_runs_every_case_and_writes_json_markdown_and_charts(tmp_path) -> None:
    # The whole quick evaluation (about 5 minutes on 2 cores): every case
    # runs to the end, and the report's schema holds.
    from vlcs_bench.evaluation import CASES

    proc = vlcs_cmd("bench", "all", "--quick", "--out", str(tmp_path), timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["mode"] == "quick"
    assert doc["machine"]["cpus"] >= 1 and doc["machine"]["libraries"]["numpy"]
    assert [c["case"] for c in doc["cases"]] == sorted(CASES)
    for case in doc["cases"]:
        assert "error" not in case, case
        for g in case.get("groups", []):
            assert g["rows"], (case["case"], g)
            if g["kind"] != "strategies":
                continue
            for r in g["rows"]:
                assert 0 < r["min_s"] <= r["median_s"] <= r["max_s"], (case["case"], r)
                # The bound: every strategy computes what the baseline computes.
                assert r["same_result"] is True, (case["case"], g["title"], r)
    report = (tmp_path / "report.md").read_text()
    assert "## Summary" in report and "Nested parallelism" in report
    charts = [p for p in tmp_path.glob("case5-*.png") if not p.name.endswith("-timeline.png")]
    assert len(charts) == 2 and all(p.read_bytes()[:4] == b"\x89PNG" for p in charts)
    # the elastic cases (contention, nested, four tasks) attach a traced run
    # each: its trace beside the report, drawn, every context's slices closed
    for n in (4, 5, 9):
        case = next(c for c in doc["cases"] if c["case"] == n)
        timelines = [g["timeline"] for g in case["groups"] if "timeline" in g]
        assert timelines, n
        for t in timelines:
            assert "elastic" in t["strategy"], t
            events = json.loads((tmp_path / t["trace"]).read_text())["traceEvents"]
            begins = sum(e["ph"] == "B" and e["name"].startswith("inside ") for e in events)
            ends = sum(e["ph"] == "E" and e["name"].startswith("inside ") for e in events)
            assert begins == ends > 0, (n, t)
            png = tmp_path / t["trace"].replace(".trace.json", "-timeline.png")
            assert png.read_bytes()[:4] == b"\x89PNG" and f"]({png.name})" in report
    assert "vlcs bench: " in proc.stderr  # progress is shown


def test_bench_all_rejects_an_unknown_case(tmp_path) -> None:
    from vlcs_bench.evaluation import CASES

    proc = vlcs_cmd("bench", "all", "--cases", "3,x", "--out", str(tmp_path))
    assert proc.returncode == 2
    assert f"--cases takes numbers from 1 to {max(CASES)}" in proc.stderr
    assert not (tmp_path / "report.md").exists()


def test_versus_mpi_split_matches_the_whole_box_bit_for_bit() -> None:
    # Case 8's three ways to run the solver: the halves exchanged through MPI
    # and through two contexts must give the whole box's field exactly, and
    # each context's own libgomp must size itself to its half of the CPUs.
    from vlcs import program_path
    from vlcs_bench.evaluation._harness import run_json
    from vlcs_bench.evaluation.versus_mpi import _programs, mpi_env

    prog = _programs()
    box = [prog["solver"], "40", "36", "33", "25"]
    run_ctx = [str(program_path("vlcs-run")), "--", prog["contexts"], *box]
    whole = run_json([*run_ctx, "whole"])
    split = run_json([*run_ctx, "0", "1"])
    mpi = run_json(
        ["mpirun", "-np", "2", "-x", "OMP_NUM_THREADS", prog["mpi"], *box], env=mpi_env(1)
    )
    assert whole["threads"] == [2] and split["threads"] == [1, 1] and mpi["threads"] == [1, 1]
    assert whole["checksum"] > 0
    assert split["checksum"] == whole["checksum"] == mpi["checksum"]


def test_kernel_cache_rebuilds_when_a_cpp_source_or_header_changes(tmp_path, monkeypatch) -> None:
    # A stale cached binary would time old code: every C++ source and header
    # must count for the cache key, not only .c files.
    import subprocess

    from vlcs_bench import _build

    kernels = tmp_path / "kernels"
    kernels.mkdir()
    monkeypatch.setattr(_build, "KERNELS", kernels)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (kernels / "answer.hpp").write_text("constexpr int answer = 1;\n")
    (kernels / "main.cpp").write_text('#include "answer.hpp"\nint main() { return answer; }\n')

    def built_rc() -> int:
        prog = _build.build("main", ["main.cpp"], ["-O0"], compiler="c++")
        return subprocess.run([str(prog)], check=False).returncode

    assert built_rc() == 1
    (kernels / "main.cpp").write_text('#include "answer.hpp"\nint main() { return answer + 1; }\n')
    assert built_rc() == 2
    (kernels / "answer.hpp").write_text("constexpr int answer = 5;\n")
    assert built_rc() == 6


def _one_group_doc() -> dict:
    g = summarise(
        "two tasks",
        {"sequential": [2.0, 2.1], "vlcs contexts": [1.1, 1.0]},
        ideal_speedup=2.0,
    )
    machine = {
        "cpu_model": "cpu",
        "cpus": 2,
        "memory_gib": 24,
        "kernel": "6",
        "glibc": "glibc 2.36",
        "python": "3.11",
        "vlcs": "0",
        "libraries": {},
    }
    case = {"case": 1, "name": "one", "groups": [g], "elapsed_s": 1.0}
    return {"mode": "quick", "started": "now", "machine": machine, "cases": [case]}


def test_report_draws_a_chart_per_group_with_matplotlib(tmp_path) -> None:
    pytest.importorskip("matplotlib", reason="./run installs matplotlib in the main .venv")
    from vlcs_bench.evaluation import report

    md = report.write(_one_group_doc(), tmp_path).read_text()
    pngs = list(tmp_path.glob("*.png"))
    assert len(pngs) == 1 and f"]({pngs[0].name})" in md, md
    assert pngs[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_without_matplotlib_writes_its_data_and_says_what_it_skipped(
    tmp_path, monkeypatch, capsys
) -> None:
    from vlcs_bench.evaluation import report

    monkeypatch.setattr(report, "pyplot", lambda: None)
    md = report.write(_one_group_doc(), tmp_path).read_text()
    assert not list(tmp_path.glob("*.png"))
    assert json.loads((tmp_path / "results.json").read_text())["cases"][0]["case"] == 1
    assert "| 1 | two tasks |" in md and "pip install 'vlcs[plots]'" in md, md
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "charts skipped" in out and "vlcs[plots]" in out, out

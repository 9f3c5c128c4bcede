"""`vlcs bench core|strict|shim|python|imports|recycle|reuse|scale` and `vlcs
demo`: each prints what its schema promises, with one bound a user would
notice if broken."""

from __future__ import annotations

import json
import os
import sys

from conftest import vlcs_cmd


def _numbers(d: dict, *keys: str) -> None:
    for k in keys:
        assert isinstance(d[k], (int, float)) and d[k] > 0, (k, d)


def test_bench_core_json_schema_and_context_creation_bound():
    r = vlcs_cmd("bench", "core", "--json")
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    for name in ("sched_getaffinity", "open_read_proc_cpuinfo", "getppid", "lseek_read_file"):
        _numbers(result["calls"][name], "inside_ns", "outside_ns", "ratio")
    for name in (
        "create_destroy",
        "enter_leave",
        "enter_leave_with_affinity_change",
        "enter_leave_tracing",
    ):
        _numbers(result["contexts"][name], "ns")
    for lib in ("libopenblas.so.0", "libgomp.so.1"):
        _numbers(result["load"][lib], "once_ms", "four_contexts_ms")
    assert result["machine"]["cpus"] == os.cpu_count()
    # The bound: a context is cheap to make (the paper's prototype: 40 us).
    assert result["contexts"]["create_destroy"]["ns"] < 1_000_000


def test_unknown_bench_suite_is_refused():
    r = vlcs_cmd("bench", "nope")
    assert r.returncode == 2
    assert "unknown suite 'nope'" in r.stderr


def test_bench_strict_json_schema_and_trap_bound():
    r = vlcs_cmd("bench", "strict", "--json")
    assert r.returncode == 0, r.stderr
    calls = json.loads(r.stdout)["calls"]
    for name in ("getppid_loop", "read_loop", "base_open_close_file"):
        _numbers(calls[name], "plain_ns", "strict_ns", "platform_floor_ns")
    # The bound: a trapped call costs a signal round trip, so it is slower.
    trapped = calls["trapped_sched_getaffinity"]
    assert trapped["strict_ns"] > trapped["plain_ns"]


def test_bench_shim_json_schema_and_call_bound():
    r = vlcs_cmd("bench", "shim", "--json")
    assert r.returncode == 0, r.stderr
    calls = json.loads(r.stdout)["calls"]
    _numbers(calls["shim_call"], "direct_ns", "shim_ns")
    _numbers(calls["service_call"], "base_ns", "context_ns")
    _numbers(
        calls["guarded_call"],
        "enter_call_leave_ns",
        "ctx_call_ns",
        "base_before_handlers_ns",
        "base_after_handlers_ns",
    )
    # The bound: a call through a shim stays a call (well under a microsecond).
    assert calls["shim_call"]["shim_ns"] < 1000


def test_bench_imports_json_schema_on_every_python_and_grid_search():
    r = vlcs_cmd("bench", "imports", "--repeats", "1", "--quick", "--json")
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert result["quick"] is True
    assert result["goal"] == {"base": 1.2, "context": 2.0}
    assert result["pythons"], "at least this interpreter"
    for entry in result["pythons"]:
        assert "error" not in entry, entry
        for op in (
            "get",
            "contains",
            "getitem",
            "import_in_function",
            "from_import_in_function",
            "get_package",
            "contains_base_only",
        ):
            _numbers(entry["ops"][op], "plain_ns", "base_ns", "context_ns")
            _numbers(entry["ops"][op], "base_ratio", "context_ratio")
    _numbers(result["grid_search"], "plain_s", "context_s", "ratio")


def test_bench_recycle_json_schema_and_what_each_way_shows():
    r = vlcs_cmd("bench", "recycle", "--requests", "60", "--json")
    assert r.returncode == 0, r.stderr
    ways = json.loads(r.stdout)["ways"]
    for way in ("plain", "pool", "close-C"):
        _numbers(ways[way], "ms_per_request", "ratio_to_plain")
        assert ways[way]["requests_done"] == 60 and ways[way]["failed"] is None, ways[way]
    # A numpy context keeps its namespace when closed, and past glibc's
    # namespaces its copies: every request is served, each keeping its
    # numpy's memory, which the pool does not
    numpy_way = ways["close-numpy"]
    assert numpy_way["requests_done"] == 60 and numpy_way["failed"] is None, numpy_way
    assert numpy_way["rss_kib_per_request"] > 10 * max(ways["pool"]["rss_kib_per_request"], 100)


def test_bench_reuse_json_schema_and_which_way_keeps_its_workers():
    r = vlcs_cmd("bench", "reuse", "--repeats", "1", "--json")
    assert r.returncode == 0, r.stderr
    ways = json.loads(r.stdout)["ways"]
    for python in ("shared", "own"):
        for way in ("reusable", "new pool per job"):
            row = ways[f"{way}, {python} Python"]
            _numbers(row, "first_ms", "second_ms", "first_over_second")
            # the reusable executor's second job runs on the first one's
            # workers (their contexts, their imports); a new pool's does not
            assert row["same_workers"] is (way == "reusable"), (way, python, row)


def test_python_demo_prints_the_table_and_saves_the_chart(tmp_path):
    png = tmp_path / "demo.png"
    p = vlcs_cmd("demo", "python", "--repeats", "1", "--png", str(png), timeout=600)
    assert p.returncode == 0, p.stderr
    rows = [
        line.split()
        for line in p.stdout.splitlines()
        if line.startswith(("sequential", "vlcs contexts"))
    ]
    assert [r[0] for r in rows] == ["sequential", "vlcs"]
    assert "RESULTS DIFFER" not in p.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_gemm_demo_runs_its_four_strategies():
    p = vlcs_cmd("demo", "gemm", "--repeats", "1", timeout=600)
    assert p.returncode == 0, p.stderr
    assert "vlcs contexts" in p.stdout and "sequential" in p.stdout


def test_bench_exec_json_schema_and_every_way_ran():
    r = vlcs_cmd("bench", "exec", "--repeats", "1", "--instances", "2", "--json", timeout=600)
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert result["instances"] == 2
    for way in ("vlcs exec", "processes", "one after another"):
        _numbers(result["ways"][way], "wall_s", "wall_vs_processes", "startup_s_per_instance")
        _numbers(result["ways"][way], "peak_mib")
    assert result["ways"]["processes"]["wall_vs_processes"] == 1.0


def test_bench_own_json_schema_and_every_way_computed_the_same():
    r = vlcs_cmd("bench", "own", "--quick", "--repeats", "1", "--json", timeout=600)
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert set(result["workloads"]) == {"pure Python", "numpy + Python"}
    for ways in result["workloads"].values():
        assert set(ways) == {
            "one after another",
            "threads",
            "contexts, shared Python",
            "contexts, own Python",
            "processes (fork)",
            "processes (spawn)",
        }
        for way in ways.values():
            _numbers(way, "wall_s", "speedup", "start_s")
            assert way["same_result"] is True
    # one batch of the numpy tasks per way, timed by phase: each span runs
    # forward from the batch's start, and every way's numpy ran OpenBLAS
    assert set(result["profile"]) == set(result["workloads"]["numpy + Python"])
    for way, p in result["profile"].items():
        for phase in ("start", "gemms_done", "end"):
            first, last = p[phase]
            assert 0 <= first <= last, (way, phase, p)
        assert p["start"][0] <= p["gemms_done"][0] <= p["end"][0], (way, p)
        assert p["blas_threads"] and all(n >= 1 for n in p["blas_threads"]), (way, p)


def test_bench_scale_json_rows_and_copies_bound():
    r = vlcs_cmd("bench", "scale", "--quick", "--json")
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    rows = result["rows"]
    assert not [row for row in rows if "error" in row], rows
    # every context's copy sized its pool from its own one CPU
    assert {tuple(row["pool_sizes"]) for row in rows} == {(1,)}, rows
    assert {(row["mode"], row["contexts"]) for row in rows} >= {("namespace", 15), ("copies", 32)}
    for row in rows:
        _numbers(row, "ms_per_context")
    # The bound: a loaded copy's memfd gives its bytes back (a copy of
    # OpenBLAS held 3.5 MiB there before its read-only pages were shared)
    for row in rows:
        if row["mode"] == "copies":
            assert row["memfd_kib_per_context"] < 64, row
    arpack = result["arpack"]
    width = len(os.sched_getaffinity(0))
    modes = ["namespace", "copies"] if width <= 15 else ["copies"]
    assert [row["mode"] for row in arpack] == modes, arpack
    for row in arpack:
        assert row["exact"] is True and row["contexts"] == width, row
        _numbers(row, "one_copy_mutex_s", "contexts_s", "load_ms_per_context")
    assert arpack[-1]["copies"] == arpack[-1]["contexts"], arpack


def test_bench_imports_counts_instructions_with_callgrind():
    # the steady figures: each read's instructions in the three states, from
    # callgrind's dumps after each eval (here on this interpreter only)
    from vlcs_bench.module_table import _BASE_GOAL_ONLY, _OPS, count_instructions

    counted = count_instructions(sys.executable, number=2000)
    assert "error" not in counted, counted
    assert set(counted["ops"]) == set(_OPS)
    for op, r in counted["ops"].items():
        # a read costs tens to thousands of instructions; a broken count
        # (a dump taken for the wrong eval) gives 0, negative or absurd
        # ratios.  A context's import of its own package skips CPython's
        # import machinery: 0.6-0.75x plain; importlib.import_module of a
        # module held is answered in C: 0.1-0.25x (CPython's runs Python).
        # A context's own view of the whole table or of the process is
        # made per call: up to hundreds of times a plain read.
        assert 50 < r["plain"] < 100_000, (op, r)
        assert 0.05 < r["base_ratio"] < 3 and 0.05 < r["context_ratio"], (op, r)
        assert r["context_ratio"] < (1000 if op in _BASE_GOAL_ONLY else 10), (op, r)

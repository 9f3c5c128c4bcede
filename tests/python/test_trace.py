"""The trace: a run with elastic contexts and a pool, recorded with
vlcs.trace, read back as Chrome trace events and drawn."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import pytest
from conftest import vlcs_cmd

ELASTIC_RUN = """
import json, os, sys, time, vlcs
path = sys.argv[1]
a = vlcs.VLC(cpus="0", name="a", elastic="0-1")
b = vlcs.VLC(cpus="1", name="b", elastic="0-1")
samples = []
r1, w1 = os.pipe()
r2, w2 = os.pipe()
ends = {-3: (w1, r2), -2: (w2, r1)}
def task(x):
    if x in ends:  # the first two tasks meet, so both workers run one
        os.write(ends[x][0], b".")
        os.read(ends[x][1], 1)
    return abs(x)
with vlcs.trace(path):
    with a:  # b is idle: a borrows CPU 1
        samples.append(("a", len(a.cpus), time.monotonic_ns() / 1e3))
        time.sleep(0.01)
    with b:  # a is idle now: b borrows CPU 0
        samples.append(("b", len(b.cpus), time.monotonic_ns() / 1e3))
        time.sleep(0.01)
    with a, b:  # both busy: each on its home
        samples.append(("a", len(a.cpus), time.monotonic_ns() / 1e3))
    with vlcs.ContextPoolExecutor(max_workers=2) as ex:
        list(ex.map(task, range(-3, 3)))
print(json.dumps(samples))
"""


def _run_traced(tmp_path) -> tuple[dict, list]:
    out = tmp_path / "trace.json"
    p = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(ELASTIC_RUN), str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    return json.loads(out.read_text()), json.loads(p.stdout.strip().splitlines()[-1])


def test_an_elastic_run_traced_parses_and_adds_up(tmp_path):
    doc, samples = _run_traced(tmp_path)
    events = [e for e in doc["traceEvents"] if "ts" in e]
    # every slice closes, on its own thread, in order
    stacks: dict = {}
    for e in sorted(events, key=lambda e: e["ts"]):
        key = (e["tid"], e["name"])
        if e["ph"] == "B":
            stacks.setdefault(key, []).append(e["ts"])
        elif e["ph"] == "E":
            assert stacks.get(key), f"an end without a begin: {e}"
            stacks[key].pop()
    assert not any(stacks.values()), f"slices left open: {stacks}"
    inside = {e["name"] for e in events if e["ph"] == "B" and e["cat"] == "context"}
    assert {"inside a", "inside b"} <= inside, inside
    # lends and reclaims pair up: each borrow is given back
    lends = [e for e in events if e.get("cat") == "elastic" and e["ph"] == "i"]
    for ctx in ("a", "b"):
        kinds = [e["name"].split()[0] for e in lends if e["args"]["context"] == ctx]
        assert kinds.count("borrow") >= 1 and kinds.count("borrow") == kinds.count("give"), kinds
    # the counters say what vlcs.info()/ctx.cpus said at the sampled points
    counters = sorted((e for e in events if e["ph"] == "C"), key=lambda e: e["ts"])
    for ctx, ncpus, at in samples:
        before = [c for c in counters if c["name"] == f"CPUs of {ctx}" and c["ts"] <= at]
        assert before, (ctx, at)
        assert before[-1]["args"]["current"] == ncpus, (ctx, ncpus, before[-1])
    # the pool's tasks: queued instants and closed task slices
    tasks = [e for e in events if e["ph"] == "B" and e["name"].startswith("task ")]
    queued = [e for e in events if e["ph"] == "i" and e["name"].startswith("queued ")]
    assert len(tasks) == 6 and len(queued) == 6, (len(tasks), len(queued))
    # threads are named
    names = [e for e in doc["traceEvents"] if e.get("name") == "thread_name"]
    assert names, "no thread names"


@pytest.mark.skipif(
    importlib.util.find_spec("matplotlib") is None,
    reason="matplotlib is not installed (./run installs it in the main .venv)",
)
def test_vlcs_trace_show_draws_the_timeline(tmp_path):
    _run_traced(tmp_path)
    png = tmp_path / "timeline.png"
    r = vlcs_cmd("trace", "show", str(tmp_path / "trace.json"), "-o", str(png))
    assert r.returncode == 0, r.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # a, b and the pool's two workers
    assert "4 contexts" in r.stdout and "lends and reclaims" in r.stdout, r.stdout


def test_without_matplotlib_trace_show_says_what_it_skipped(tmp_path):
    """A venv without the [plots] extra: the summary and one line naming the
    extra, no traceback, no picture."""
    _run_traced(tmp_path)
    blocker = tmp_path / "no-plots" / "matplotlib"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('matplotlib hidden for this test')\n")
    png = tmp_path / "timeline.png"
    env = dict(os.environ, PYTHONPATH=str(blocker.parent))
    r = vlcs_cmd("trace", "show", str(tmp_path / "trace.json"), "-o", str(png), env=env)
    assert r.returncode == 1 and not png.exists(), r
    assert "4 contexts" in r.stderr and "pip install 'vlcs[plots]'" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_vlcs_run_trace_records_a_program(tmp_path):
    out = tmp_path / "run.json"
    code = "import vlcs\nwith vlcs.VLC(cpus='0', name='c'):\n    pass\n"
    r = vlcs_cmd("run", "--trace", str(out), "--", sys.executable, "-c", code)
    assert r.returncode == 0, r.stderr
    events = json.loads(out.read_text())["traceEvents"]
    assert any(e.get("name") == "inside c" and e["ph"] == "B" for e in events), events


def test_a_trace_file_that_cannot_be_written_is_one_sentence(tmp_path):
    code = (
        "import vlcs\n"
        "try:\n"
        "    with vlcs.trace('/nonexistent-dir/t.json'):\n"
        "        pass\n"
        "except vlcs.VlcsError as e:\n"
        "    print(e)\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "cannot write /nonexistent-dir/t.json" in p.stdout, p.stdout
    assert not os.path.exists("/nonexistent-dir")

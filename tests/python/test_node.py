"""Node-wide lending from Python: two interpreters, each with one elastic
context (home one CPU, bound both) that imports numpy and scipy, join the
node with ``vlcs.init(node=True)``.  While one idles, the other's OpenBLAS
pools grow to both CPUs; when it enters its context they shrink; when it is
killed with SIGKILL its CPU comes back within a second.  The base of each
interpreter keeps its own numpy with its pools unchanged."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from test_imports import needs, needs_two, run_code

MEMBER = """
import json, os, sys, time
import numpy as base_np
import vlcs

def pools():
    # imported where it is called: inside the context, the context's own
    # threadpoolctl, which finds the context's copies
    from threadpoolctl import threadpool_info
    return [p["num_threads"] for p in threadpool_info() if p["internal_api"] == "openblas"]

base_pools = pools()
vlcs.init(node=True)
ctx = vlcs.VLC(cpus=sys.argv[1], elastic="0-1", name=sys.argv[2])
with ctx:
    import numpy as np, scipy.linalg
x = np.random.default_rng(0).random((300, 300))
print(json.dumps({"ledger": vlcs.node_ledger()}), flush=True)
for line in sys.stdin:
    cmd = line.split()
    out = {}
    if cmd[0] == "enter":
        ctx.__enter__()
    elif cmd[0] == "leave":
        ctx.__exit__(None, None, None)
    elif cmd[0] == "wait":  # until the context and its pools have that many CPUs, at most 1 s
        # (another process's plan reaches this one's watcher thread, which
        # moves the threads first and resizes the pools next)
        n, t0 = int(cmd[1]), time.monotonic()
        while time.monotonic() - t0 < 1:
            if len(ctx.cpus) == n and set(pools()) == {n}:
                break
            time.sleep(0.0002)
        out["waited_ms"] = (time.monotonic() - t0) * 1e3
    elif cmd[0] == "judge":  # inside: a loop a team of two runs slower, until its lend was judged
        import ctypes
        omp = ctx.load(cmd[1])
        t0 = time.monotonic()
        while ctx.progress_info()["rate_cpus"] != 1 and time.monotonic() - t0 < 60:
            omp.omp_probe_contended(ctypes.c_long(20000), ctypes.byref(ctypes.c_double()))
            vlcs.progress()
        out["most"] = ctx.progress_info()["most_cpus"]
    elif cmd[0] == "work":  # inside: numpy and scipy give right answers
        out["right"] = bool(np.allclose(scipy.linalg.inv(x) @ x, np.eye(300), atol=1e-8))
    elif cmd[0] == "base":
        out["base"] = {"pools": pools(), "distinct": base_np is not np,
                       "omp_dynamic": os.environ.get("OMP_DYNAMIC"),
                       "affinity": sorted(os.sched_getaffinity(0))}
    out["cpus"] = sorted(ctx.cpus)
    out["lent"] = sorted(ctx.lent_cpus)
    out["affinity"] = sorted(os.sched_getaffinity(0))
    if vlcs.current() is ctx:
        out["pools"] = pools()
    print(json.dumps(out), flush=True)
"""


class Member:
    """A member interpreter, driven line by line."""

    def __init__(self, home: str, name: str, ledger: str) -> None:
        self.p = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(MEMBER), home, name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "VLCS_NODE_LEDGER": ledger},
        )
        first = self.p.stdout.readline()
        assert first, self.p.stderr.read()[-4000:]
        assert json.loads(first)["ledger"] == ledger

    def ask(self, cmd: str) -> dict:
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        assert line, self.p.stderr.read()[-4000:]
        return json.loads(line)

    def close(self) -> None:
        if self.p.poll() is None:
            self.p.stdin.close()
            assert self.p.wait(timeout=60) == 0, self.p.stderr.read()[-4000:]


@pytest.fixture
def ledger(tmp_path_factory):
    path = f"/dev/shm/vlcs-pytest-node-{os.getpid()}-{time.monotonic_ns()}"
    yield path
    if os.path.exists(path):
        os.unlink(path)


@needs_two
@needs("scipy")
@needs("threadpoolctl")
def test_two_interpreters_lend_and_a_killed_one_gives_back(ledger):
    a, b = Member("0", "a", ledger), Member("1", "b", ledger)
    try:
        grown = b.ask("enter")
        assert grown["cpus"] == [0, 1], "b borrows the idle member's CPU"
        assert grown["pools"] == [2, 2], "numpy's and scipy's OpenBLAS grow to 2 threads"
        assert grown["affinity"] == [0, 1]
        assert b.ask("work")["right"]

        owner = a.ask("enter")
        assert owner["cpus"] == [0] and owner["affinity"] == [0], "a runs on its home at once"
        shrunk = b.ask("wait 1")
        assert shrunk["cpus"] == [1] and shrunk["affinity"] == [1], shrunk
        assert shrunk["pools"] == [1, 1], "both OpenBLAS copies shrink to 1 thread"
        assert b.ask("work")["right"]
        assert a.ask("base")["cpus"] == [0], "a keeps its home: the node is not oversubscribed"

        a.p.send_signal(signal.SIGKILL)
        back = b.ask("wait 2")
        assert back["cpus"] == [0, 1] and back["pools"] == [2, 2], back
        assert back["waited_ms"] < 1000
        a.p.wait(timeout=60)

        b.ask("leave")
        base = b.ask("base")
        assert base["cpus"] == [1], "idle: home"
        assert base["base"]["distinct"], "the base has its own numpy"
        assert base["base"]["omp_dynamic"] is None, "the context's OMP_DYNAMIC stays in it"
        assert base["base"]["affinity"] == [0, 1], "the base thread runs on every CPU again"
        assert base["base"]["pools"] == [2], "the base's own OpenBLAS pool is its own"
    finally:
        if a.p.poll() is None:
            a.p.kill()
        b.close()


@needs_two
@needs("scipy")
@needs("threadpoolctl")
def test_a_lend_that_did_not_pay_stays_given_back_across_the_node(ledger, omp_lib):
    a, b = Member("0", "a", ledger), Member("1", "b", ledger)
    try:
        assert b.ask("enter")["cpus"] == [0, 1], "b borrows the idle member's CPU"
        judged = b.ask(f"judge {omp_lib}")
        # a loop through one critical section ran slower on a team of two:
        # b holds itself to 1 CPU
        assert judged["most"] == 1 and judged["cpus"] == [1], judged
        assert a.ask("enter")["cpus"] == [0]
        # a's leave plans in a's process, from the ledger: b's limit is in
        # b's slot, so a's CPU is not lent to b again
        left = a.ask("leave")
        assert left["cpus"] == [0] and left["lent"] == [], left
        assert b.ask("base")["cpus"] == [1]
        b.ask("leave")
        assert a.ask("base")["lent"] == [], "b idle: nothing lent"
        # b's next work is judged afresh: entering, it borrows again
        assert b.ask("enter")["cpus"] == [0, 1]
        b.ask("leave")
    finally:
        a.close()
        b.close()


@needs_two
def test_node_mode_errors_are_clear_and_elastic_contexts_keep_working(ledger):
    r = run_code(
        """
        import json, os, vlcs
        out = {}
        try:
            vlcs.init(node=True)
        except vlcs.VlcsError as e:
            out["error"] = str(e)
            out["code"] = e.code.name
        out["ledger_after_error"] = vlcs.node_ledger()
        a = vlcs.VLC(cpus="0", elastic="0-1")
        b = vlcs.VLC(cpus="1", elastic="0-1")
        with b:
            out["in_process"] = sorted(b.cpus)
        os.environ["VLCS_NODE_LEDGER"] = os.environ["GOOD"]
        vlcs.init(node=True)
        out["info"] = vlcs.info()["node_ledger"]
        with b:
            out["through_ledger"] = sorted(b.cpus)
            out["lent"] = sorted(a.lent_cpus)
        print(json.dumps(out))
        """,
        VLCS_NODE_LEDGER="/nonexistent-vlcs-dir/ledger",
        GOOD=ledger,
    )
    assert "cannot open the node ledger /nonexistent-vlcs-dir/ledger" in r["error"]
    assert "/dev/shm" in r["error"] and r["code"] == "SYSTEM"
    assert r["ledger_after_error"] is None
    assert r["in_process"] == [0, 1], "lending inside the process goes on"
    assert r["info"] == ledger
    assert r["through_ledger"] == [0, 1] and r["lent"] == [0]


@needs_two
def test_vlcs_node_env_joins(ledger):
    r = run_code(
        """
        import json, vlcs
        ctx = vlcs.VLC(cpus="0")
        print(json.dumps({"ledger": vlcs.node_ledger()}))
        """,
        VLCS_NODE="1",
        VLCS_NODE_LEDGER=ledger,
    )
    assert r["ledger"] == ledger

"""fork() in a process with contexts: the child can use every context and
the base, and the parent goes on.  A context's libraries register their fork
handlers (OpenBLAS shuts its pool down before fork) with the namespace's own
libc, which no fork ran: the child of a context that had used OpenBLAS's
threads hung in its next large GEMM.  Fresh interpreter per case."""

from __future__ import annotations

from test_imports import needs, needs_two, run_code

_CASE = """
import json, os, signal, sys, warnings, vlcs
warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+: fork with threads
a = vlcs.VLC(cpus="0-1", name="a")
b = vlcs.VLC(cpus="1", name="b")
N = 600
with a:
    import numpy as np_a
    x = np_a.ones((N, N)); (x @ x).sum()  # OpenBLAS's threads of a are running
with b:
    import numpy as np_b
stop = []
def busy():
    while not stop:
        y = np_b.ones((120, 120)); (y @ y).sum()
    return "stopped"
spinning = b.submit(busy)  # b's executor thread is busy while the parent forks
def child_work():
    with a:
        big = float((np_a.ones((N, N)) @ np_a.ones((N, N))).sum())
    small = b.submit(lambda: float(np_b.arange(10).sum())).result(timeout=60)
    import numpy as base_np
    return big == float(N) ** 3 and small == 45.0 and float(base_np.ones(3).sum()) == 3.0
codes = []
for _ in range(5):
    pid = os.fork()
    if pid == 0:
        signal.alarm(60)  # a hung child dies (SIGALRM) rather than spin on for ever
        try:
            os._exit(0 if child_work() else 3)
        except BaseException:
            os._exit(4)
    codes.append(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
    if codes[-1] != 0:
        break
stop.append(1)
after = child_work()  # the parent, as before
print(json.dumps({"children": codes, "spinner": spinning.result(), "parent_after": after}))
"""


@needs("numpy")
@needs_two
def test_children_of_a_process_with_busy_contexts_use_them():
    r = run_code(_CASE, timeout=300)  # a hung child is this test failing
    assert r["children"] == [0] * 5
    assert r["spinner"] == "stopped" and r["parent_after"] is True


_POOL = """
import json, multiprocessing, signal, warnings, vlcs
warnings.simplefilter("ignore", DeprecationWarning)
a = vlcs.VLC(cpus="0-1", name="a")
with a:
    import numpy as np_a
    x = np_a.ones((600, 600)); (x @ x).sum()  # OpenBLAS's threads of a are running
def work(n):
    with a:
        return float((np_a.ones((n, n)) @ np_a.ones((n, n))).sum())
# a hung worker dies (SIGALRM) rather than spin on for ever
with multiprocessing.get_context("fork").Pool(2, signal.alarm, (60,)) as pool:
    got = pool.map(work, [400, 500, 600, 300])
print(json.dumps({"pool": got, "parent": work(200)}))
"""


@needs("numpy")
@needs_two
def test_a_multiprocessing_fork_pool_uses_a_context_numpy():
    r = run_code(_POOL, timeout=240)  # a hung worker is this test failing
    assert r["pool"] == [float(n) ** 3 for n in (400, 500, 600, 300)]
    assert r["parent"] == 200.0**3

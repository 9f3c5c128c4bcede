"""Imports into a context from several threads, as joblib's threading
backend, a ThreadPoolExecutor or numpy's lazy submodules make them: a
module another thread is still executing is waited for, as CPython waits
on a module's lock, and a fork meanwhile leaves the child free to import.
Fresh interpreter per case; the modules are written for it, and block on
events, not on time."""

from __future__ import annotations

from test_imports import needs, run_code

# gate: what the slow module blocks on.  slowmod: sets `entered`, then waits
# in gate.go_when until gate.ready() holds or release is set, then defines X.
_GATE = """
import threading, time
entered = threading.Event()
release = threading.Event()
def go_when(ready):
    # slowmod's body waits here until ready() holds (the other importer is
    # waiting in vlcs's loader, or has its answer) or release is set
    deadline = time.monotonic() + 60
    while not release.is_set() and not ready() and time.monotonic() < deadline:
        release.wait(0.005)
"""

_SLOWMOD = """
import gate
gate.entered.set()
gate.go_when(gate.ready)
X = 42
"""

_TWO_THREADS = """
import json, sys, threading, vlcs
vlcs.share("gate")  # one gate for the test and the contexts' slowmod
import gate
ctx = vlcs.VLC(cpus="0", name="ctx")
out = {}
second = None
def waiting_or_done():
    # the second importer has its answer, or is inside vlcs's loader
    if "second" in out:
        return True
    f = sys._current_frames().get(second.ident) if second else None
    while f is not None:
        if f.f_code.co_filename.endswith("loader.py") and f.f_code.co_name == "load":
            return True
        f = f.f_back
    return False
gate.ready = waiting_or_done
def importer(key):
    with ctx:
        try:
            import slowmod
            out[key] = slowmod.X
        except BaseException as e:
            out[key] = f"{type(e).__name__}: {e}"
first = threading.Thread(target=importer, args=("first",))
first.start()
gate.entered.wait(60)
second = threading.Thread(target=importer, args=("second",))
second.start()
second.join(); first.join()
with ctx:
    import slowmod
    out["context_has_it"] = slowmod.X
out["base_has_it"] = "slowmod" in sys.modules
print(json.dumps(out))
"""


def test_a_module_another_thread_executes_is_waited_for(tmp_path):
    (tmp_path / "gate.py").write_text(_GATE)
    (tmp_path / "slowmod.py").write_text(_SLOWMOD)
    r = run_code(_TWO_THREADS, timeout=120, PYTHONPATH=str(tmp_path))
    # the second importer got the whole module, not the half-made one
    # ("partially initialized module 'slowmod' has no attribute 'X'")
    assert (r["first"], r["second"]) == (42, 42), r
    assert r["context_has_it"] == 42 and r["base_has_it"] is False, r


_NUMPY_LAZY = """
import json, threading, vlcs
ctx = vlcs.VLC(cpus="0", name="ctx")
with ctx:
    import numpy as np
results, errors = [], []
barrier = threading.Barrier(4)
def first_touch(i):
    with ctx:
        barrier.wait()
        try:  # np.random: numpy's lazy submodule, imported at the first touch
            results.append(float(np.random.default_rng(i).random()))
        except BaseException as e:
            errors.append(f"{type(e).__name__}: {str(e)[:120]}")
threads = [threading.Thread(target=first_touch, args=(i,)) for i in range(4)]
[t.start() for t in threads]; [t.join() for t in threads]
import numpy
print(json.dumps({"errors": errors, "results": sorted(results),
                  "plain": sorted(float(numpy.random.default_rng(i).random()) for i in range(4))}))
"""


@needs("numpy")
def test_numpy_s_lazy_random_touched_by_four_threads_at_once():
    r = run_code(_NUMPY_LAZY, timeout=120)
    # RecursionError in numpy's __getattr__ in most runs before
    assert r["errors"] == [] and r["results"] == r["plain"], r


_FORK = """
import json, os, signal, sys, threading, warnings, vlcs
warnings.simplefilter("ignore", DeprecationWarning)  # 3.12+: fork with threads
vlcs.share("gate")  # one gate for the test and the contexts' slowmod
import gate
gate.ready = lambda: False  # slowmod waits for release
a = vlcs.VLC(cpus="0", name="a")
b = vlcs.VLC(cpus="1", name="b")
def slow():
    with a:
        import slowmod
t = threading.Thread(target=slow)
t.start()
gate.entered.wait(60)  # a's import holds vlcs's import lock now
pid = os.fork()
if pid == 0:
    signal.alarm(60)  # a hung child dies (SIGALRM) rather than wait for ever
    with b:
        import fastmod  # a context's first import in the child
    os._exit(0 if fastmod.Y == 7 else 3)
code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
gate.release.set()
t.join()
with a:
    import slowmod
print(json.dumps({"child": code, "parent": slowmod.X}))
"""


def test_a_fork_while_another_thread_imports_leaves_the_child_free(tmp_path):
    (tmp_path / "gate.py").write_text(_GATE)
    (tmp_path / "slowmod.py").write_text(_SLOWMOD)
    (tmp_path / "fastmod.py").write_text("Y = 7\n")
    r = run_code(_FORK, timeout=120, PYTHONPATH=str(tmp_path))
    # the child hung on the lock the other thread held at fork (SIGALRM: -14)
    assert r == {"child": 0, "parent": 42}, r

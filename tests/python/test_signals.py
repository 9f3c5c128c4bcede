"""Entering and leaving a context from Python under a storm of SIGINT: a
KeyboardInterrupt lands before the enter or after the leave, never leaving
the thread inside a context it left."""

from __future__ import annotations

from test_imports import run_code

STORM = r"""
import json, os, signal, subprocess, sys, time
import vlcs
from vlcs._lib import lib

a = vlcs.VLC(cpus="0", name="a")
armed = False


def handler(sig, frame):
    # one KeyboardInterrupt per arming, raised only inside the try below, so
    # that the loop itself survives the storm
    global armed
    if armed:
        armed = False
        raise KeyboardInterrupt


signal.signal(signal.SIGINT, handler)
# another process sends SIGINT as fast as it can (no GIL between signals)
storm = subprocess.Popen([sys.executable, "-c", f'''
import os, signal, time
try:
    while True:
        os.kill({os.getpid()}, signal.SIGINT)
        time.sleep(0.0001)
except ProcessLookupError:
    pass
'''])
interrupts = rounds = 0
deadline = time.monotonic() + 3
while time.monotonic() < deadline:
    rounds += 1
    try:
        armed = True
        with a:
            pass
        armed = False
    except KeyboardInterrupt:
        interrupts += 1
storm.kill()
storm.wait()
left = 0  # frames the thread is still in: each vlcs_leave that succeeds
while lib().vlcs_leave() == 0:
    left += 1
print(json.dumps({"rounds": rounds, "interrupts": interrupts, "left_inside": left}))
"""


def test_sigint_storm_never_leaves_a_thread_inside():
    r = run_code(STORM, timeout=120)
    assert r["interrupts"] >= 200, r  # the storm reached the with statements
    assert r["left_inside"] == 0, r


def test_with_returns_the_context_and_errors_keep_their_class():
    import vlcs

    a = vlcs.VLC(cpus="0", name="w")
    with a as inside:
        assert inside is a and vlcs.current() is a
        with a:  # nested
            assert vlcs.current() is a
        assert vlcs.current() is a
    assert vlcs.current() is None
    try:
        with a:
            raise KeyError("mine")
    except KeyError as e:  # __exit__ suppressed nothing
        assert e.args == ("mine",)
    assert vlcs.current() is None
    # nesting past the limit: VlcsLimitError from the C side, nothing left inside
    entered = []
    try:
        for _ in range(100):
            entered.append(a.__enter__())
    except vlcs.VlcsLimitError as e:
        assert e.limit == "nesting depth" and "nested" in str(e)
    else:
        raise AssertionError("no limit")
    for _ in entered:
        a.__exit__(None, None, None)
    assert vlcs.current() is None

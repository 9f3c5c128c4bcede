"""The per-process resources that contexts use up (vlcs.room()), and a
load refused before it would leave the process without descriptors: a
VlcsLimitError naming the resource and the remedy, with the process, the
base and the other contexts working on."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import vlcs


def test_room_counts_what_the_process_uses():
    r = vlcs.room()
    assert set(r) == {"namespaces", "memory_maps", "descriptors", "threads", "keys"}
    for name, v in r.items():
        assert v["limit"] is None or 0 <= v["used"] <= v["limit"], (name, v)
    assert r["namespaces"]["limit"] == 15 and r["threads"]["used"] >= 1
    with open(os.devnull) as f, open(os.devnull) as g:
        assert f.fileno() != g.fileno()
        assert vlcs.room()["descriptors"]["used"] == r["descriptors"]["used"] + 2
    with open("/proc/self/maps") as f:
        lines = sum(1 for _ in f)
    assert abs(vlcs.room()["memory_maps"]["used"] - lines) < 64
    assert set(vlcs.info()["room"]) == set(r)


FILL = r"""
import ctypes, json, os, resource, vlcs
used = vlcs.room()["descriptors"]["used"]
resource.setrlimit(resource.RLIMIT_NOFILE, (used + 48, used + 48))
ctxs, libs, error = [], [], None
for i in range(100):
    c = vlcs.VLC(cpus=str(i % 2), name=f"z{i}")
    try:
        libs.append(c.load("libz.so.1"))
    except vlcs.VlcsLimitError as e:
        error = e
        break
    ctxs.append(c)
base_z = ctypes.CDLL("libz.so.1")
for lib in libs + [base_z]:
    lib.zlibVersion.restype = ctypes.c_char_p
ours = base_z.zlibVersion()
working = sum(lib.zlibVersion() == ours for lib in libs)
made = len(libs)
with open(os.devnull) as f:
    opened = f.fileno() >= 0
del lib
for _ in range(2):  # two contexts closed, once nothing refers to their copies
    del libs[0]
    ctxs.pop(0).close()
again = c.load("libz.so.1")
again.zlibVersion.restype = ctypes.c_char_p
import zlib  # the base's own zlib, after the contexts
base = zlib.decompress(zlib.compress(b"base" * 100)) == b"base" * 100
print(json.dumps({"base": base, "made": made, "working": working, "limit": error.limit,
                  "code": int(error.limit_code), "text": str(error), "opened": opened,
                  "again": again.zlibVersion().decode(), "modes": sorted({x.mode for x in ctxs})}))
"""


def test_a_load_past_the_descriptors_is_refused_and_the_rest_goes_on():
    env = dict(os.environ, VLCS_MODE="copies")
    p = subprocess.run(
        [sys.executable, "-c", FILL], capture_output=True, text=True, env=env, timeout=300
    )
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads(p.stdout.strip().splitlines()[-1])
    assert 2 < r["made"] < 100, r
    assert r["working"] == r["made"], r
    assert r["limit"] == "file descriptors" and r["code"] == int(vlcs.Limit.DESCRIPTORS), r
    assert "ulimit -n" in r["text"] and f"'z{r['made']}'" in r["text"], r
    assert r["opened"] and r["again"].startswith("1."), r
    assert r["modes"] == ["copies"] and r["base"], r


def test_room_leaves_the_loader_to_other_threads():
    # counting namespaces must not take glibc's loader lock for good: a
    # context made on another thread afterwards loads its library
    code = r"""
import threading, vlcs
vlcs.room()
def load():
    vlcs.VLC(cpus="0").load("libz.so.1")
t = threading.Thread(target=load)
t.start()
t.join()
print(vlcs.room()["namespaces"]["used"] >= 1)
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "True", p.stderr[-2000:]

"""`vlcs doctor`: what this machine and interpreter give vlcs, each finding
checked against what the process can see for itself."""

from __future__ import annotations

import json
import os
import sys

from conftest import run_hiding, vlcs_cmd
from test_places import pip_hwloc, system_hwloc

NAMES = [
    "platform",
    "cpus",
    "contexts",
    "python",
    "hwloc",
    "strict",
    "gpus",
    "room",
    "pictures",
    "compiler",
]


def _doctor(env: dict[str, str] | None = None) -> dict[str, dict]:
    p = vlcs_cmd("doctor", "--json", env=dict(os.environ, **(env or {})), timeout=300)
    assert p.returncode == 0, p.stderr
    found = json.loads(p.stdout)
    assert [f["name"] for f in found] == NAMES, found
    return {f["name"]: f for f in found}


def test_doctor_on_this_machine_says_what_it_has():
    import vlcs
    from vlcs._topo import hwloc_library

    got = _doctor({"GLIBC_TUNABLES": ""})
    assert got["platform"]["state"] == "ok" and "glibc 2." in got["platform"]["detail"]
    assert got["cpus"]["detail"].startswith(f"{len(os.sched_getaffinity(0))} of ")
    assert got["hwloc"]["state"] == "ok" and got["hwloc"]["detail"].startswith(hwloc_library())
    own = vlcs.info()["python"]["own_runtime_library"]
    assert got["python"]["state"] == "ok" and own in got["python"]["detail"], got["python"]
    # glibc's default static TLS holds a few OpenMP runtimes, and the
    # finding says how to get room for more
    contexts = got["contexts"]
    assert contexts["state"] == "note" and "static TLS" in contexts["detail"], contexts
    assert "vlcs run -- PROGRAM" in contexts["fix"]
    assert got["strict"]["state"] == "ok", got["strict"]
    assert got["gpus"]["state"] in ("ok", "note"), got["gpus"]
    with open("/proc/sys/vm/max_map_count") as f:
        maps = int(f.read())
    room = got["room"]
    assert room["detail"].startswith(f"{maps} memory maps (vm.max_map_count)"), room
    assert room["state"] == ("ok" if maps >= 1024 * 24 else "note"), room


def test_doctor_under_vlcs_run_finds_room_for_15_namespaces():
    p = vlcs_cmd("run", "--", sys.executable, "-m", "vlcs", "doctor", "--json", timeout=300)
    assert p.returncode == 0, p.stderr
    contexts = {f["name"]: f for f in json.loads(p.stdout)}["contexts"]
    assert contexts["state"] == "ok" and contexts["detail"].startswith("15 contexts"), contexts


def test_doctor_without_matplotlib_names_the_extra(tmp_path):
    blocker = tmp_path / "matplotlib"
    blocker.mkdir()
    (blocker / "__init__.py").write_text("raise ImportError('matplotlib hidden for this test')\n")
    pictures = _doctor({"PYTHONPATH": str(tmp_path)})["pictures"]
    assert pictures["state"] == "missing", pictures
    assert pictures["fix"] == "pip install 'vlcs[plots]'", pictures


def test_doctor_without_hwloc_names_what_to_install():
    hide = [system_hwloc()] + ([os.path.realpath(pip_hwloc())] if pip_hwloc().exists() else [])
    p = run_hiding(hide, [sys.executable, "-m", "vlcs", "doctor", "--json"])
    assert p.returncode == 0, p.stderr
    hwloc = {f["name"]: f for f in json.loads(p.stdout)}["hwloc"]
    assert hwloc["state"] == "missing" and "places need libhwloc" in hwloc["detail"], hwloc
    assert "apt install libhwloc15" in hwloc["fix"] and "vlcs[hwloc]" in hwloc["fix"], hwloc

"""GPUs and contexts, with stand-ins for NVIDIA's driver (libcuda.so.1, one
process-wide state: a second copy cannot initialise, as with the real one)
and a CUDA runtime that opens it by name (tests/c/lib), so that it runs on
machines without a GPU: the driver is one copy for the whole process, each
context's private runtime sees the GPUs it was given, pools split GPUs
among workers, and the base keeps every GPU.  tools/gpu/run.sh does the same
with torch and CuPy on a real GPU."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
LIB = HERE.parents[1] / "tests" / "c" / "lib"


@pytest.fixture(scope="module")
def stand_ins(tmp_path_factory) -> dict[str, str]:
    """The stand-in driver (in a folder of its own, for LD_LIBRARY_PATH)
    and runtime, compiled for this test."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.fail("no C compiler: ./run installs build-essential")
    out = tmp_path_factory.mktemp("gpu")
    (out / "fake_driver").mkdir()
    driver = out / "fake_driver" / "libcuda.so.1"
    runtime = out / "libfake_cudart.so"
    subprocess.run(
        [
            cc,
            "-shared",
            "-fPIC",
            "-O2",
            "-Wl,-soname,libcuda.so.1",
            "-o",
            str(driver),
            str(LIB / "fake_cuda_driver.c"),
        ],
        check=True,
    )
    subprocess.run(
        [
            cc,
            "-shared",
            "-fPIC",
            "-O2",
            "-o",
            str(runtime),
            str(LIB / "fake_cuda_runtime.c"),
            "-ldl",
        ],
        check=True,
    )
    return {"dir": str(driver.parent), "runtime": str(runtime)}


def _run(code: str, stand_ins: dict[str, str], **env: str) -> dict:
    e = dict(os.environ, LD_LIBRARY_PATH=stand_ins["dir"], VLCS_FAKE_GPUS="4", **env)
    head = f"import sys; sys.path.insert(0, {str(HERE)!r}); RT = {stand_ins['runtime']!r}\n"
    p = subprocess.run(
        [sys.executable, "-c", head + code], capture_output=True, text=True, env=e, timeout=300
    )
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


CONTEXTS = r"""
import json, vlcs, gpu_tasks
a = vlcs.VLC(cpus="0", gpus="0,2", name="a")
b = vlcs.VLC(cpus="1", gpus="", name="b")
c = vlcs.VLC(cpus="0", gpus=[3], name="c")
d = vlcs.VLC(cpus="1", name="d")
seen = {}
for ctx in (a, b, c, d):
    with ctx:
        seen[ctx.name] = gpu_tasks.devices(RT)
info = vlcs.info()
out = {
    "seen": seen,
    "base": gpu_tasks.base_devices(),
    "copies": gpu_tasks.driver_copies(),
    "auto": info["auto_services"][0],
    "info_gpus": {x["name"]: x["gpus"] for x in info["contexts"]},
    "env": a.getenv("CUDA_VISIBLE_DEVICES"),
}
for ctx in (a, b, c, d):
    ctx.close()
out["base_after"] = gpu_tasks.base_devices()
print(json.dumps(out))
"""


@pytest.mark.parametrize("mode", ["namespace", "copies"])
def test_one_driver_and_each_context_its_gpus(stand_ins, mode):
    r = _run(CONTEXTS, stand_ins, VLCS_MODE=mode)
    assert r["seen"] == {
        "a": {"rc": 0, "devices": ["stand-in GPU 0", "stand-in GPU 2"]},
        "b": {"rc": 0, "devices": []},
        "c": {"rc": 0, "devices": ["stand-in GPU 3"]},
        "d": {"rc": 0, "devices": [f"stand-in GPU {i}" for i in range(4)]},
    }, r
    assert r["copies"] == 1, r  # the base's, shared
    assert r["base"] == {"rc": 0, "count": 4} and r["base_after"] == r["base"], r
    assert r["auto"]["name"] == "libcuda.so.1" and r["auto"]["state"] == "service", r
    assert "304" in r["auto"]["why"], r
    assert r["info_gpus"] == {"a": [0, 2], "b": [], "c": [3], "d": None}, r
    assert r["env"] == "0,2", r


PRIVATE = r"""
import json, vlcs, gpu_tasks
a, b = vlcs.VLC(cpus="0", name="a"), vlcs.VLC(cpus="1", name="b")
with a:
    ra = gpu_tasks.devices(RT)
with b:
    rb = gpu_tasks.devices(RT)
print(json.dumps({"a": ra["rc"], "b": rb["rc"], "base": gpu_tasks.base_devices()["rc"],
                  "copies": gpu_tasks.driver_copies(), "auto": vlcs.auto_services()}))
"""


def test_without_the_automatic_service_a_second_driver_breaks_the_gpu(stand_ins):
    """What vlcs prevents, shown with the list emptied: the stand-in fails as
    NVIDIA's driver does, for the second context and then for the base."""
    r = _run(PRIVATE, stand_ins, VLCS_AUTO_SERVICES="")
    assert r == {"a": 0, "b": 304, "base": 304, "copies": 3, "auto": []}, r


POOLS = r"""
import json, vlcs, gpu_tasks
import os, tempfile
folder = tempfile.mkdtemp()
with vlcs.ContextPoolExecutor(
    max_workers=2, cpus="0-1", gpus="0-3", name="w",
    initializer=gpu_tasks.record, initargs=(RT, folder),  # runs in every worker
) as ex:
    split = ex.worker_gpus
    # tasks: each answered by the worker that ran it, whichever that was
    each = [f.result() for f in [ex.submit(gpu_tasks.worker_devices, RT) for _ in range(6)]]
got = {n[:-5]: json.load(open(os.path.join(folder, n))) for n in sorted(os.listdir(folder))}
pool = vlcs.ContextPool(size=2, cpus=["0", "1"], gpus=[0, 1, 2, 3])
held = [pool.acquire(), pool.acquire()]
shares = [ctx.gpus for ctx in held]
held[0].set_gpus("")  # a user's change, undone when it comes back
for ctx in held:
    pool.release(ctx)
back = sorted(ctx.gpus for ctx in held)
own = vlcs.VLC(cpus="0", gpus="1", python="own", name="own")
own_seen = own.submit(gpu_tasks.devices, RT).result()
own.close()
pool.close()
print(json.dumps({"split": split, "got": got, "each": each, "shares": shares,
                  "back": back, "own": own_seen, "copies": gpu_tasks.driver_copies(),
                  "base": gpu_tasks.base_devices()}))
"""


def test_pools_split_gpus_and_own_runtimes_see_theirs(stand_ins):
    r = _run(POOLS, stand_ins)
    assert r["split"] == [[0, 1], [2, 3]], r
    halves = [
        {"rc": 0, "devices": ["stand-in GPU 0", "stand-in GPU 1"]},
        {"rc": 0, "devices": ["stand-in GPU 2", "stand-in GPU 3"]},
    ]
    assert r["got"] == {"w-0": halves[0], "w-1": halves[1]}, r
    for e in r["each"]:
        assert {"rc": e["rc"], "devices": e["devices"]} == halves[int(e["worker"][-1])], r
    assert sorted(r["shares"]) == [[0, 1], [2, 3]] and r["back"] == [[0, 1], [2, 3]], r
    assert r["own"] == {"rc": 0, "devices": ["stand-in GPU 1"]}, r
    assert r["copies"] == 1 and r["base"] == {"rc": 0, "count": 4}, r


def test_gpu_lists_are_checked():
    import vlcs

    ctx = vlcs.VLC(cpus="0")
    try:
        with pytest.raises(vlcs.InvalidArgumentError, match="GPU"):
            ctx.set_gpus("0-x")
        with pytest.raises(ValueError, match="GPU ids"):
            ctx.set_gpus([-1])
        assert ctx.gpus is None
        ctx.set_gpus([1, 0])
        assert ctx.gpus == [0, 1] and ctx.getenv("HIP_VISIBLE_DEVICES") == "0,1"
        assert ctx.getenv("ROCR_VISIBLE_DEVICES") == os.environ.get("ROCR_VISIBLE_DEVICES")
    finally:
        ctx.close()
    with pytest.raises(ValueError, match="one per worker"):
        vlcs.ContextPoolExecutor(max_workers=2, cpus="0", gpus=["0"])


def test_python_in_a_context_reads_its_gpus_from_os_environ():
    """torch counts devices through NVML filtered by os.getenv's
    CUDA_VISIBLE_DEVICES: Python in a context must read the context's,
    as its C code does (a context given no GPU counted the node's H200)."""
    import vlcs

    before = {k: os.environ.get(k) for k in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")}
    none, some = vlcs.VLC(cpus="0", gpus=""), vlcs.VLC(cpus="1", gpus="0,2")
    try:
        seen = []
        for ctx in (none, some):
            with ctx:
                seen.append((os.getenv("CUDA_VISIBLE_DEVICES"), os.environ["HIP_VISIBLE_DEVICES"]))
        assert seen == [("", ""), ("0,2", "0,2")]
        some.set_gpus([1])
        with some:
            assert os.environ.get("CUDA_VISIBLE_DEVICES") == "1"
    finally:
        none.close()
        some.close()
    assert {k: os.environ.get(k) for k in before} == before  # the base's, untouched

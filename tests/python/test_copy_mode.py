"""Python contexts in copy mode (docs/copy-mode.md): past glibc's namespaces,
or all of them with VLCS_MODE=copies.  Each case runs in a fresh interpreter
(namespaces and copies are per process); every case checks the base after."""

from __future__ import annotations

from test_imports import needs, needs_two, run_code

PAST_THE_NAMESPACES = """
import json, os, vlcs
import numpy as base_np, scipy.linalg as base_la
from threadpoolctl import threadpool_info
N = 64
a = base_np.arange(16.0).reshape(4, 4) + base_np.eye(4) * 10
want = base_la.inv(a).tolist()
base_pools_before = [(d["internal_api"], d["num_threads"]) for d in threadpool_info()]
ctxs = [vlcs.VLC(cpus=str(i % 2), name=f"c{i}", env={"VLCS_WHO": f"c{i}"}) for i in range(N)]
facts = []
for c in ctxs:
    with c:
        import numpy, scipy.linalg
        from threadpoolctl import threadpool_info as tp
        facts.append({
            "mode": c.mode,
            "numpy": id(numpy),
            "same": scipy.linalg.inv(numpy.asarray(a)).tolist() == want,
            "pools": sorted({(d["internal_api"], d["num_threads"]) for d in tp()}),
            "cpu_count": os.cpu_count(),
            "who": os.environ.get("VLCS_WHO"),
            "pools_vlcs": sorted({p["num_threads"] for p in c.threadpools()}),
        })
print(json.dumps({
    "copies": sum(f["mode"] == "copies" for f in facts),
    "numpys": len({f["numpy"] for f in facts} | {id(base_np)}),
    "all_same": all(f["same"] for f in facts),
    "pools": sorted({tuple(map(tuple, f["pools"])) for f in facts}),
    "pools_vlcs": sorted({tuple(f["pools_vlcs"]) for f in facts}),
    "cpu_counts": sorted({f["cpu_count"] for f in facts}),
    "who": [f["who"] for f in facts] == [f"c{i}" for i in range(N)],
    "base_inv": base_la.inv(a).tolist() == want,
    "base_cpu_count": os.cpu_count(),
    "base_who": os.environ.get("VLCS_WHO"),
    "base_pools": [(d["internal_api"], d["num_threads"]) for d in threadpool_info()]
    == base_pools_before,
}))
"""


@needs_two
@needs("scipy")
@needs("threadpoolctl")
def test_64_contexts_import_numpy_and_scipy_each_its_own():
    r = run_code(PAST_THE_NAMESPACES, timeout=600)
    assert r["copies"] >= 64 - 15, r  # past glibc's namespaces
    assert r["numpys"] == 65  # 64 copies and the base's
    assert r["all_same"] and r["base_inv"]
    # threadpoolctl inside a copy-mode context finds its own OpenBLAS
    # copies (numpy's, scipy's), sized by the context's one CPU
    assert r["pools"] == [[["openblas", 1]]], r["pools"]
    assert r["pools_vlcs"] == [[1]]
    assert r["cpu_counts"] == [1] and r["who"]
    assert r["base_cpu_count"] == 2 and r["base_who"] is None and r["base_pools"]


EVERY_CONTEXT_IN_COPIES = """
import json, vlcs
import numpy as base_np
facts = {}
for name, cpu in (("a", "0"), ("b", "1")):
    ctx = vlcs.VLC(cpus=cpu, name=name)
    with ctx:
        import pandas, sklearn
        from sklearn.linear_model import LogisticRegression
        import numpy
        X = numpy.array([[0.0], [1.0], [2.0], [3.0]])
        y = numpy.array([0, 0, 1, 1])
        model = LogisticRegression().fit(X, y)
        df = pandas.DataFrame({"k": ["x", "y", "x"], "v": [1, 2, 3]})
        facts[name] = {
            "mode": ctx.mode,
            "pred": [int(p) for p in model.predict(X)],
            "groupby": {k: int(v) for k, v in df.groupby("k")["v"].sum().items()},
            "ids": [id(pandas), id(sklearn), id(numpy)],
        }
import pandas as base_pd
print(json.dumps({
    "modes": [facts[n]["mode"] for n in "ab"],
    "preds": [facts[n]["pred"] for n in "ab"],
    "groupbys": [facts[n]["groupby"] for n in "ab"],
    "distinct": len({i for n in "ab" for i in facts[n]["ids"]}) == 6
    and id(base_np) not in facts["a"]["ids"],
    "base_pandas": bool(base_pd.DataFrame({"v": [1, 2]})["v"].sum() == 3),
}))
"""


@needs_two
@needs("pandas")
@needs("sklearn")
def test_pandas_and_sklearn_in_two_copy_mode_contexts():
    r = run_code(EVERY_CONTEXT_IN_COPIES, VLCS_MODE="copies", timeout=600)
    assert r["modes"] == ["copies", "copies"]
    assert r["preds"] == [[0, 0, 1, 1], [0, 0, 1, 1]]
    assert r["groupbys"] == [{"x": 4, "y": 2}, {"x": 4, "y": 2}]
    assert r["distinct"] and r["base_pandas"]


PYBIND11_BASE_AFTER = """
import io, json, vlcs
a = vlcs.VLC(cpus="0", name="a")
def png(mpl):
    plt = mpl.pyplot
    fig, ax = plt.subplots(figsize=(3, 2), dpi=50)
    ax.plot([0, 1, 2], [0, 1, 4])
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()
with a:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot
    ma = matplotlib
    mode = a.mode
in_ctx = a.submit(png, ma).result()
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot
print(json.dumps({"mode": mode, "same_png": png(matplotlib) == in_ctx,
                  "distinct": matplotlib is not ma}))
"""


@needs("matplotlib")
def test_matplotlib_in_a_copy_mode_context_then_in_the_base():
    # pybind11 keeps its type registry in the interpreter's dict: a copy
    # gets its context's, also while its constructors run (its load), so
    # the base's matplotlib finds its own registry afterwards
    r = run_code(PYBIND11_BASE_AFTER, VLCS_MODE="copies")
    assert r == {"mode": "copies", "same_png": True, "distinct": True}


COPY_FILES = """
import ctypes, json, os, re, struct, vlcs
from vlcs._isolation.linkmap import _LinkMap
def sections(data):
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    def sh(i):
        return struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
    names = sh(shstrndx)
    out = {}
    for i in range(shnum):
        name, typ, flags, addr, off, size = sh(i)[:6]
        end = data.index(b"\\0", names[4] + name)
        out[data[names[4] + name:end].decode()] = (addr, off, size, typ, flags)
    return out
a = vlcs.VLC(cpus="0", name="a")
with a:
    import numpy
    numpy.linalg.inv(numpy.eye(3) * 2)
origins = {os.path.realpath(p) for p in a.libraries()}
# every object of the base namespace, as a debugger walks them (r_debug)
lm = ctypes.cast(ctypes.CDLL(None)._handle, ctypes.POINTER(_LinkMap))
while lm.contents.l_prev:
    lm = lm.contents.l_prev
checked, named, files = {}, set(), {}
for_pid = re.compile(rf"/proc/{os.getpid()}/fd/(\\d+)")
while lm:
    name = (lm.contents.l_name or b"").decode()
    m = for_pid.fullmatch(name)
    target = os.readlink(f"/proc/self/fd/{m[1]}") if m else ""
    if target in origins:  # a copy: what a debugger opens is its original
        named.add(os.path.basename(target))
        data = files.setdefault(target, open(target, "rb").read())
        for sec, (addr, off, size, typ, flags) in sections(data).items():
            if typ != 8 and flags & 2 and not flags & 1 and size:  # SHF_ALLOC, not SHF_WRITE
                if sec in (".dynstr", ".dynsym"):
                    continue  # its names and unique symbols' bindings are the copy's own
                mem = ctypes.string_at(lm.contents.l_addr + addr, size)
                checked[f"{os.path.basename(target)}:{sec}"] = mem == data[off:off + size]
    lm = lm.contents.l_next
# what the copies' memfds still hold
held = 0
for fd in os.listdir("/proc/self/fd"):
    try:
        if os.readlink(f"/proc/self/fd/{fd}").startswith("/memfd:vlcs-copy:"):
            held += os.fstat(int(fd)).st_blocks * 512
    except OSError:
        pass
print(json.dumps({"mode": a.mode, "copies": len(origins), "named": sorted(named),
                  "checked": checked, "memfd_bytes": held}))
"""


@needs("numpy")
def test_a_copys_file_is_what_runs_and_its_memfd_holds_nothing():
    # a loaded copy is named after its original (/proc/PID/fd/N of a held
    # descriptor): gdb and profilers read its unwind tables, constants and
    # symbols from there, so every read-only section in memory must be the
    # original's bytes (gdb failed an internal assertion on a zeroed
    # .eh_frame); its read-only pages are the original's, its data its own,
    # and its memfd gives back every byte
    r = run_code(COPY_FILES, VLCS_MODE="copies")
    assert r["mode"] == "copies"
    assert r["copies"] >= 3 and len(r["named"]) == r["copies"], r
    assert any(k.endswith(".eh_frame") for k in r["checked"]), r
    assert any(k.startswith("_multiarray_umath") and k.endswith(".text") for k in r["checked"]), r
    bad = [k for k, same in r["checked"].items() if not same]
    assert not bad, bad
    assert r["memfd_bytes"] < 256 * 1024, r  # roots and forwarders only: a few pages


CAVEATS = """
import json, vlcs
a = vlcs.VLC(cpus="0", name="a", env={"TZ": "UTC-5", "VLCS_WHO": "a"})
a.load("libm.so.6")
mine = [c for c in vlcs.info()["contexts"] if c["name"] == "a"][0]
print(json.dumps({"mode": mine["mode"], "caveats": mine["copy_mode_caveats"]}))
"""


def test_info_says_what_copy_mode_does_not_keep_the_context_s():
    # libc reads TZ itself (localtime), from the process's environment: a
    # copy-mode context's TZ reaches its libraries' getenv only, and info()
    # says so; a namespace has its own libc, and nothing to say
    r = run_code(CAVEATS, VLCS_MODE="copies", LD_PRELOAD="")
    assert r["mode"] == "copies"
    assert len(r["caveats"]) == 1 and r["caveats"][0].startswith("libc reads TZ itself"), r
    r = run_code(CAVEATS, VLCS_MODE="namespace", LD_PRELOAD="")
    assert r == {"mode": "namespace", "caveats": []}

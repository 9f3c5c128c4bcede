"""pybind11 keeps per-interpreter state beside its type registry (3.x: a
module cache and module-local internals in the interpreter's dict); each
owner has its own, so scipy.fft and matplotlib (pybind11 modules) work in
two contexts and the base, each giving the plain import's results."""

from __future__ import annotations

import importlib.util
import os

import pytest
from test_imports import run_code

pytestmark = [
    pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs"),
    pytest.mark.skipif(
        importlib.util.find_spec("scipy") is None or importlib.util.find_spec("matplotlib") is None,
        reason="scipy and matplotlib are not installed (./run installs them)",
    ),
]

CASE = r"""
import io, json, vlcs
a, b = vlcs.VLC(cpus="0", name="a"), vlcs.VLC(cpus="1", name="b")

def fft(np, sf):
    return [[z.real, z.imag] for z in sf.fft(np.asarray([1.0, 2.0, 3.0, 4.0])).tolist()]

def png(mpl):
    plt = mpl.pyplot
    fig, ax = plt.subplots(figsize=(3, 2), dpi=50)
    ax.plot([0, 1, 2], [0, 1, 4])
    ax.set_title("vlcs")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()

# Imports one context after the other: while a module executes, sys.modules
# holds it under its plain name, where another context's concurrent import
# could see it half made (the module-table redesign of the Python stack
# issue removes that); the computations below run concurrently.
def load():
    import numpy, scipy.fft, matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot
    return numpy, scipy.fft, matplotlib

with a:
    na, fa, ma = load()
with b:
    nb, fb, mb = load()
# concurrently, each on a thread of its context
futs = [a.submit(fft, na, fa), b.submit(fft, nb, fb), a.submit(png, ma), b.submit(png, mb)]
fft_a, fft_b, png_a, png_b = [f.result() for f in futs]
n0, f0, m0 = load()
print(json.dumps({
    "distinct": len({id(fa), id(fb), id(f0)}) == 3,
    "fft_a": fft_a, "fft_b": fft_b, "fft_base": fft(n0, f0),
    "png_a_equals_base": png_a == png(m0), "png_b_equals_base": png_b == png(m0),
}))
"""


def test_scipy_fft_and_matplotlib_in_two_contexts_and_the_base():
    r = run_code(CASE, timeout=300)
    assert r["distinct"], r
    assert r["fft_a"] == r["fft_b"] == r["fft_base"] == [[10, 0], [-2, 2], [-2, 0], [-2, -2]], r
    assert r["png_a_equals_base"] and r["png_b_equals_base"], r


# Another thread runs all the while a context's module initialises; what it
# finds in the interpreter's dict must stay the base's.  vlcs used to swap
# the owner's registries into it around each extension module's exec: a
# thread of another context that called pybind11 then (scipy's cdist, a
# first call) used the wrong owner's call-once storage, which pybind11 3
# freed under it (a heap corruption, about one run in a hundred on
# CPython 3.12).  A profile function in the importing thread sees the dict
# at every call the import makes, C calls included.
UNTOUCHED = r"""
import ctypes, json, sys, vlcs
api = ctypes.pythonapi  # vlcs's prototypes are its own: these do not change them
api.PyInterpreterState_Get.restype = ctypes.c_void_p
api.PyInterpreterState_GetDict.restype = ctypes.py_object
api.PyInterpreterState_GetDict.argtypes = [ctypes.c_void_p]
interp = api.PyInterpreterState_GetDict(api.PyInterpreterState_Get())

import scipy.fft  # the base's pybind11 registries
def pybind11_entries():
    return {k: id(v) for k, v in list(interp.items()) if "pybind11" in str(k)}
base = pybind11_entries()

seen = {"calls": 0, "changed": 0}
def watch(frame, event, arg):
    seen["calls"] += 1
    if pybind11_entries() != base:
        seen["changed"] += 1

def imported_watched():
    sys.setprofile(watch)
    try:
        import scipy.fft, scipy.spatial.distance
        return scipy.fft.fft([1.0, 2.0, 3.0, 4.0]).real.tolist()
    finally:
        sys.setprofile(None)

b = vlcs.VLC(cpus="1", name="b")
fft_b = b.submit(imported_watched).result()
mine = {k for k in b._owner.state_dict if "pybind11" in str(k)}
print(json.dumps({
    "calls": seen["calls"], "changed": seen["changed"], "fft_b": fft_b,
    "base_has_its_own": bool(base) and pybind11_entries() == base,
    "context_has_its_own": bool(mine) and all(
        id(b._owner.state_dict[k]) != base.get(k) for k in mine),
}))
"""


def test_a_context_importing_leaves_the_interpreters_dict_alone():
    r = run_code(UNTOUCHED, timeout=300)
    assert r["calls"] > 100, r  # the watch saw the import at work
    assert r["changed"] == 0, f"another thread saw the context's registries: {r}"
    assert r["fft_b"] == [10.0, -2.0, -2.0, -2.0]
    assert r["base_has_its_own"] and r["context_has_its_own"], r

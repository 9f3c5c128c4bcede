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

"""Smoke tests of well-known packages, run by the child in both contexts
at once and in the base: each imports what it uses and returns plain
values, which must be equal."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any


def plain(x: Any) -> Any:
    """x with floats rounded to 9 significant digits and tuples as lists."""
    if isinstance(x, float):
        return float(f"{x:.9g}")
    if isinstance(x, dict):
        return {str(k): plain(v) for k, v in sorted(x.items(), key=lambda kv: str(kv[0]))}
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    return x


def _smoke_numpy() -> Any:
    import numpy

    return float(numpy.linalg.norm(numpy.arange(10.0)))


def _smoke_scipy() -> Any:
    import scipy.fft

    return scipy.fft.fft([1, 2, 3, 4]).real.tolist()


def _smoke_pandas() -> Any:
    import pandas

    df = pandas.DataFrame({"k": ["x", "y", "x", "z", "y"], "v": [0.5, 1.0, 2.0, 3.0, 4.5]})
    return {str(k): float(v) for k, v in df.groupby("k")["v"].sum().items()}


def _smoke_sklearn() -> Any:
    import numpy
    from sklearn.cluster import KMeans

    x = numpy.array([[0, 0], [0, 1], [1, 0], [10, 10], [10, 11], [11, 10]], dtype=float)
    return KMeans(n_clusters=2, n_init=1, random_state=0).fit(x).labels_.tolist()


def _smoke_matplotlib() -> Any:
    import hashlib

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(2, 2), dpi=50)
    FigureCanvasAgg(fig)
    fig.add_subplot().plot([0, 1, 2, 3], [0, 1, 4, 9])
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return hashlib.sha256(buf.getvalue()).hexdigest()


def _smoke_psutil() -> Any:
    import psutil

    return psutil.cpu_count()


def _smoke_numexpr() -> Any:
    import numexpr
    import numpy

    return numexpr.evaluate("a*2", {"a": numpy.arange(3)}).tolist()


def _smoke_pyarrow() -> Any:
    import pyarrow

    return pyarrow.array([1, 2, 3]).sum().as_py()


def _smoke_h5py() -> Any:
    import h5py
    import numpy

    raw = io.BytesIO()
    with h5py.File(raw, "w") as f:
        f.create_dataset("x", data=numpy.arange(10.0), compression="gzip")
    with h5py.File(io.BytesIO(raw.getvalue()), "r") as f:
        return float(f["x"][:].sum())


def _smoke_threadpoolctl() -> Any:
    import threadpoolctl

    try:  # something with a pool to find, when there is one
        import numpy  # noqa: F401
    except ImportError:
        pass
    with threadpoolctl.threadpool_limits(limits=1):
        limited = {p["num_threads"] for p in threadpoolctl.threadpool_info()}
    return {
        "apis": sorted({p["user_api"] for p in threadpoolctl.threadpool_info()}),
        "limited": sorted(limited),
    }


def _smoke_statsmodels() -> Any:
    import numpy
    import statsmodels.api as sm

    x = sm.add_constant(numpy.arange(10.0))
    return sm.OLS(3.0 + 2.0 * numpy.arange(10.0), x).fit().params.tolist()


def _smoke_numba() -> Any:
    import numpy
    from numba import njit

    @njit
    def dot(a: Any, b: Any) -> float:
        s = 0.0
        for i in range(a.shape[0]):
            s += a[i] * b[i]
        return s

    a = numpy.arange(100.0)
    return float(dot(a, a))


def _smoke_cv2() -> Any:
    import cv2
    import numpy

    img = numpy.zeros((16, 16), numpy.float32)
    img[8, 8] = 1.0
    return float(cv2.GaussianBlur(img, (5, 5), 1.0).sum())


def _smoke_protobuf() -> Any:
    from google.protobuf import descriptor_pb2

    msg = descriptor_pb2.FileDescriptorProto(name="t.proto", package="p")
    return msg.SerializeToString().hex()


def _smoke_tomli() -> Any:
    import tomli

    return repr(tomli.loads("[owner]\ndob = 1979-05-27T07:32:00Z\nports = [1, 2]\n"))


def _smoke_chardet() -> Any:
    import chardet

    return chardet.detect("Größe und schöne Grüße aus Köln".encode("latin-1"))


def _smoke_torch() -> Any:
    import torch

    return torch.ones(3).sum().item()


SMOKE: dict[str, tuple[Callable[[], Any], bool]] = {
    "numpy": (_smoke_numpy, False),
    "scipy": (_smoke_scipy, False),
    "pandas": (_smoke_pandas, False),
    "sklearn": (_smoke_sklearn, False),
    "matplotlib": (_smoke_matplotlib, False),
    "psutil": (_smoke_psutil, True),
    "numexpr": (_smoke_numexpr, False),
    "pyarrow": (_smoke_pyarrow, False),
    "h5py": (_smoke_h5py, False),
    "threadpoolctl": (_smoke_threadpoolctl, False),
    "statsmodels": (_smoke_statsmodels, False),
    "numba": (_smoke_numba, False),
    "cv2": (_smoke_cv2, False),
    "google.protobuf": (_smoke_protobuf, False),
    "tomli": (_smoke_tomli, False),
    "chardet": (_smoke_chardet, False),
    "torch": (_smoke_torch, False),
}
"""Known smoke tests by import name: (function, whether its result is the
owner's CPU count rather than one value for all)."""

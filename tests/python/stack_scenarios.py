"""The scientific Python stack in two contexts at once, then in the base
(python stack_scenarios.py NAME, a fresh process per case, for test_stack.py).

Each job imports its packages itself and returns plain values.  It runs on a
thread of context a (CPU 0) and of context b (CPU 1) concurrently, then in
the base, which had imported none of the job's packages before: the three
results must be equal, each from its own copy of the packages."""

from __future__ import annotations

import importlib
import io
import json
import os
import sys

import vlcs


def _r(x: float) -> float:
    return float(f"{float(x):.9g}")


def pandas_job():
    import numpy as np
    import pandas as pd

    df = pd.DataFrame({"k": ["x", "y", "x", "z", "y"], "v": np.arange(5.0)})
    sums = df.groupby("k")["v"].sum().to_dict()
    days = pd.date_range("2024-02-27", periods=4, freq="D")
    buf = io.BytesIO()
    df.to_parquet(buf)  # through pyarrow
    back = pd.read_parquet(io.BytesIO(buf.getvalue()))
    return {
        "groupby": sums,
        "days": [str(d.date()) for d in days],
        "weekday": days.day_name().tolist(),
        "delta": str(pd.Timedelta("1 day 3h") * 2),
        "parquet": back.equals(df),
    }


def sklearn_job():
    import numpy as np
    import threadpoolctl
    from sklearn.cluster import KMeans
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    x = np.vstack([rng.normal(0, 1, (60, 3)), rng.normal(5, 1, (60, 3))])
    y = np.repeat([0, 1], 60)
    km = KMeans(n_clusters=2, n_init=2, random_state=0).fit(x)
    lr = LogisticRegression().fit(x, y)
    return {
        "kmeans_sizes": sorted(np.bincount(km.labels_).tolist()),
        "inertia": _r(km.inertia_),
        "logreg": int(lr.predict(x).sum()),
        # scikit-learn's own pools, as threadpoolctl (which it uses inside) sees them
        "pools": sorted({p["user_api"] for p in threadpoolctl.threadpool_info()}),
    }


def scipy_job():
    import numpy as np
    from scipy import fft, integrate, optimize, signal, sparse
    from scipy.sparse import linalg as sla
    from scipy.spatial import distance

    m = sparse.diags([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    return {
        "fft": [_r(v) for v in fft.fft([1.0, 2.0, 3.0, 4.0]).real],
        "rosen": [_r(v) for v in optimize.minimize(optimize.rosen, [1.3, 0.7]).x.round(4)],
        "quad": _r(integrate.quad(np.sin, 0, np.pi)[0]),
        "lfilter": [_r(v) for v in signal.lfilter([1.0], [1.0, -0.5], [1.0, 0, 0, 0])],
        "eigsh": [_r(v) for v in sorted(sla.eigsh(m, k=2, which="LA")[0])],
        "cdist": _r(distance.cdist([[0, 0], [1, 1]], [[1, 0]]).sum()),
    }


def numba_job():
    import numpy as np
    from numba import njit, prange

    @njit
    def dot(a, b):
        s = 0.0
        for i in range(a.shape[0]):
            s += a[i] * b[i]
        return s

    @njit(parallel=True)
    def psum(a):
        s = 0.0
        for i in prange(a.shape[0]):
            s += a[i]
        return s

    a = np.arange(1000.0)
    return {"dot": _r(dot(a, a)), "psum": _r(psum(a))}


def pyarrow_job():
    import pyarrow as pa
    import pyarrow.compute as pc

    t = pa.table({"k": ["a", "b", "a"], "v": [1, 2, 3]})
    g = t.group_by("k").aggregate([("v", "sum")]).sort_by("k")
    return {"sum": pc.sum(t["v"]).as_py(), "groupby": g.to_pydict()}


def cv2_job():
    import cv2
    import numpy as np

    img = np.zeros((16, 16), np.float32)
    img[8, 8] = 1.0
    return {"blur": _r(cv2.GaussianBlur(img, (5, 5), 1.0).sum()), "has": hasattr(cv2, "imread")}


def statsmodels_job():
    import numpy as np
    import statsmodels.api as sm

    x = sm.add_constant(np.arange(10.0))
    y = 3.0 + 2.0 * np.arange(10.0)
    return {"ols": [_r(v) for v in sm.OLS(y, x).fit().params]}


def protobuf_job():
    from google.protobuf import descriptor_pb2, struct_pb2

    s = struct_pb2.Struct()
    s.update({"a": 1.5, "b": "x"})
    f = descriptor_pb2.FileDescriptorProto(name="t.proto", package="p")
    back = descriptor_pb2.FileDescriptorProto.FromString(f.SerializeToString())
    return {"struct": dict(s), "roundtrip": back.name + "/" + back.package}


def counts_job():
    import numexpr
    import numpy as np
    import psutil

    return {
        "psutil": psutil.cpu_count(),
        "numexpr_cores": numexpr.detect_number_of_cores(),
        "numexpr": numexpr.evaluate("a * 2 + 1", {"a": np.arange(3)}).tolist(),
    }


def mypyc_job():
    # charset-normalizer ships mypyc-compiled modules (md, cd): they use libm
    # without linking it
    from charset_normalizer import from_bytes

    return {"encoding": from_bytes("héllo wörld, ça va".encode()).best().encoding}


def mypyc_imports_job():
    # tomli and chardet come from a newer mypyc, whose compiled modules import
    # one another by reading and writing the module dict with PyDict_* calls
    import chardet
    import tomli

    doc = tomli.loads('title = "vlcs"\n[owner]\ndob = 1979-05-27T07:32:00Z\n[db]\nports = [1, 2]\n')
    guess = chardet.detect("Größe, Übermut und schöne Grüße aus Köln".encode("latin-1"))
    return {"toml": repr(doc), "chardet": [guess["encoding"], round(guess["confidence"], 6)]}


def torch_job():
    import torch

    return {"sum": float((torch.ones(3) * 2).sum()), "threads": torch.get_num_threads()}


def mkl_job():
    # mkl-service and mkl_fft bind oneMKL's single library, libmkl_rt, which
    # opens its core, threading layer and Intel's OpenMP RTLD_GLOBAL
    import mkl
    import mkl_fft
    import numpy as np

    x = np.cos(np.arange(64.0))
    y = mkl_fft.fft(x)
    return {
        "threads": mkl.get_max_threads(),
        "fft": [_r(v) for v in (y.real[:4].tolist() + y.imag[:4].tolist())],
        "roundtrip": bool(np.allclose(mkl_fft.ifft(y).real, x)),
    }


def mpi_job():
    # mpi4py over the system's Open MPI: each owner's MPI_Init starts a
    # singleton of its own copy, whose components (plugins Open MPI opens
    # itself) bind to that copy's libraries
    import numpy as np
    from mpi4py import MPI

    x = np.arange(8.0)
    y = np.empty_like(x)
    MPI.COMM_SELF.Allreduce(x, y, op=MPI.SUM)
    z = MPI.COMM_WORLD.allreduce(3, op=MPI.SUM)
    return {
        "library": MPI.Get_library_version().split(",")[0],
        "world": MPI.COMM_WORLD.Get_size(),
        "sum": y.tolist(),
        "allreduce": z,
        "initialized": MPI.Is_initialized(),
    }


TOPS = {
    "pandas": ["pandas", "pyarrow", "numpy"],
    "sklearn": ["sklearn", "numpy", "scipy", "threadpoolctl"],
    "scipy": ["scipy", "numpy"],
    "numba": ["numba", "llvmlite", "numpy"],
    "pyarrow": ["pyarrow"],
    "cv2": ["cv2", "numpy"],
    "statsmodels": ["statsmodels", "pandas", "scipy", "numpy"],
    "protobuf": ["google"],
    "counts": ["psutil", "numexpr", "numpy"],
    "mypyc": ["charset_normalizer"],
    "mypyc_imports": ["tomli", "chardet"],
    "torch": ["torch", "numpy"],
    "mkl": ["mkl", "mkl_fft", "numpy"],
    "mpi": ["mpi4py", "numpy"],
}


def run(name: str) -> dict:
    job = globals()[name + "_job"]
    two = len(os.sched_getaffinity(0)) >= 2
    a = vlcs.VLC(cpus="0", name="a")
    b = vlcs.VLC(cpus="1" if two else "0", name="b")
    fa, fb = a.submit(job), b.submit(job)
    ra, rb = fa.result(), fb.result()
    tops = TOPS[name]
    top = tops[0]
    mods = {
        "a": a.submit(importlib.import_module, top).result(),
        "b": b.submit(importlib.import_module, top).result(),
    }
    leaked = sorted({k.partition(".")[0] for k in sys.modules} & set(tops))
    rbase = job()
    mods["base"] = sys.modules[top]
    return {
        "a": ra,
        "b": rb,
        "base": rbase,
        "base_saw_before": leaked,
        "distinct_copies": len({id(m) for m in mods.values()}) == 3,
        "a_sees_its_own": a.submit(lambda: sys.modules[top]).result() is mods["a"],
    }


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1])))

"""Tasks for contexts with a Python of their own (test_own_python.py): found
by module and name in the worker's runtime, as a process pool finds them."""

from __future__ import annotations

import importlib
import os
import sys


def who() -> dict:
    """What the runtime running this is."""
    return {
        "sys_modules": id(sys.modules),
        "cpus": sorted(os.sched_getaffinity(0)),
        "executable": sys.executable,
        "path_has_tests": any(p.endswith(os.path.join("tests", "python")) for p in sys.path),
        "numpy_loaded": "numpy" in sys.modules,
        "env": os.environ.get("OWN_MARK"),
        "pythonhome": os.environ.get("PYTHONHOME"),
        # the bootstrap's stand-in for functools (while _pickle starts) is gone
        "functools_whole": hasattr(importlib.import_module("functools"), "lru_cache"),
    }


def numpy_work(n: int) -> dict:
    import numpy as np

    a = np.arange(n * n, dtype=float).reshape(n, n)
    return {
        "numpy": id(np),
        "ndarray": id(np.ndarray),
        "trace": float(np.trace(a @ a)),
        "file": np.__file__,
    }


def double_in_place(arr) -> int:
    arr *= 2
    return arr.__array_interface__["data"][0]


def fail(message: str) -> None:
    raise KeyError(message)


def ping_pong(buf, me: int, rounds: int) -> int:
    """Take turns with the other runtime through shared memory: wait (in
    pure Python) until buf[0] is my turn, pass it on; rounds times."""
    for _ in range(rounds):
        while buf[0] != me:
            pass
        buf[0] = 1 - me
    return rounds


MARK = None


def set_mark(value: str) -> None:
    global MARK
    MARK = value


def mark_and_runtime(_: int) -> tuple:
    return MARK, id(sys.modules), sorted(os.sched_getaffinity(0))


def c_api_and_global_load() -> dict:
    """ctypes.pythonapi's PyTuple_New, and a library loaded RTLD_GLOBAL."""
    import ctypes

    z = ctypes.CDLL("libz.so.1", mode=ctypes.RTLD_GLOBAL)
    z.zlibVersion.restype = ctypes.c_char_p
    return {
        "tuple_new": ctypes.cast(ctypes.pythonapi.PyTuple_New, ctypes.c_void_p).value,
        "initialized": ctypes.pythonapi.Py_IsInitialized(),
        "zlib": z.zlibVersion().decode(),
    }


def identity(x):
    return x


def make_ones(n: int) -> tuple:
    import numpy as np

    a = np.ones(n, dtype=np.uint8)
    return a, a.__array_interface__["data"][0]


def held() -> int:
    """Results of this runtime whose memory the caller's views still use."""
    import __main__

    return len(__main__._vlcs_held)


def at_exit_writes(path: str) -> None:
    import atexit

    atexit.register(lambda: open(path, "w").write("the worker's handler ran"))


def exit_with(code: int) -> None:
    raise SystemExit(code)


def wait_for(token) -> str:
    """Say it started (token[1] = 1), then spin until the caller sets
    token[0] (an array shared with it)."""
    token[1] = 1
    while token[0] == 0:
        pass
    return "released"


def vlcs_in_worker() -> str:
    """vlcs imported by the worker's runtime: libvlcs is the process's one."""
    import vlcs
    from vlcs._lib import lib

    return f"{vlcs.__version__} {lib().vlcs_version().decode()}"


TASKS_RUN = 0


def count_and_numpy(n: int) -> tuple:
    """How many tasks this runtime has run, this one included, and a small
    GEMM's trace from its numpy."""
    global TASKS_RUN
    import numpy as np

    TASKS_RUN += 1
    a = np.arange(n * n, dtype=float).reshape(n, n)
    return TASKS_RUN, float(np.trace(a @ a))


STACK = ("numpy", "scipy", "pandas", "sklearn", "h5py", "torch")


def stack_work(packages: list[str], folder: str) -> dict:
    """Each package of the scientific stack imported and used; its answers,
    and which module objects and files answered (to tell runtimes apart)."""
    import importlib

    mods = {p: importlib.import_module(p) for p in packages}
    np = mods["numpy"]
    rng = np.random.default_rng(7)
    a, b = rng.random((40, 40)) + 40 * np.eye(40), rng.random(40)
    out: dict = {"ids": {p: id(m) for p, m in mods.items()}, "answers": {}}
    answers = out["answers"]
    answers["numpy"] = float((a @ b).sum())
    if "scipy" in mods:
        import scipy.linalg

        answers["scipy"] = scipy.linalg.solve(a, b).tolist()
    if "pandas" in mods:
        df = mods["pandas"].DataFrame({"k": list("abcab"), "v": [1.0, 2.0, 3.0, 4.0, 5.0]})
        answers["pandas"] = df.groupby("k")["v"].sum().to_dict()
    if "sklearn" in mods:
        from sklearn.linear_model import Ridge

        answers["sklearn"] = Ridge(alpha=1.0).fit(a, b).coef_.tolist()
    if "h5py" in mods:
        path = os.path.join(folder, f"{id(sys.modules)}.h5")
        with mods["h5py"].File(path, "w") as f:
            f.create_dataset("a", data=a, compression="gzip")
        with mods["h5py"].File(path, "r") as f:
            answers["h5py"] = float(f["a"][...].sum())
    if "torch" in mods:
        torch = mods["torch"]
        torch.manual_seed(0)
        product = float((torch.from_numpy(a) @ torch.from_numpy(b)).sum())
        answers["torch"] = [product, *torch.randn(3).tolist()]
    return out

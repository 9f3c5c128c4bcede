"""Real-library scenarios for test_imports.py, each run in a fresh process
(python scenarios.py NAME) so that a crash fails one test, not the session.
Each prints one JSON object of facts; the tests assert on them."""

from __future__ import annotations

import json
import os
import sys

import vlcs


def _pair(a_env=None, b_env=None):
    a = vlcs.VLC(cpus="0", env=a_env or {}, name="a")
    b = vlcs.VLC(cpus="0-1", env=b_env or {}, name="b")
    return a, b


def numpy_case():
    import numpy as np  # the base's copy, imported first

    before = dict(sys.modules)
    a, b = _pair({"OPENBLAS_NUM_THREADS": "1"}, {"OPENBLAS_NUM_THREADS": "2"})
    with a:
        import numpy as np_a
    with b:
        import numpy as np_b
    import numpy as np_again

    m = np.random.default_rng(1).random((200, 200))
    ma, mb = np_a.asarray(m), np_b.asarray(m)
    ra = a.submit(np_a.matmul, ma, ma).result()
    rb = b.submit(np_b.matmul, mb, mb).result()
    return {
        "distinct": len({id(np), id(np_a), id(np_b)}) == 3,
        "ndarray_types_distinct": np_a.ndarray is not np_b.ndarray,
        "base_same_object": np_again is np,
        "base_names_kept": all(
            sys.modules.get(k) is v or k.partition(".")[0] == "numpy" for k, v in before.items()
        ),
        "pools": {c.name: [p["num_threads"] for p in c.threadpools()] for c in (a, b)},
        # OpenBLAS's last bits depend on its thread count (1 in a, 2 in b and
        # the base: numpy 2.2's differ by 1e-13 in the plain base too)
        "matmul_a_equal": bool(np.allclose(np.asarray(ra), m @ m, rtol=1e-12, atol=0)),
        "matmul_b_equal": bool(np.allclose(np.asarray(rb), m @ m, rtol=1e-12, atol=0)),
        # an array crossing from a's numpy to b's keeps every bit
        "a_to_b": bool(np.array_equal(np.asarray(np_b.asarray(ra)), np.asarray(ra))),
        "buffer": bool(np.array_equal(np.frombuffer(memoryview(ma), dtype=np.float64), m.ravel())),
        # a context's numpy used from base code after the block (lazy C caches)
        "a_from_base_sum": float(np_a.ones(4).sum()),
        "base_sum_after": float(np.ones(3).sum()),
        # numpy's C code reads numpy._core._dtype.__repr__ through sys.modules
        "dtype_reprs": [
            str(np.dtype("float32")),
            repr(np.arange(2, dtype=np.float32)),
            a.submit(lambda: repr(np_a.arange(2, dtype=np_a.float32))).result(),
            b.submit(lambda: str(np_b.dtype("int16"))).result(),
        ],
        "a_type": type(ra).__module__ + "." + type(ra).__name__,
        "a_is_a": type(ra) is np_a.ndarray,
    }


def imports_case():
    import numpy as np_base

    a = vlcs.VLC(cpus="0", name="a")
    before = set(sys.modules)
    with a:
        import lazypkg as la
        import numpy as np_a
    import lazypkg as lb

    out = {
        "base_lazypkg_separate": la is not lb,
        "call_time_import": la.which_numpy() is np_a,
        "call_time_import_other_thread": la.which_numpy_from_thread() is np_a,
        "import_module": la.submodule() is not lb.submodule(),
        "submodule_numpy": la.submodule().np is np_a,
        "base_call_time_import": lb.which_numpy() is np_base,
        "in_a_statement": None,
        "executor_import": a.submit(__import__, "numpy").result() is np_a,
        "modules_listed": "lazypkg" in a.modules and "numpy" in a.modules,
    }
    with a:
        import numpy as again

        out["in_a_statement"] = again is np_a
    # errors: a failing import leaves the context usable and the base untouched
    keys = set(sys.modules)
    try:
        with a:
            import broken_pkg  # noqa: F401
        out["broken"] = "no error"
    except ImportError as e:
        out["broken"] = str(e)
    out["broken_base_untouched"] = "broken_pkg" not in sys.modules and set(sys.modules) <= keys
    try:
        with a:
            import vlcs_no_such_module  # noqa: F401
    except ModuleNotFoundError as e:
        out["missing"] = e.name
    with a:
        import lazypkg as la2
    out["usable_after_errors"] = la2 is la and la2.which_numpy() is np_a
    # (the standard library, shared, and vlcs's own modules, imported at
    # their first use, such as a context's thread pool, are the base's)
    out["new_base_names"] = sorted(
        k
        for k in set(sys.modules) - before
        if not k.startswith(("lazypkg", "numpy", "vlcs."))
        and k.partition(".")[0] not in sys.stdlib_module_names
    )
    return out


def addmodule_case():
    # Two contexts and the base import a module that keeps a type in a module
    # made by PyImport_AddModule (Cython 3.0's shared-ABI idiom, scipy < 1.16).
    a, b = _pair()
    out = {}
    types = []
    for ctx in (a, b, None):
        try:
            if ctx is None:
                import abi_user as m
            else:
                with ctx:
                    import abi_user as m
            types.append(m.shared_type)
            out[ctx.name if ctx else "base"] = "ok"
        except Exception as e:  # reported, not raised: the test shows which failed
            out[ctx.name if ctx else "base"] = f"{type(e).__name__}: {e}"
    out["distinct_types"] = len({id(t) for t in types}) == 3
    with a:
        out["a_reads_its_own"] = sys.modules["_vlcs_test_abi_0_1"].function_type is types[0]
    out["base_reads_its_own"] = sys.modules["_vlcs_test_abi_0_1"].function_type is types[2]
    return out


def _h5_write(h5py, np, path):
    data = np.random.default_rng(0).random((300, 400))
    with h5py.File(path, "w") as f:
        for i in range(6):
            f.create_dataset(f"d{i}", data=data + i, compression="gzip", compression_opts=6)
    with h5py.File(path, "r") as f:
        return float(sum(float(f[k][...].sum()) for k in f))


def h5py_case():
    import tempfile

    tmp = tempfile.mkdtemp()
    a, b = _pair()
    with a:
        import h5py as h_a
        import numpy as np_a
    with b:
        import h5py as h_b
        import numpy as np_b
    with a:
        seq = _h5_write(h_a, np_a, f"{tmp}/seq.h5")
    fa = a.submit(_h5_write, h_a, np_a, f"{tmp}/a.h5")
    fb = b.submit(_h5_write, h_b, np_b, f"{tmp}/b.h5")
    sums = [fa.result(), fb.result()]
    import h5py
    import numpy as np

    same = True
    for name in ("a.h5", "b.h5"):
        with h5py.File(f"{tmp}/{name}") as f, h5py.File(f"{tmp}/seq.h5") as g:
            same &= sorted(f) == sorted(g) and all(np.array_equal(f[k][...], g[k][...]) for k in g)
    with a:
        fa_file = h_a.File(f"{tmp}/a.h5", "r")
        ds_id = fa_file["d0"].id
    try:
        with b:
            h_b.Dataset(ds_id)
        mixed = "no error"
    except (TypeError, ValueError) as e:
        mixed = f"{type(e).__name__}: {e}"
    return {
        "sums_equal": sums == [seq, seq],
        "files_equal_plain_h5py": bool(same),
        "mixed": mixed,
        "alive_after_mix": float(np_a.ones(2).sum()) == 2.0,
    }


def _scipy_job(sla, si, sp, np):
    m = sp.random(1500, 1500, density=0.003, random_state=3)
    m = m + m.T + sp.eye(1500) * 5
    w = sla.eigsh(m, k=4, which="LM", v0=np.ones(1500))[0]
    sol = si.solve_ivp(lambda t, y: -0.5 * y + np.sin(t), (0, 10), [1.0, 2.0], rtol=1e-8)
    return [float(x) for x in np.sort(w)] + [float(x) for x in sol.y[:, -1]]


def scipy_case():
    a, b = _pair()
    mods = {}
    for c in (a, b):
        with c:
            import numpy
            import scipy.integrate
            import scipy.sparse
            import scipy.sparse.linalg
        mods[c.name] = (scipy.sparse.linalg, scipy.integrate, scipy.sparse, numpy)
    with a:
        ref = _scipy_job(*mods["a"])
    fa = a.submit(_scipy_job, *mods["a"])
    fb = b.submit(_scipy_job, *mods["b"])
    return {
        "distinct": mods["a"][0] is not mods["b"][0],
        "a_equal": fa.result() == ref,
        "b_equal": fb.result() == ref,
    }


def _train(torch, seed):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(256, 32), torch.randn(256, 1)
    for _ in range(15):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
    return float(loss.item())


def torch_case():
    a, b = _pair()
    with a:
        import torch as t_a
    with b:
        import torch as t_b
    with a:
        ref = _train(t_a, 0)
    fa = a.submit(_train, t_a, 0)
    fb = b.submit(_train, t_b, 0)
    return {
        "distinct": t_a is not t_b and t_a.Tensor is not t_b.Tensor,
        "threads": [t_a.get_num_threads(), t_b.get_num_threads()],
        "losses_equal": [fa.result(), fb.result()] == [ref, ref],
    }


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "data"))
    print(json.dumps(globals()[sys.argv[1] + "_case"]()))
    sys.stdout.flush()

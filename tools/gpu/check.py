"""One GPU scenario of tools/gpu/run.sh, as JSON on stdout.

    python -m vlcs run -- python tools/gpu/check.py torch|cupy|pool

torch: three contexts import torch (each its own copy), two given GPU 0 and
one none, each runs a 2048x2048 product on the GPU and checks it against the
same product on the CPU; then the base does the same with its own torch.
cupy: two contexts import CuPy and do the same.  pool: a ContextPoolExecutor
of two workers sharing GPU 0, each task a product in the worker's torch.
Every scenario also reports how many copies of NVIDIA's driver are mapped
(one is right) and vlcs's automatic services.  A scenario that cannot run
(no GPU, no CuPy) says why in its JSON rather than failing.
"""

from __future__ import annotations

import json
import sys
import time
import traceback

import vlcs

N = 2048


def torch_product(n: int = N) -> dict:
    """A product on the GPU against the CPU's, in the calling context's torch."""
    import torch

    out = {
        "torch": torch.__version__,
        "torch_id": id(torch),
        "cuda_available": torch.cuda.is_available(),
        "device_count": torch.cuda.device_count(),
    }
    if out["device_count"] == 0:
        return out
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(n, n, generator=g), torch.randn(n, n, generator=g)
    want = a.double() @ b.double()
    t = time.perf_counter()
    got = (a.cuda() @ b.cuda()).cpu().double()
    out["seconds"] = round(time.perf_counter() - t, 4)
    out["device_name"] = torch.cuda.get_device_name(0)
    out["max_rel_error"] = float(((got - want).abs().max() / want.abs().max()).item())
    out["checksum"] = float(got.sum().item())
    out["right"] = out["max_rel_error"] < 1e-3
    return out


def cupy_product(n: int = N) -> dict:
    import cupy
    import numpy as np

    out = {
        "cupy": cupy.__version__,
        "cupy_id": id(cupy),
        "device_count": cupy.cuda.runtime.getDeviceCount(),
    }
    if out["device_count"] == 0:
        return out
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    got = cupy.asnumpy(cupy.asarray(a) @ cupy.asarray(b))
    want = a @ b
    out["max_rel_error"] = float(np.abs(got - want).max() / np.abs(want).max())
    out["checksum"] = float(got.sum())
    out["right"] = out["max_rel_error"] < 1e-9
    return out


def driver_copies() -> int:
    """Copies of NVIDIA's driver mapped in this process (its file at offset 0)."""
    with open("/proc/self/maps") as f:
        return sum(
            1
            for line in f
            if line.split()[2:3] == ["00000000"]
            and line.split()[-1].rsplit("/", 1)[-1].startswith("libcuda.so")
        )


def guarded(fn, *args) -> dict:
    try:
        return fn(*args)
    except Exception as e:  # recorded: the other parts still run
        return {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()[-2000:]}


def in_context(ctx: vlcs.VLC, fn) -> dict:
    with ctx:
        r = guarded(fn)
    r["context"], r["gpus"] = ctx.name, ctx.gpus
    return r


def scenario_torch() -> dict:
    ctxs = [vlcs.VLC(gpus="0", name="a"), vlcs.VLC(gpus="", name="b"), vlcs.VLC(gpus="0", name="c")]
    contexts = [in_context(c, torch_product) for c in ctxs]
    base = guarded(torch_product)
    base["context"] = "base"
    ids = {r.get("torch_id") for r in contexts + [base]}
    return {"contexts": contexts, "base": base, "private_torch_copies": len(ids) == 4}


def scenario_cupy() -> dict:
    ctxs = [vlcs.VLC(gpus="0", name="x"), vlcs.VLC(gpus="0", name="y")]
    contexts = [in_context(c, cupy_product) for c in ctxs]
    return {"contexts": contexts}


def pool_task(n: int) -> dict:
    r = guarded(torch_product, n)
    cur = vlcs.current()
    r["worker"] = cur.name if cur is not None else None
    r["gpus"] = cur.gpus if cur is not None else None
    return r


def scenario_pool() -> dict:
    with vlcs.ContextPoolExecutor(max_workers=2, gpus="0") as pool:
        shares = pool.worker_gpus
        results = [f.result() for f in [pool.submit(pool_task, 1024) for _ in range(4)]]
    return {"worker_gpus": shares, "tasks": results}


def main() -> int:
    name = sys.argv[1] if len(sys.argv) > 1 else "torch"
    t = time.perf_counter()
    result = guarded({"torch": scenario_torch, "cupy": scenario_cupy, "pool": scenario_pool}[name])
    result.update(
        scenario=name,
        seconds=round(time.perf_counter() - t, 2),
        driver_copies=driver_copies(),
        auto_services=vlcs.auto_services(),
    )
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

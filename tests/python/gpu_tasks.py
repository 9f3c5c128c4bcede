"""What a CUDA runtime in the calling context reports (test_gpus.py): the
stand-in runtime of tests/c/lib, loaded with ctypes by the context's code, as
torch and CuPy load theirs; importable by a context's own runtime too."""

from __future__ import annotations

import ctypes


def devices(runtime: str) -> dict:
    """The runtime's answer: its error code and the names of its devices."""
    lib = ctypes.CDLL(runtime)
    n = ctypes.c_int(-1)
    rc = lib.rt_device_count(ctypes.byref(n))
    names = []
    for i in range(n.value if rc == 0 else 0):
        buf = ctypes.create_string_buffer(64)
        if lib.rt_device_name(i, buf, len(buf)) == 0:
            names.append(buf.value.decode())
    return {"rc": rc, "devices": names}


def worker_devices(runtime: str) -> dict:
    """devices(), with the name of the pool worker that ran it."""
    import vlcs

    return dict(devices(runtime), worker=vlcs.current().name)


def record(runtime: str, folder: str) -> None:
    """A pool worker's initializer: its devices, written to folder/NAME.json."""
    import json
    import os

    import vlcs

    name = vlcs.current().name
    with open(os.path.join(folder, f"{name}.json"), "w") as f:
        json.dump(devices(runtime), f)


def base_devices() -> dict:
    """The base's own driver: cuInit and the device count, as base CUDA sees it."""
    drv = ctypes.CDLL("libcuda.so.1")
    n = ctypes.c_int(-1)
    rc = drv.cuInit(0)
    if rc == 0:
        rc = drv.cuDeviceGetCount(ctypes.byref(n))
    return {"rc": rc, "count": n.value}


def driver_copies() -> int:
    """How many copies of the stand-in driver are mapped in this process."""
    with open("/proc/self/maps") as f:
        return sum(
            1
            for line in f
            if line.split()[2:3] == ["00000000"]
            and line.rstrip().endswith("fake_driver/libcuda.so.1")
        )

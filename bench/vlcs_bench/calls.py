"""``vlcs bench shim``: the cost of a call through a transparent-mode shim and
through the Service context, next to a direct call, and of a call into a
context through ``vlcs_ctx_call`` (faults contained) next to entering and
leaving around it, measured side by side in one process.  Builds its small
libraries and driver with the C compiler, as `vlcs shim` itself needs one."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

from vlcs import include_dir, native_dir
from vlcs.shim import generate

from vlcs_bench._build import CSRC

# The service's user calls its function in a loop: loaded into a context it
# binds to the base copy through the forwarder.  Sources live in csrc/calls_*.c.


def _shared(cc: str, out: Path, *inputs: object) -> None:
    """Compile a shared library."""
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", str(out), *map(str, inputs)], check=True)


def run() -> dict:
    """Build, run and return the figures (nanoseconds per call)."""
    cc = os.environ.get("CC", "cc")
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        for name in ("lib.c", "svc.c", "user.c", "driver.c"):
            (t / name).write_text((CSRC / f"calls_{name}").read_text())
        real = t / "real" / "libvlcsbench.so.1"
        real.parent.mkdir()
        _shared(cc, real, t / "lib.c", "-Wl,-soname,libvlcsbench.so.1")
        # The service is a library of its own, with a function name of its
        # own: otherwise the shim's stub of the same name, first in the base's
        # global scope, would take the base's calls.
        svc = t / "svc" / "libvlcsbenchsvc.so.1"
        svc.parent.mkdir()
        _shared(cc, svc, t / "svc.c", "-Wl,-soname,libvlcsbenchsvc.so.1")
        user = t / "libvlcsbenchuser.so"
        _shared(cc, user, t / "user.c", svc, f"-Wl,-rpath,{svc.parent}")
        shim_dir = t / "shim"
        generate(real, shim_dir, cc=cc)
        lib = native_dir()
        exe = t / "driver"
        subprocess.run(
            [
                cc,
                "-O2",
                "-o",
                str(exe),
                str(t / "driver.c"),
                str(real),
                f"-I{include_dir()}",
                f"-L{lib}",
                f"-Wl,-rpath,{lib}",
                "-lvlcs",
                "-ldl",
            ],
            check=True,
        )
        env = dict(os.environ, LD_LIBRARY_PATH=str(shim_dir))
        out = subprocess.run(
            [str(exe), str(real), "libvlcsbench.so.1", str(user), str(svc)],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        ).stdout
    r = json.loads(out)
    return {
        "benchmark": "shim",
        "calls": {
            "shim_call": {
                "direct_ns": r["direct_ns"],
                "shim_ns": r["shim_ns"],
                "overhead_ns": r["shim_ns"] - r["direct_ns"],
                "target_overhead_ns": 5,
                "meets_target": r["shim_ns"] - r["direct_ns"] <= 5,
            },
            "service_call": {
                "base_ns": r["service_base_ns"],
                "context_ns": r["service_context_ns"],
                "ratio": r["service_context_ns"] / r["service_base_ns"],
            },
            # vlcs_ctx_call (a fault contained) against vlcs_enter, the call
            # and vlcs_leave; and the base's own call before and after the
            # fault handlers were installed
            "guarded_call": {
                "enter_call_leave_ns": r["enter_call_leave_ns"],
                "ctx_call_ns": r["guarded_call_ns"],
                "ratio": r["guarded_call_ns"] / r["enter_call_leave_ns"],
                "base_before_handlers_ns": r["direct_before_handlers_ns"],
                "base_after_handlers_ns": r["direct_ns"],
            },
        },
    }

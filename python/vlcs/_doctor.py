"""What this machine and interpreter give vlcs (``vlcs doctor``).

One finding per thing vlcs depends on, each with what to do where it falls
short.  What can only be known by trying is tried, in a child interpreter
with this one's environment so that the caller's process keeps its
namespaces and static TLS: how many contexts with a namespace each hold
libgomp, whether strict mode's seccomp filters install, which GPU drivers
become services.
"""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import platform
import shutil
import subprocess
import sys
from typing import Any

# a finding's state, from good to bad
OK, NOTE, MISSING, FAIL = "ok", "note", "missing", "fail"

# contexts that the probe makes at most: glibc's 16 namespaces, less the base
NAMESPACES = 15


@dataclasses.dataclass
class Finding:
    """One line of ``vlcs doctor``: a thing vlcs depends on and its state."""

    name: str
    state: str  # OK, NOTE (works, with a limit worth knowing), MISSING, FAIL
    detail: str
    fix: str = ""


# Run in a child interpreter: contexts loading libgomp (initial-exec TLS, as
# OpenMP runtimes have) until one fails, then the automatic services as the
# first load left them.
_PROBE = """
import ctypes.util, json, sys
import vlcs
from vlcs._errors import VlcsError
library = ctypes.util.find_library("gomp") or "libm.so.6"
made, error = [], None
for i in range(%d):
    c = vlcs.VLC(name=f"doctor{i}")
    try:
        c.load(library)
    except VlcsError as e:
        error = str(e)
        break
    made.append(c.info().get("mode"))
print(json.dumps({"library": library, "made": made, "error": error,
                  "services": vlcs.auto_services(), "strict": vlcs.strict_active()}))
"""


def _probe(contexts: int, env: dict[str, str] | None = None) -> dict[str, Any]:
    """_PROBE's findings, or {"error": why} where the child failed."""
    try:
        p = subprocess.run(
            [sys.executable, "-c", _PROBE % contexts],
            capture_output=True,
            text=True,
            timeout=120,
            env=dict(os.environ, VLCS_MODE="namespace", **(env or {})),
        )
    except subprocess.TimeoutExpired:
        return {"failed": "the probe did not finish in 120 s"}
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
        return {"failed": last}
    return json.loads(p.stdout)


def _platform() -> Finding:
    machine = platform.machine()
    libc, version = platform.libc_ver()
    where = f"Linux {platform.release()} {machine}, {libc or 'no glibc'} {version}".strip()
    if sys.platform != "linux" or libc != "glibc":
        return Finding("platform", FAIL, where, "vlcs runs on Linux with glibc")
    if tuple(int(x) for x in version.split(".")[:2]) < (2, 34):
        return Finding("platform", FAIL, where, "vlcs needs glibc 2.34 or later")
    return Finding("platform", OK, where)


def _contexts(probe: dict[str, Any]) -> Finding:
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    setting = f"GLIBC_TUNABLES={tunables}" if tunables else "glibc's default tunables"
    if "failed" in probe:
        return Finding("contexts", FAIL, f"a context could not be made: {probe['failed']}")
    n, lib = len(probe["made"]), os.path.basename(probe["library"])
    detail = f"{n} contexts with a namespace each hold {lib} ({setting})"
    if n >= NAMESPACES:
        return Finding("contexts", OK, detail + "; more go to copy mode")
    why = (probe["error"] or "").split(": ", 1)[-1].split(";")[0]
    return Finding(
        "contexts",
        NOTE,
        f"{detail}; the next: {why}",
        "start programs with `vlcs run -- PROGRAM` (15 namespaces, static TLS for 400 "
        "OpenMP runtimes)",
    )


def _python() -> Finding:
    from vlcs import _interpreter

    r = _interpreter.report()
    name = f"CPython {platform.python_version()}"
    if r.get("linkage") is None:
        return Finding("python", FAIL, f"{name}: {r.get('error')}")
    where = (
        f"libpython {r['path']}"
        if r["linkage"] == "shared"
        else f"libpython inside the executable {r['executable']}"
    )
    if r.get("own_runtime_library"):
        return Finding(
            "python", OK, f"{name}, {where}; own runtimes start {r['own_runtime_library']}"
        )
    return Finding(
        "python",
        MISSING,
        f"{name}, {where}; contexts share this Python, python='own' cannot start: "
        f"{r.get('own_runtime_error')}",
        f"install the shared libpython ({r['soname']}: apt install libpython"
        f"{_interpreter.ldversion()}, or a CPython built --enable-shared)",
    )


def _strict(probe: dict[str, Any]) -> Finding:
    actions = "/proc/sys/kernel/seccomp/actions_avail"
    try:
        with open(actions) as f:
            avail = f.read().split()
    except OSError:
        avail = []
    if platform.machine() != "x86_64":
        return Finding(
            "strict",
            MISSING,
            f"strict mode's filters are x86_64's; this is {platform.machine()}",
            "strict mode runs on x86_64 only",
        )
    if "trap" not in avail:
        return Finding(
            "strict",
            MISSING,
            f"the kernel has no seccomp trap action ({actions}: {' '.join(avail) or 'unreadable'})",
            "strict mode needs a kernel with seccomp filters (CONFIG_SECCOMP_FILTER)",
        )
    if "failed" in probe or not probe.get("strict"):
        why = probe.get("failed", "vlcs.strict_active() is False with VLCS_STRICT=1")
        return Finding(
            "strict",
            MISSING,
            f"strict mode did not start: {why}",
            "see docs/security.md for what strict mode needs",
        )
    return Finding("strict", OK, "strict mode's seccomp filters install (VLCS_STRICT=1)")


def _hwloc() -> Finding:
    from vlcs import _topo
    from vlcs._errors import VlcsError

    try:
        path = _topo.hwloc_library()
        machine = _topo.describe()
    except VlcsError as e:
        return Finding(
            "hwloc",
            MISSING,
            str(e).split("; install")[0],
            "apt install libhwloc15, dnf install hwloc-libs, or "
            "pip install 'vlcs[hwloc]'; CPU lists like \"0-3\" work meanwhile",
        )
    counts = ", ".join(
        f"{len(machine[k])} {k}" for k in ("package", "numa", "core", "pu") if k in machine
    )
    return Finding("hwloc", OK, f'{path}: {counts}; places like "core:0-3" work')


def _cpus() -> Finding:
    from vlcs._cpus import format_list

    usable = sorted(os.sched_getaffinity(0))
    total = os.cpu_count() or len(usable)
    detail = f"{len(usable)} of {total} CPUs usable by this process: {format_list(usable)}"
    if len(usable) < 2:
        return Finding("cpus", NOTE, detail, "contexts on one CPU share it; give the job more")
    return Finding("cpus", OK, detail)


def _gpus(probe: dict[str, Any]) -> Finding:
    services = {s["name"]: s for s in probe.get("services", [])}
    devices = glob.glob("/dev/nvidia[0-9]*") + glob.glob("/dev/kfd")
    drivers = [n for n, s in services.items() if s["state"] == "service"]
    broken = [f"{n}: {s['why']}" for n, s in services.items() if s["state"] == "failed"]
    if broken:
        return Finding(
            "gpus",
            FAIL,
            "a GPU driver does not load: " + "; ".join(broken),
            "repair the driver, or leave it out with VLCS_AUTO_SERVICES=-NAME",
        )
    if not drivers:
        what = (
            f"{len(devices)} GPU device files but no driver library"
            if devices
            else ("no GPU driver (libcuda.so.1, libhsa-runtime64.so.1) on this machine")
        )
        return Finding("gpus", NOTE, f"{what}; contexts use CPUs only")
    return Finding(
        "gpus",
        OK,
        f"{', '.join(drivers)} shared by every context (one per "
        f"process); {len(devices)} device files; give contexts GPUs with gpus=",
    )


def _matplotlib() -> Finding:
    # as the drawing commands find it (an import, not only a spec)
    from vlcs._plots import pyplot

    if pyplot() is None:
        return Finding(
            "pictures",
            MISSING,
            "matplotlib does not import: vlcs tune, trace show, bench and demo write their "
            "data without charts",
            "pip install 'vlcs[plots]'",
        )
    import matplotlib

    return Finding("pictures", OK, f"matplotlib {matplotlib.__version__}")


def _compiler() -> Finding:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return Finding(
            "compiler",
            NOTE,
            "no C compiler: vlcs shim and vlcs-bench's C and C++ "
            "demos cannot build; everything else works",
            "apt install gcc g++ where those are wanted",
        )
    return Finding("compiler", OK, f"{cc}: vlcs shim and the C demos build")


def _room() -> Finding:
    """The per-process limits a thousand contexts reach first."""
    import resource

    import vlcs

    r = vlcs.room()
    maps, fds = r["memory_maps"]["limit"] or 0, r["descriptors"]["limit"]
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    hard_text = "unlimited" if hard == resource.RLIM_INFINITY else str(hard)
    detail = (
        f"{maps} memory maps (vm.max_map_count), {fds} descriptors (RLIMIT_NOFILE, hard "
        f"{hard_text}), {r['threads']['limit']} threads"
    )
    # about 21 maps and 4 descriptors per copy-mode context with libgomp
    if maps < 1024 * 24:
        return Finding(
            "room",
            NOTE,
            detail + f"; about {maps // 24} copy-mode contexts fit in the maps",
            f"sysctl -w vm.max_map_count={1024 * 64} for a thousand contexts",
        )
    if hard != resource.RLIM_INFINITY and hard < 1024 * 4:
        return Finding(
            "room",
            NOTE,
            detail + f"; about {hard // 4} copy-mode contexts fit in the descriptors",
            "raise the hard limit of open files (limits.conf, systemd's LimitNOFILE)",
        )
    return Finding("room", OK, detail)


def findings() -> list[Finding]:
    """Every finding, in the order ``vlcs doctor`` prints them.

    >>> [f.name for f in findings()][:2]
    ['platform', 'cpus']
    """
    first = _platform()
    if first.state == FAIL:
        return [first]
    probe = _probe(NAMESPACES)
    strict = _probe(1, {"VLCS_STRICT": "1"}) if platform.machine() == "x86_64" else {}
    return [
        first,
        _cpus(),
        _contexts(probe),
        _python(),
        _hwloc(),
        _strict(strict),
        _gpus(probe),
        _room(),
        _matplotlib(),
        _compiler(),
    ]


def main(as_json: bool = False) -> int:
    """Print the findings; 1 when vlcs cannot work here, else 0."""
    found = findings()
    if as_json:
        print(json.dumps([dataclasses.asdict(f) for f in found], indent=2))
    else:
        width = max(len(f.name) for f in found)
        for f in found:
            print(f"{f.state:8}{f.name:{width}}  {f.detail}")
            if f.fix:
                print(f"{'':8}{'':{width}}  -> {f.fix}")
    return 1 if any(f.state == FAIL for f in found) else 0

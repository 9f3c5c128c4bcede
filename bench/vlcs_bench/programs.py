"""The micro-benchmarks' and the C++ demo's native programs: built from
``csrc/`` against the installed libvlcs on first use, run under the
``vlcs-run`` launcher (many contexts need its glibc tunables)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from vlcs import program_path

from vlcs_bench._build import CSRC, build, vlcs_args

_WARN = ["-O2", "-Wall", "-Wextra", "-Werror"]

# name -> (sources, compiler, extra arguments)
PROGRAMS: dict[str, tuple[list[str], str, list[str]]] = {
    "vlcs-bench-core": (["bench_core.c"], "cc", ["-std=gnu11", "-lvlcs", "-ldl"]),
    "vlcs-bench-strict": (["bench_strict.c"], "cc", ["-std=gnu11", "-lvlcs"]),
    "vlcs-bench-create": (["bench_create.c"], "cc", ["-std=gnu11", "-lvlcs", "-ldl"]),
    "vlcs-demo-nested-gemm": (["nested_gemm.cpp"], "c++", ["-std=c++17", "-lvlcs", "-pthread"]),
}


def path(name: str) -> Path:
    """The built program `name` (one of PROGRAMS), compiled if needed.
    Raises RuntimeError with the compiler's messages when it cannot be built."""
    sources, compiler, extra = PROGRAMS[name]
    # Libraries after the sources: -l flags go to libs.
    libs = tuple(a for a in extra if a.startswith("-l"))
    args = [*_WARN, *vlcs_args(), *(a for a in extra if not a.startswith("-l"))]
    return build(name, sources, args, libs=libs, compiler=compiler, src_dir=CSRC)


def launch(name: str, *args: str) -> list[str]:
    """argv that runs program `name` with `args` under the vlcs-run launcher."""
    return [str(program_path("vlcs-run")), "--", str(path(name)), *args]


def run_json(name: str) -> dict[str, Any]:
    """Run a C benchmark program under the launcher; its JSON output.
    Raises subprocess.CalledProcessError (with stderr) when it fails."""
    proc = subprocess.run(launch(name), capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)

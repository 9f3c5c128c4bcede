"""Compiling the benchmarks' native programs and kernels at run time, once
per source version: the results are cached under ~/.cache/vlcs (or
$XDG_CACHE_HOME/vlcs), named by a hash of the sources, compiler and flags.

The runtime wheel ships no benchmark binaries; this is how they are made.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

from vlcs import include_dir, library_path

#: the evaluation's kernels and drivers
KERNELS = Path(__file__).with_name("evaluation") / "kernels"
#: the micro-benchmarks' and demos' programs
CSRC = Path(__file__).with_name("csrc")


def vlcs_args() -> list[str]:
    """Compiler arguments for a program using vlcs.h/vlcs.hpp and
    libvlcs (found again at run time through its rpath); add -lvlcs."""
    lib = library_path().parent
    return [f"-I{include_dir()}", f"-L{lib}", f"-Wl,-rpath,{lib}"]


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "vlcs"


def build(
    name: str,
    sources: list[str],
    args: list[str],
    *,
    libs: tuple[str, ...] = (),
    compiler: str | None = None,
    src_dir: Path | None = None,
) -> Path:
    """Compile `sources` of `src_dir` (default: the kernels; every header
    beside them counts for the hash too) with `compiler` (default $CC or cc)
    and `args`, linking `libs` after the sources; the path of the output.

    A shared library when "-shared" is among the args, else a program.
    Raises RuntimeError with the compiler's messages when it fails."""
    folder = src_dir or KERNELS
    cc = compiler or os.environ.get("CC", "cc")
    digest = hashlib.sha256(" ".join([cc, *args, *libs]).encode())
    # Every named source, C or C++, and every header: an edit to any of
    # them must not run a stale binary from the cache.
    for f in sorted(folder.iterdir()):
        if f.name in sources or f.suffix in (".h", ".hpp"):
            digest.update(f.name.encode() + f.read_bytes())
    suffix = ".so" if "-shared" in args else ""
    out = cache_dir() / f"{name}-{digest.hexdigest()[:12]}{suffix}"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
        try:
            proc = subprocess.run(
                [cc, *args, "-o", str(tmp), *(str(folder / s) for s in sources), *libs],
                check=False,
                capture_output=True,
                text=True,
            )
        except FileNotFoundError:
            raise RuntimeError(
                f"no compiler '{cc}' to build {name}: install gcc/g++ (or set CC)"
            ) from None
        if proc.returncode != 0:
            raise RuntimeError(f"{cc} could not build {name}:\n{proc.stderr.strip()}")
        tmp.rename(out)
    return out

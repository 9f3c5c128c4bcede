"""Check that the C core's files call each other one way, and stay short.

A file depends on another when it calls a function or reads a variable the
other defines, read from the built objects (``nm``: each object's
undefined symbols against every object's defined ones), so calls through
macros and inline helpers count as the compiler saw them.

* No circle among ``src/``'s files, except the one recorded below, which
  may only shrink: a file that joins it, or a new circle, fails the check,
  and so does a file that has left it while still listed (so that the list
  follows the code).
* No file of ``src/`` over 900 lines, except those recorded, which may not
  grow.

Run by ``./run test`` after the build; exits 1 naming each problem.

    $ python tools/check_c_layers.py build
    C layers: 36 files; circles of 18 files (recorded, may only shrink); longest file 1218 lines
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_imports import cycles  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

# The files that still call each other both ways: where a context's
# libraries live (namespace or renamed copies) is decided in each of them
# rather than behind one backend interface.  Shrink it; never grow it.
KNOWN_CIRCLE = frozenset(
    {
        "copies",
        "exec",
        "namespace",
        "runtime",
        "unload",
    }
)

MAX_LINES = 900
# files longer than MAX_LINES, with the length they may not pass
KNOWN_LONG = {"copies.c": 1218}


def symbols(obj: Path) -> tuple[set[str], set[str]]:
    """What an object defines (functions, data) and what it needs."""
    out = subprocess.run(["nm", str(obj)], capture_output=True, text=True, check=True).stdout
    defined, needed = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDBRV":
            defined.add(parts[2])
        elif len(parts) == 2 and parts[0] == "U":
            needed.add(parts[1])
    return defined, needed


def graph(objects: Path) -> dict[str, set[str]]:
    """file -> the files whose symbols it uses."""
    found = {p.name.removesuffix(".c.o"): symbols(p) for p in sorted(objects.glob("*.c.o"))}
    owner = {s: name for name, (defined, _) in found.items() for s in defined}
    return {
        name: {owner[s] for s in needed if s in owner and owner[s] != name}
        for name, (_, needed) in found.items()
    }


def main() -> int:
    build = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "build"
    objects = build / "CMakeFiles" / "vlcs.dir" / "src"
    if not any(objects.glob("*.c.o")):
        print(f"check_c_layers: no objects in {objects}; build first", file=sys.stderr)
        return 1
    g = graph(objects)
    problems = []
    circles = cycles(g)
    in_circles = set().union(*circles) if circles else set()
    for comp in circles:
        extra = sorted(set(comp) - KNOWN_CIRCLE)
        if extra:
            problems.append(
                f"a circle of {len(comp)} files includes {', '.join(extra)}, which were in none: "
                + " <-> ".join(comp)
            )
    left = sorted(KNOWN_CIRCLE - in_circles)
    if left:
        problems.append(
            f"{', '.join(left)} left the recorded circle: take them out of KNOWN_CIRCLE "
            f"in {__file__}"
        )
    longest = 0
    for path in sorted((ROOT / "src").glob("*.c")):
        n = len(path.read_text().splitlines())
        longest = max(longest, n)
        allowed = KNOWN_LONG.get(path.name, MAX_LINES)
        if n > allowed:
            problems.append(f"src/{path.name} has {n} lines (at most {allowed})")
    for p in problems:
        print(f"check_c_layers: {p}", file=sys.stderr)
    if problems:
        return 1
    sizes = ", ".join(str(len(c)) for c in circles) or "none"
    print(
        f"C layers: {len(g)} files; circles of {sizes} files (recorded, may only shrink); "
        f"longest file {longest} lines"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

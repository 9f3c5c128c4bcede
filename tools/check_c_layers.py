"""Check that the C core's files call each other one way, and stay short.

A file depends on another when it calls a function or reads a variable the
other defines, read from the built objects (``nm``: each object's
undefined symbols against every object's defined ones), so calls through
macros and inline helpers count as the compiler saw them.

* No circle among ``src/``'s files: each circle found is named, file by
  file.
* No C file of ``src/`` or its folders (the interposer, the CPython
  module) over 900 lines.

Run by ``./run test`` after the build; exits 1 naming each problem.
``--layers`` prints the files by floor, top first (src/README.md shows them).

    $ python tools/check_c_layers.py build
    C layers: 53 files, no circle; longest file 882 lines
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_imports import cycles  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

MAX_LINES = 900


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


def layers(g: dict[str, set[str]]) -> list[list[str]]:
    """Files by floor: a file's floor is one above the highest it uses."""
    floor: dict[str, int] = {}

    def of(name: str) -> int:
        if name not in floor:
            floor[name] = 0  # a circle would stop here; main() reports it
            floor[name] = 1 + max((of(d) for d in g[name]), default=-1)
        return floor[name]

    out: list[list[str]] = []
    for name in sorted(g):
        n = of(name)
        out.extend([] for _ in range(n + 1 - len(out)))
        out[n].append(name)
    return out


def main() -> int:
    args = [a for a in sys.argv[1:] if a != "--layers"]
    build = Path(args[0]) if args else ROOT / "build"
    objects = build / "CMakeFiles" / "vlcs.dir" / "src"
    if not any(objects.glob("*.c.o")):
        print(f"check_c_layers: no objects in {objects}; build first", file=sys.stderr)
        return 1
    g = graph(objects)
    problems = []
    for comp in cycles(g):
        problems.append(f"a circle of {len(comp)} files: " + " <-> ".join(comp))
    longest = 0
    for path in sorted((ROOT / "src").rglob("*.[ch]")):
        n = len(path.read_text().splitlines())
        longest = max(longest, n)
        if n > MAX_LINES:
            name = path.relative_to(ROOT)
            problems.append(f"{name} has {n} lines (at most {MAX_LINES})")
    for p in problems:
        print(f"check_c_layers: {p}", file=sys.stderr)
    if problems:
        return 1
    if "--layers" in sys.argv:
        for n, names in reversed(list(enumerate(layers(g)))):
            print(f"{n:2d}  {' '.join(names)}")
    print(f"C layers: {len(g)} files, no circle; longest file {longest} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Check that imports run one way.

* no import cycles among the modules of each package (``python/vlcs``,
  ``bench/vlcs_bench``), counting imports inside functions too;
* the runtime never reaches the benchmarks: only ``vlcs._cli.bench`` names
  ``vlcs_bench`` (to hand ``vlcs bench``/``vlcs demo`` over), and a plain
  ``import vlcs`` loads no module of ``vlcs_bench``.

Run by ``./run test``; exits 1 with each cycle or stray import named.

    $ python tools/check_imports.py
    imports: 14 modules of vlcs, 19 of vlcs_bench; no cycles
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"vlcs": ROOT / "python" / "vlcs", "vlcs_bench": ROOT / "bench" / "vlcs_bench"}


def modules(package: str, folder: Path) -> dict[str, Path]:
    out = {}
    for path in sorted(folder.rglob("*.py")):
        parts = list(path.relative_to(folder).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join([package, *parts])] = path
    return out


def imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Modules of `known` that module `name` names in any import."""
    is_pkg = path.name == "__init__.py"
    here = name if is_pkg else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = here.split(".")
                pkg = pkg[: len(pkg) - (node.level - 1)]
                base = ".".join(pkg + ([base] if base else []))
            for a in node.names:
                sub = f"{base}.{a.name}"
                found.add(sub if sub in known else base)
    out = set()
    for f in found:
        # "import vlcs_bench.x.y" names vlcs_bench.x.y, or its nearest known parent
        while f and f not in known:
            f = f.rpartition(".")[0]
        if f and f != name:
            out.add(f)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def main() -> int:
    problems: list[str] = []
    known: dict[str, Path] = {}
    for package, folder in PACKAGES.items():
        known.update(modules(package, folder))
    # generated at build time from include/vlcs.h (pyproject.toml); imports nothing
    known.setdefault("vlcs._version", PACKAGES["vlcs"] / "_version.py")
    graph = {
        name: imported(name, path, known) if path.exists() else set()
        for name, path in known.items()
    }
    for comp in cycles(graph):
        problems.append("import cycle: " + " <-> ".join(comp))
    for name, deps in sorted(graph.items()):
        if name.startswith("vlcs.") or name == "vlcs":
            stray = sorted(d for d in deps if d.startswith("vlcs_bench"))
            if stray and name != "vlcs._cli.bench":
                problems.append(f"{name} imports benchmark code: {', '.join(stray)}")
    probe = (
        "import sys, vlcs; print(' '.join(sorted(m for m in sys.modules if m.startswith('vlcs'))))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.split()
    bench = [m for m in loaded if m.startswith("vlcs_bench") or "evaluation" in m]
    if bench:
        problems.append(f"import vlcs loads benchmark modules: {', '.join(bench)}")
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        return 1
    counts = ", ".join(
        f"{sum(1 for m in known if m.partition('.')[0] == p)} modules of {p}" for p in PACKAGES
    )
    print(f"imports: {counts}; no cycles; import vlcs loads {', '.join(loaded)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

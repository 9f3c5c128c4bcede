"""Run one case of the evaluation and write its JSON (used by run_case)."""

from __future__ import annotations

import argparse
import importlib
import json
import sys

from vlcs_bench.evaluation import _harness


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m vlcs_bench.evaluation.case")
    p.add_argument("module")
    p.add_argument("--out", required=True)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--function", default="run", help="the module's entry point (default run)")
    a = p.parse_args()
    mod = importlib.import_module(f"vlcs_bench.evaluation.{a.module}")
    if a.quick:
        _harness.QUICK = True
    result = getattr(mod, a.function)(quick=a.quick)
    result.setdefault("title", mod.TITLE)
    result.setdefault("models", mod.MODELS)
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

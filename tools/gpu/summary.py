"""The Markdown summary of a tools/gpu/run.sh folder: one row per context,
worker or base, with the devices it saw and whether its product was right."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def rows(data: dict) -> list[dict]:
    if data.get("scenario") == "torch":
        return [*data.get("contexts", []), data.get("base", {})]
    if data.get("scenario") == "cupy":
        return data.get("contexts", [])
    return [dict(t, context=t.get("worker")) for t in data.get("tasks", [])]


def main(folder: Path) -> int:
    print(f"# GPU checks: {folder.name}\n")
    print("```\n" + (folder / "machine.txt").read_text().strip() + "\n```\n")
    for name in ("torch", "cupy", "pool"):
        path = folder / f"{name}.json"
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            log = folder / f"{name}.log"
            tail = log.read_text()[-1500:] if log.exists() else "(no log)"
            print(f"## {name}: no result (the process ended early)\n\n```\n{tail}\n```\n")
            continue
        copies = data.get("driver_copies")
        print(f"## {name} ({data.get('seconds')} s; driver copies mapped: {copies})\n")
        if "error" in data:
            print(f"error: {data['error']}\n")
        base = data.get("base", {}).get("checksum")
        print("| where | GPUs given | devices seen | product right | checksum = base's | error |")
        print("|---|---|---|---|---|---|")
        for r in rows(data):
            same = (
                ""
                if base is None or "checksum" not in r
                else abs(r["checksum"] - base) <= 1e-6 * abs(base)
            )
            print(
                f"| {r.get('context')} | {r.get('gpus')} | {r.get('device_count')} | "
                f"{r.get('right', '')} | {same} | {r.get('error', '')} |"
            )
        if "private_torch_copies" in data:
            distinct = data["private_torch_copies"]
            print(f"\nprivate torch copies (three contexts and the base, all distinct): {distinct}")
        if "worker_gpus" in data:
            print(f"\nworkers' GPUs: {data['worker_gpus']}")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))

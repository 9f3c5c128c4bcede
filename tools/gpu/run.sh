#!/usr/bin/env bash
# The GPU checks, in one call, on a machine with an NVIDIA GPU:
#
#   tools/gpu/run.sh [WHEEL]       (WHEEL: a vlcs wheel for that machine's Python)
#
# Runs tools/gpu/check.py's scenarios (torch in three contexts and the base,
# CuPy in two contexts, a pool of GPU workers), each in its own process under
# `vlcs run`, and writes their JSON and logs, the machine's description and a
# summary into $OUT (the device runner's folder) or else
# bench/results/gpu-DATE/.  The machine needs no network: with WHEEL the
# wheel is unzipped into a folder put first on PYTHONPATH, beside the
# machine's own torch and CuPy (../shared/DESIGN.md 2.15 says how such a
# machine was used).  VLCS_GPU_PYTHON names the interpreter (default python3).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
py=${VLCS_GPU_PYTHON:-python3}
out=${OUT:-$root/bench/results/gpu-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$out"
if [ $# -ge 1 ]; then
    site=$(mktemp -d)
    "$py" -m zipfile -e "$1" "$site" || exit 1
    chmod +x "$site"/vlcs/_native/vlcs-run # zipfile keeps no modes
    export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
fi
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(uname -srm), $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
    echo "python: $("$py" -c 'import sys; print(sys.version.split()[0], sys.executable)')"
    echo "vlcs: $("$py" -c 'import vlcs; print(vlcs.__version__, vlcs.__file__)' 2>&1)"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/gpu: /'
} > "$out/machine.txt"
cat "$out/machine.txt"
for scenario in torch cupy pool; do
    start=$(date +%s)
    timeout 300 "$py" -m vlcs run -- "$py" "$here/check.py" "$scenario" \
        > "$out/$scenario.json" 2> "$out/$scenario.log"
    echo "$scenario: exit $? in $(( $(date +%s) - start )) s"
done
"$py" "$here/summary.py" "$out" | tee "$out/summary.md"

#!/usr/bin/env bash
# A node's run in one call, on a machine with many cores (and a GPU):
#
#   tools/node/run.sh WHEELS     (WHEELS: tools/node/wheels.sh's dist/node)
#
# Unzips the vlcs and vlcs-bench wheels into a folder put first on
# PYTHONPATH, beside the machine's own numpy, scipy, torch and CuPy (it
# needs no network), describes the machine, then runs, each part with a
# deadline so that the whole stays within VLCS_NODE_SECONDS (default 480):
#   1. the GPU checks of tools/gpu/run.sh (torch in three contexts and the
#      base, CuPy in two, a pool of GPU workers), when nvidia-smi is there
#      (VLCS_NODE_GPU=0: not);
#   2. the evaluation's cases VLCS_NODE_CASES (default 4,own,9,5,12: 4
#      first, for its judged lends and tuned partitions; "own" is `vlcs bench
#      own`, a pool of one worker per CPU whose numpy tasks are timed by
#      phase, to find what makes own Pythons wait for each other there) in
#      quick mode (VLCS_NODE_FULL=1: full), one command each, so that a case
#      cut short by the deadline leaves the others' reports, and with
#      VLCS_TRACE=elastic, whose verdicts on lends judged by progress are
#      gathered in verdicts.txt;
#   3. `vlcs doctor --json` and `vlcs.room()`.
# Everything goes to $OUT (the device runner's folder, which brings back 8
# files: machine.txt, summary.txt, verdicts.txt and node.tar.gz holding the
# rest) or else bench/results/node-DATE/; summary.txt lists what ran, its
# exit status and its time.  VLCS_NODE_PYTHON names the interpreter (default python3).
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
py=${VLCS_NODE_PYTHON:-python3}
final=${OUT:-$root/bench/results/node-$(date -u +%Y%m%d-%H%M%S)}
out=$(mktemp -d)
budget=${VLCS_NODE_SECONDS:-480}
cases=${VLCS_NODE_CASES:-4,own,9,5,12}
mode=--quick
[ "${VLCS_NODE_FULL:-}" = 1 ] && mode="" # full mode: a warm-up and five timed runs
deadline=$(( $(date +%s) + budget ))
if [ $# -lt 1 ] || ! ls "$1"/vlcs-*.whl >/dev/null 2>&1; then
    echo "tools/node/run.sh: give the folder of the vlcs and vlcs-bench wheels (tools/node/wheels.sh makes dist/node)" >&2
    exit 2
fi
site=$(mktemp -d)
for w in "$1"/*.whl; do
    "$py" -m zipfile -e "$w" "$site" || exit 1
done
chmod +x "$site"/vlcs/_native/vlcs-run # zipfile keeps no modes
export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"

left() { echo $(( deadline - $(date +%s) )); }
step() { # name seconds command...: runs it with what is left, at most seconds
    local name=$1 most=$2
    shift 2
    local t
    t=$(left)
    [ "$t" -gt "$most" ] && t=$most
    if [ "$t" -le 10 ]; then
        echo "$name: not run, the deadline came" | tee -a "$out/summary.txt"
        return
    fi
    local start
    start=$(date +%s)
    timeout "$t" "$@" > "$out/$name.out" 2> "$out/$name.err"
    echo "$name: exit $? in $(( $(date +%s) - start )) s (limit $t s)" | tee -a "$out/summary.txt"
}

{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(uname -srm), $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
    echo "cpu: $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
    echo "glibc: $(ldd --version 2>&1 | head -1)"
    echo "python: $("$py" -c 'import sys; print(sys.version.split()[0], sys.executable)')"
    echo "vlcs: $("$py" -c 'import vlcs; print(vlcs.__version__, vlcs.__file__)' 2>&1)"
    "$py" -c 'import numpy, scipy; print("numpy:", numpy.__version__, "scipy:", scipy.__version__)' 2>&1
    "$py" -c 'import torch; print("torch:", torch.__version__)' 2>&1 | tail -1
    command -v nvidia-smi >/dev/null &&
        nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/gpu: /'
} > "$out/machine.txt"
cat "$out/machine.txt"

if command -v nvidia-smi >/dev/null && [ "${VLCS_NODE_GPU:-1}" = 1 ]; then
    for scenario in torch cupy pool; do
        step "gpu-$scenario" 120 "$py" -m vlcs run -- "$py" "$root/tools/gpu/check.py" "$scenario"
    done
    for scenario in torch cupy pool; do # the names tools/gpu/summary.py reads
        cp "$out/gpu-$scenario.out" "$out/$scenario.json" 2>/dev/null
        cp "$out/gpu-$scenario.err" "$out/$scenario.log" 2>/dev/null
    done
    "$py" "$root/tools/gpu/summary.py" "$out" > "$out/gpu-summary.md" 2>&1
fi

IFS=, read -r -a each <<< "$cases"
for n in "${each[@]}"; do
    if [ "$n" = own ]; then # N Python tasks on one worker per CPU, timed by phase
        step own 150 "$py" -m vlcs bench own $mode --json
    else
        # VLCS_TRACE=elastic: every lend and every verdict on one, on stderr
        step "case$n" 300 env VLCS_TRACE=elastic "$py" -m vlcs bench all $mode --cases "$n" --out "$out/case$n"
    fi
done
# the verdicts on judged lends (a rate with and without the lend), for the
# summary: which lends paid there and which went back
grep -h "units/s" "$out"/case*.err > "$out/verdicts.txt" 2>/dev/null

step doctor 60 "$py" -m vlcs doctor --json
step room 30 "$py" -c 'import json, vlcs; print(json.dumps(vlcs.room()))'
mkdir -p "$final"
cp "$out/machine.txt" "$out/summary.txt" "$out/verdicts.txt" "$final/"
tar czf "$final/node.tar.gz" -C "$out" .

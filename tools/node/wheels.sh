#!/usr/bin/env bash
# Builds, on this machine, what tools/node/run.sh (and tools/gpu/run.sh)
# installs on a node that cannot download anything: the vlcs and vlcs-bench
# wheels for CPython 3.12 (the node's, ../shared/DESIGN.md 2.15), from
# ./run's .venv-3.12, into DIR (default dist/node/).  Then, with the device
# runner:
#   run(command="tools/node/run.sh dist/node", carry=["dist/node"])
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:-dist/node}
[ "${dir#/}" = "$dir" ] && dir=$root/$dir # relative: to the checkout
py=${VLCS_WHEEL_PYTHON:-$root/.venv-3.12/bin/python}
if [ ! -x "$py" ]; then
    echo "tools/node/wheels.sh: no $py; run ./run test once (it makes .venv-3.12), or set VLCS_WHEEL_PYTHON" >&2
    exit 1
fi
"$py" -m pip install -q scikit-build-core cmake ninja
rm -rf "$dir"
"$py" -m pip wheel -q --no-build-isolation --no-deps -w "$dir" "$root" "$root/bench"
ls -l "$dir"/*.whl

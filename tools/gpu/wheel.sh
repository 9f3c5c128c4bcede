#!/usr/bin/env bash
# Builds, on this machine, the vlcs wheel that tools/gpu/run.sh installs on a
# GPU machine that cannot download anything: for CPython 3.12 (the GPU
# machine's, ../shared/DESIGN.md 2.15), from ./run's .venv-3.12, into
# dist/gpu/.  Then, with the device runner:
#   run(command="tools/gpu/run.sh dist/gpu/vlcs-*.whl", carry=["dist/gpu"])
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${VLCS_WHEEL_PYTHON:-$root/.venv-3.12/bin/python}
if [ ! -x "$py" ]; then
    echo "tools/gpu/wheel.sh: no $py; run ./run test once (it makes .venv-3.12), or set VLCS_WHEEL_PYTHON" >&2
    exit 1
fi
"$py" -m pip install -q scikit-build-core cmake ninja
rm -rf "$root/dist/gpu"
"$py" -m pip wheel -q --no-build-isolation --no-deps -w "$root/dist/gpu" "$root"
ls -l "$root"/dist/gpu/*.whl

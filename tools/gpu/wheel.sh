#!/usr/bin/env bash
# Builds, on this machine, the wheels that tools/gpu/run.sh installs on a GPU
# machine that cannot download anything (tools/node/wheels.sh, into
# dist/gpu/).  Then, with the device runner:
#   run(command="tools/gpu/run.sh dist/gpu/vlcs-*.whl", carry=["dist/gpu"])
exec "$(dirname "$0")/../node/wheels.sh" dist/gpu

#!/usr/bin/env bash
# The main job on a fresh machine:  bash tools/run.sh
# Sets up .venv with what the benchmark needs and builds libtaco (tools/setup.sh), then runs the
# codec benchmark: with a GPU, every codec's GPU kernels against a cudaMemcpy of the same bytes;
# without one, the host codec's accuracy table. Extra arguments go to `python -m taco bench codec`.
set -euo pipefail
export TACO_SETUP=run TACO_BUILD_TARGET="${TACO_BUILD_TARGET:-taco}"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

rc=0
step "python -m taco bench codec $*" "$PY" -m taco bench codec "$@" || rc=$?
finish
exit $rc

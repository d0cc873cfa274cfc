#!/usr/bin/env bash
# The main job on a fresh machine:  bash tools/run.sh
# Sets up .venv with what the benchmark needs and builds libtaco (tools/setup.sh), then runs the
# codec benchmark: with a GPU, every codec's GPU kernels against a cudaMemcpy of the same bytes;
# without one, the host codec's accuracy table. Extra arguments go to the harness's `codec` command,
# called by its own name (`python -m taco_bench codec`): the harness runs from the source tree here,
# and `python -m taco bench codec` finds only an installed one (docs/api.md, "Command line").
set -euo pipefail
export TACO_SETUP=run TACO_BUILD_TARGET="${TACO_BUILD_TARGET:-taco}"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

rc=0
step "python -m taco_bench codec $*" "$PY" -m taco_bench codec "$@" || rc=$?
finish
exit $rc

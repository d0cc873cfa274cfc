#!/usr/bin/env bash
# The main job on a fresh machine:  bash tools/run.sh
# Sets up .venv and builds libtaco (tools/setup.sh), then runs the codec benchmark:
# with a GPU, every codec's GPU kernels against a cudaMemcpy of the same bytes;
# without one, the host codec's accuracy table. Extra arguments go to `python -m taco bench codec`.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

say "python -m taco bench codec $*"
exec "$PY" -m taco bench codec "$@"

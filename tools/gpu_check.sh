#!/usr/bin/env bash
# One GPU check for a machine without network access (the shared H200 machine):
#   bash tools/gpu_check.sh [pytest args]
# Builds build-gpu/ (sm_90 unless CUDAARCHS is set), then runs the codec benchmark (every codec,
# bf16 and fp32, 2^28 elements; without a GPU the host table), the host C tests and `pytest -m gpu`. Python packages the
# machine lacks are taken from wheels in .whl/ (installed into /tmp/site); logs and the benchmark
# JSON go to $OUT (default ./gpu-check); $PYTHON (default python3) is the interpreter, whose
# nvidia-nccl wheel (or the system, or NCCL_HOME) provides nccl.h. Exit status: that of the GPU tests.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OUT="${OUT:-$ROOT/gpu-check}"
PY="${PYTHON:-python3}"
mkdir -p "$OUT"
if compgen -G ".whl/*.whl" > /dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
  export PYTHONPATH="/tmp/site:$ROOT/python:$ROOT/bench/python"
else
  export PYTHONPATH="$ROOT/python:$ROOT/bench/python"  # the library's package and the harness (taco_bench)
fi
t0=$(date +%s)
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="${CUDAARCHS:-90}" \
  -DPython3_EXECUTABLE="$(command -v "$PY")" -DTACO_BUILD_TESTS=ON -DTACO_BUILD_BENCH=ON > "$OUT/build.log" 2>&1 &&
  cmake --build build-gpu -j"${TACO_JOBS:-$(nproc)}" >> "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
export TACO_LIBRARY="$ROOT/build-gpu/libtaco.so"
{ nvidia-smi -L 2>&1 || echo "no nvidia-smi"; } | tee "$OUT/gpus.txt"
"$PY" -m taco bench codec --iters 10 --dtype bf16,fp32 --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.txt"
(cd build-gpu && ctest 2>&1 | tail -3) | tee "$OUT/ctest.txt"
"$PY" -m pytest -q -m gpu tests/gpu -p no:warnings "$@" 2>&1 | tee "$OUT/gpu_tests.txt" | tail -5
rc=${PIPESTATUS[0]}
if [ "$rc" -eq 0 ] && ! grep -q " passed" "$OUT/gpu_tests.txt"; then
  echo "no GPU test ran (no GPU visible?): failing the check"; rc=1
fi
echo "total: $(( $(date +%s) - t0 )) s; GPU tests exit status $rc"
exit "$rc"

#!/usr/bin/env bash
# One GPU check for a machine without network access (the shared H200 machine):
#   bash tools/gpu_check.sh [pytest args]
# Builds build-gpu/ (sm_90 unless CUDAARCHS is set), then runs the codec benchmark (every codec,
# bf16 and fp32, 2^28 elements; without a GPU the host table), the host C tests and `pytest -m gpu`. Python packages the
# machine lacks are taken from wheels in .whl/ (installed into /tmp/site); logs and the benchmark
# JSON go to $OUT (default ./gpu-check); $PYTHON (default python3) is the interpreter, whose
# nvidia-nccl wheel (or the system, or NCCL_HOME) provides nccl.h.
# Exit status 0 only when the host C tests (ctest) all passed and every GPU test ran and passed:
# a failed ctest, a failed GPU test, and a GPU test that skipped or is an xfail (tests/conftest.py
# reports those as failures on a GPU machine; the summary is checked here too) all fail the check,
# as does a run in which no GPU test ran. `bash tools/gpu_check.sh --verdict CTEST_RC PYTEST_RC LOG`
# prints the verdict of a finished run (for tests/python/test_gpu_check.py).
set -uo pipefail

# verdict CTEST_RC PYTEST_RC PYTEST_LOG: one line per reason to fail; exit 1 if any, else 0.
verdict() {
  local ctest_rc=$1 pytest_rc=$2 log=$3 fail=0 summary
  summary=$(grep -E '^=*.* in [0-9.]+s' "$log" | tail -1)
  if [ "$ctest_rc" -ne 0 ]; then echo "FAIL: the host C tests failed (ctest exit status $ctest_rc)"; fail=1; fi
  if [ "$pytest_rc" -ne 0 ]; then echo "FAIL: the GPU tests failed (pytest exit status $pytest_rc)"; fail=1; fi
  if ! grep -qE '[0-9]+ passed' <<< "$summary"; then echo "FAIL: no GPU test passed (no GPU visible?)"; fail=1; fi
  if grep -qE '[0-9]+ (skipped|xfailed|xpassed)' <<< "$summary"; then
    echo "FAIL: GPU tests skipped or xfailed on a GPU machine: $summary"; fail=1
  fi
  [ "$fail" -eq 0 ] && echo "OK: ctest passed; GPU tests: $summary"
  return "$fail"
}
if [ "${1:-}" = "--verdict" ]; then
  verdict "$2" "$3" "$4"
  exit $?
fi

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
(cd build-gpu && ctest --output-on-failure) > "$OUT/ctest.txt" 2>&1
ctest_rc=$?
tail -3 "$OUT/ctest.txt"
"$PY" -m pytest -q -rfEsxX -m gpu tests/gpu -p no:warnings "$@" > "$OUT/gpu_tests.txt" 2>&1
pytest_rc=$?
tail -15 "$OUT/gpu_tests.txt"
verdict "$ctest_rc" "$pytest_rc" "$OUT/gpu_tests.txt"
rc=$?
echo "total: $(( $(date +%s) - t0 )) s; exit status $rc"
exit "$rc"

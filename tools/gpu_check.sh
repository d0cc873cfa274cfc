#!/usr/bin/env bash
# One GPU check for a machine without network access (the shared H200 machine):
#   bash tools/gpu_check.sh [--groups] [pytest args]
# Builds $BUILD_DIR (else $TACO_BUILD_DIR, else build-gpu/; sm_90 unless CUDAARCHS is set), then runs the codec benchmark (every codec,
# bf16 and fp32, 2^28 elements; without a GPU the host table), the host C tests and `pytest -m gpu`. Python packages the
# machine lacks are taken from wheels in .whl/ (installed into /tmp/site); logs and the benchmark
# JSON go to $OUT (default ./gpu-check), and all of them into $OUT/gpu-check.tgz (for machines that
# hand back few files); $PYTHON (default python3) is the interpreter, whose nvidia-nccl wheel (or
# the system, or NCCL_HOME) provides nccl.h.
# --groups: the GPU test files in six groups side by side on the one GPU (about 7 minutes on an
# H200 instead of about 14), then test_tune.py and test_soak.py alone, as they time what they test;
# a file no group names joins the `other` group. No codec benchmark in this mode.
# Exit status 0 only when the host C tests (ctest) all passed and every GPU test ran and passed:
# a failed ctest, a failed GPU test, and a GPU test that skipped or is an xfail (tests/conftest.py
# reports those as failures on a GPU machine; the summary is checked here too) all fail the check,
# as does a run in which no GPU test ran. `bash tools/gpu_check.sh --verdict CTEST_RC PYTEST_RC LOG...`
# prints the verdict of a finished run (one pytest log per group; for tests/python/test_gpu_check.py).
set -uo pipefail

# verdict CTEST_RC PYTEST_RC PYTEST_LOG...: one line per reason to fail; exit 1 if any, else 0.
verdict() {
  local ctest_rc=$1 pytest_rc=$2 fail=0 summary log passed=0 n
  shift 2
  if [ "$ctest_rc" -ne 0 ]; then echo "FAIL: the host C tests failed (ctest exit status $ctest_rc)"; fail=1; fi
  if [ "$pytest_rc" -ne 0 ]; then echo "FAIL: the GPU tests failed (pytest exit status $pytest_rc)"; fail=1; fi
  for log in "$@"; do
    summary=$(grep -E '^=*.* in [0-9.]+s' "$log" | tail -1)
    if ! grep -qE '[0-9]+ passed' <<< "$summary"; then echo "FAIL: no GPU test passed in $(basename "$log") (no GPU visible?)"; fail=1; fi
    if grep -qE '[0-9]+ (skipped|xfailed|xpassed)' <<< "$summary"; then
      echo "FAIL: GPU tests skipped or xfailed on a GPU machine ($(basename "$log")): $summary"; fail=1
    fi
    n=$(grep -oE '[0-9]+ passed' <<< "$summary" | grep -oE '[0-9]+' || true)
    passed=$(( passed + ${n:-0} ))
  done
  if [ $# -eq 1 ]; then
    [ "$fail" -eq 0 ] && echo "OK: ctest passed; GPU tests: $summary"
  else
    [ "$fail" -eq 0 ] && echo "OK: ctest passed; GPU tests: $passed passed in $# groups"
  fi
  return "$fail"
}
if [ "${1:-}" = "--verdict" ]; then
  shift
  verdict "$@"
  exit $?
fi
# gpu_groups: one line per group of tests/gpu files for --groups, "NAME FILE...": the files that go
# together; a file no group names joins `other`; the alone_* groups run one after another, after
# the rest.
gpu_groups() {
  local -A group_of=() files=()
  local name f b g
  group() { name=$1; shift; for f in "$@"; do group_of[$f]=$name; done; }
  group codec test_codec_gpu.py
  group codec_edges test_codec_range_gpu.py test_accuracy_gpu.py test_fuzz_gpu.py test_overflow_gpu.py
  group peer test_peer_allreduce.py test_peer_timeline.py
  group ipc test_ipc_world.py
  group py test_python_gpu.py test_torch_ops_gpu.py test_torch_tp.py
  group alone_tune test_tune.py
  group alone_soak test_soak.py
  for f in "$(dirname "${BASH_SOURCE[0]}")"/../tests/gpu/test_*.py; do
    b=$(basename "$f")
    g=${group_of[$b]:-other}
    files[$g]="${files[$g]:-} tests/gpu/$b"
  done
  for g in "${!files[@]}"; do echo "$g${files[$g]}"; done | sort
}
if [ "${1:-}" = "--list-groups" ]; then
  gpu_groups
  exit 0
fi
GROUPS_MODE=0
if [ "${1:-}" = "--groups" ]; then
  GROUPS_MODE=1
  shift
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
BUILD_DIR="${BUILD_DIR:-${TACO_BUILD_DIR:-build-gpu}}"
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="${CUDAARCHS:-90}" \
  -DPython3_EXECUTABLE="$(command -v "$PY")" -DTACO_BUILD_TESTS=ON -DTACO_BUILD_BENCH=ON > "$OUT/build.log" 2>&1 &&
  cmake --build "$BUILD_DIR" -j"${TACO_JOBS:-$(nproc)}" >> "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
export TACO_LIBRARY="$(cd "$BUILD_DIR" && pwd)/libtaco.so"
{ nvidia-smi -L 2>&1 || echo "no nvidia-smi"; } | tee "$OUT/gpus.txt"
[ "$GROUPS_MODE" -eq 1 ] ||
  "$PY" -m taco_bench codec --iters 10 --dtype bf16,fp32 --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.txt"
(cd "$BUILD_DIR" && ctest --output-on-failure) > "$OUT/ctest.txt" 2>&1
ctest_rc=$?
tail -3 "$OUT/ctest.txt"
if [ "$GROUPS_MODE" -eq 0 ]; then
  "$PY" -m pytest -q -rfEsxX -m gpu tests/gpu -p no:warnings "$@" > "$OUT/gpu_tests.txt" 2>&1
  pytest_rc=$?
  tail -15 "$OUT/gpu_tests.txt"
  logs=("$OUT/gpu_tests.txt")
else
  declare -A files=()
  while read -r g fs; do files[$g]=$fs; done < <(gpu_groups)
  run_group() {  # NAME: its files, log in $OUT/gpu_tests_NAME.txt; prints the summary line
    local t1 rc
    t1=$(date +%s)
    # shellcheck disable=SC2086 # the file list splits on spaces (test file names have none)
    "$PY" -m pytest -q -rfEsxX -m gpu ${files[$1]} -p no:warnings "${PYTEST_ARGS[@]}" > "$OUT/gpu_tests_$1.txt" 2>&1
    rc=$?
    echo "$1: exit $rc, $(( $(date +%s) - t1 )) s: $(tail -1 "$OUT/gpu_tests_$1.txt")"
    return $rc
  }
  PYTEST_ARGS=("$@")
  pids=() logs=()
  for g in "${!files[@]}"; do
    case $g in alone_*) continue ;; esac
    run_group "$g" & pids+=($!)
    logs+=("$OUT/gpu_tests_$g.txt")
  done
  pytest_rc=0
  for p in "${pids[@]}"; do wait "$p" || pytest_rc=1; done
  for g in alone_tune alone_soak; do
    [ -n "${files[$g]:-}" ] || continue
    run_group "$g" || pytest_rc=1
    logs+=("$OUT/gpu_tests_$g.txt")
  done
fi
verdict "$ctest_rc" "$pytest_rc" "${logs[@]}"
rc=$?
(cd "$OUT" && tar czf gpu-check.tgz --exclude gpu-check.tgz -- *.txt ./*.json 2>/dev/null || true)
echo "total: $(( $(date +%s) - t0 )) s; exit status $rc"
exit "$rc"

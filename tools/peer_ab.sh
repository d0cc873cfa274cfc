#!/usr/bin/env bash
# A/B of the peer AllReduce kernels on one GPU: this tree (NEW) against BASE, both built here side
# by side, `bench/peer_roofline.py --all` in alternating turns (BASE, NEW, BASE, NEW, ...: a
# machine's drift lands on both), then `bench/roofline_compare.py` row by row.
#
#   bash tools/peer_ab.sh BASE [TURNS [peer_roofline.py args ...]]
#
# BASE: a source tree (a directory, e.g. made here with `git archive REV | tar -x -C .base` and
# carried to a GPU machine that has no .git) or a git revision of this repository. TURNS: turns
# per side (default 2). The remaining arguments go to peer_roofline.py (default:
# --iters 5 --algos fused,oneshot). Both sides run this tree's peer_roofline.py, each with its own
# libtaco.so and Python package. Logs, JSON and compare.txt go to $OUT (default ./peer-ab), and all of
# them into $OUT/peer-ab.tgz; wheels
# in .whl/ are installed into /tmp/site as tools/gpu_check.sh does; $CUDAARCHS (default 90).
set -euo pipefail
if [ $# -lt 1 ]; then
  echo "usage: $0 BASE [TURNS [peer_roofline.py args ...]]   (BASE: a source tree or a git revision)" >&2
  exit 2
fi
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BASE=$1
TURNS=${2:-2}
shift $(( $# >= 2 ? 2 : 1 ))
ARGS=("$@")
[ ${#ARGS[@]} -gt 0 ] || ARGS=(--iters 5 --algos fused,oneshot)
OUT="${OUT:-$ROOT/peer-ab}"
PY="${PYTHON:-python3}"
mkdir -p "$OUT"
if compgen -G ".whl/*.whl" > /dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
  SITE=/tmp/site:
else
  SITE=
fi

# BASE as a source tree
if [ -d "$BASE" ]; then
  base_src=$(cd "$BASE" && pwd)
else
  git rev-parse --verify -q "$BASE^{commit}" >/dev/null ||
    { echo "$0: $BASE: neither a directory nor a revision of this repository" >&2; exit 2; }
  base_src="$OUT/base-src"
  rm -rf "$base_src" && mkdir -p "$base_src"
  git archive "$BASE" | tar -x -C "$base_src"
fi
[ -f "$base_src/CMakeLists.txt" ] || { echo "$0: $base_src: no CMakeLists.txt (not a libtaco tree)" >&2; exit 2; }

# Both libraries at once, the cores split between them
jobs=$(( ($(nproc) + 1) / 2 ))
build() {  # SRC BUILD_DIR LOG
  cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="${CUDAARCHS:-90}" \
    -DPython3_EXECUTABLE="$(command -v "$PY")" -DTACO_BUILD_TESTS=OFF > "$3" 2>&1 &&
    cmake --build "$2" --target taco -j "$jobs" >> "$3" 2>&1
}
t0=$(date +%s)
build "$base_src" "$OUT/build-base" "$OUT/build-base.log" & pb=$!
build "$ROOT" "$OUT/build-new" "$OUT/build-new.log" & pn=$!
ok=0
wait $pb || { echo "BASE build failed:"; tail -20 "$OUT/build-base.log"; ok=1; }
wait $pn || { echo "NEW build failed:"; tail -20 "$OUT/build-new.log"; ok=1; }
[ $ok -eq 0 ] || exit 1
echo "builds: $(( $(date +%s) - t0 )) s"

run() {  # SIDE SRC TURN
  echo "==> $1, turn $3"
  TACO_LIBRARY="$OUT/build-$1/libtaco.so" PYTHONPATH="$SITE$2/python:$2/bench/python" \
    "$PY" "$ROOT/bench/peer_roofline.py" --all "${ARGS[@]}" --json "$OUT/$1-$3.json" 2>&1 | tee "$OUT/$1-$3.txt"
}
for t in $(seq 1 "$TURNS"); do
  run base "$base_src" "$t"
  run new "$ROOT" "$t"
done
base_json=() new_json=()
for t in $(seq 1 "$TURNS"); do base_json+=("$OUT/base-$t.json"); new_json+=("$OUT/new-$t.json"); done
"$PY" "$ROOT/bench/roofline_compare.py" --base "${base_json[@]}" --new "${new_json[@]}" | tee "$OUT/compare.txt"
# the logs, JSON and comparison in one archive, for machines that hand back few files
(cd "$OUT" && tar czf peer-ab.tgz -- *.txt *.json *.log)
echo "total: $(( $(date +%s) - t0 )) s"

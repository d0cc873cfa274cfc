#!/usr/bin/env bash
# Work in progress, not landed (no GPU was lent when it was written, 2026-12-05): the checks and
# the A/B that decide whether the epoch fix and the interleaved fused launch order land.
# On the device:  bash wip/device_run.sh 2>&1 | tee $OUT/log     (carry .whl; ~6-8 min)
set -uo pipefail
OUT="${OUT:-$PWD/wip-out}"; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONPATH="/tmp/site:$PWD/python:$PWD/bench/python"
t0=$(date +%s)
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DTACO_BUILD_TESTS=ON \
  -DTACO_BUILD_BENCH=ON -DPython3_EXECUTABLE="$(command -v python3)" > "$OUT/build.log" 2>&1 &&
  cmake --build build-gpu -j"$(nproc)" >> "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
export TACO_LIBRARY="$PWD/build-gpu/libtaco.so"
(cd build-gpu && ctest --output-on-failure) > "$OUT/ctest.txt" 2>&1; echo "ctest rc=$? $(tail -1 "$OUT/ctest.txt")"
# 1. Correctness: the peer kernels (loopback, every algorithm, graphs, abort, timeout) in the
#    default order and interleaved, and the processes' world with its bursts (fused, one-shot, raw).
python3 -m pytest -m gpu -q -x tests/gpu/test_peer_allreduce.py tests/gpu/test_peer_timeline.py \
  > "$OUT/peer_default.txt" 2>&1; echo "peer tests (default order) rc=$? $(tail -1 "$OUT/peer_default.txt")"
TACO_PEER_EARLY_LAUNCH=2 python3 -m pytest -m gpu -q -x tests/gpu/test_peer_allreduce.py \
  > "$OUT/peer_interleaved.txt" 2>&1; echo "peer tests (interleaved) rc=$? $(tail -1 "$OUT/peer_interleaved.txt")"
python3 -m pytest -m gpu -q -x tests/gpu/test_ipc_world.py > "$OUT/ipc.txt" 2>&1
echo "ipc_world rc=$? $(tail -1 "$OUT/ipc.txt")"
# 2. A/B in one run, two turns each, alternating: default order (1) against interleaved (2).
for turn in 1 2; do
  for mode in 1 2; do
    TACO_PEER_EARLY_LAUNCH=$mode python3 bench/peer_roofline.py --all --algos fused --iters 5 \
      --json "$OUT/roofline_mode${mode}_turn${turn}.json" > "$OUT/roofline_mode${mode}_turn${turn}.txt" 2>&1
    echo "roofline mode $mode turn $turn rc=$?"
  done
done
python3 - "$OUT" <<'PY'
import json, sys, glob, collections
out = sys.argv[1]
t = collections.defaultdict(lambda: collections.defaultdict(list))
frac = collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob(f"{out}/roofline_mode*_turn*.json")):
    mode = f.split("roofline_mode")[1][0]
    for r in json.load(open(f))["rows"]:
        key = (r["P"], r["dtype"], r["codec"], r["algo"])
        t[key][mode].append(r["time_ms"])
        frac[key][mode].append(r["of_memcpy"])
mean = lambda v: sum(v) / len(v)
print("P dtype codec algo: roofline fraction default -> interleaved, time interleaved / default")
for key in sorted(t, key=str):
    if t[key]["1"] and t[key]["2"]:
        print(*key, f"{mean(frac[key]['1']):.2f} -> {mean(frac[key]['2']):.2f}",
              f"{mean(t[key]['2']) / mean(t[key]['1']):.3f}")
PY

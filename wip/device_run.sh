#!/usr/bin/env bash
# Work in progress (written 2026-12-05 with no device time left): what decides whether
# wip/oneshots-between-processes.patch lands, the second turn of the interleaved-chunks A/B, the
# forced one-shot's fixed cost with the fixed taco_perf, and HBM bytes with the write-back counted.
# On the device, carrying .whl (about 8 minutes):
#   git apply wip/oneshots-between-processes.patch wip/ipc-release-line.patch   # here, before the run
#   bash wip/device_run.sh 2>&1 | tee $OUT/log
set -uo pipefail
OUT="${OUT:-$PWD/wip-out}"; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH="/tmp/site:$PWD/python:$PWD/bench/python"
t0=$(date +%s)
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DTACO_BUILD_TESTS=ON \
  -DTACO_BUILD_BENCH=ON -DPython3_EXECUTABLE="$(command -v python3)" > "$OUT/build.log" 2>&1 &&
  cmake --build build-gpu -j"$(nproc)" >> "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
export TACO_LIBRARY="$PWD/build-gpu/libtaco.so"
# 1. The one-shots between processes: the tune world times them and may choose them (ipc_world),
#    the tuner's own tests, the selection's host test.
(cd build-gpu && ctest --output-on-failure -R select) > "$OUT/ctest_select.txt" 2>&1; echo "ctest select rc=$?"
python3 -m pytest -m gpu -q -x tests/gpu/test_ipc_world.py tests/gpu/test_tune.py > "$OUT/ipc_tune.txt" 2>&1
echo "ipc_world + test_tune rc=$? $(tail -1 "$OUT/ipc_tune.txt")"
# 2. The interleaved order's second turn: mode 2 first this time (the first run had mode 1 first).
for mode in 2 1; do
  TACO_PEER_EARLY_LAUNCH=$mode timeout 110 python3 bench/peer_roofline.py --all --algos fused --iters 5 \
    --sizes 2:256,4:256 --json "$OUT/roofline_mode$mode.json" > "$OUT/roofline_mode$mode.txt" 2>&1
  echo "roofline mode $mode rc=$?"
done
# 3. Small messages: the one-shot's and raw one-shot's fixed cost against plain, graph-replayed.
P_BIN=$(find build-gpu -name taco_perf -type f | head -1)
for algo in oneshot oneshot-raw fused; do
  for p in 2 8; do
    timeout 30 "$P_BIN" --loopback $p -b 4K -e 256K -f 8 -n 200 -w 50 -G 20 -C fp8-block -d bfloat16 --algo $algo \
      > "$OUT/small_${algo}_p$p.txt" 2>&1
    echo "small $algo P=$p rc=$? $(grep -E '^ +4096 ' "$OUT/small_${algo}_p$p.txt" | head -1)"
  done
done
# 3b. Where the one-shots' small calls spend their time: the phase timeline of one eager call
#     (TACO_PEER_TIMELINE prints the last launch at destroy): P = 2 at 4 KiB (the fixed cost against
#     plain), and the raw one-shot at P = 8 and 256 KiB (0.13x of its roofline, target 0.7x).
for case in "oneshot 2 2048" "oneshot-raw 2 2048" "oneshot-raw 8 131072"; do
  set -- $case
  TACO_PEER_TIMELINE=1 timeout 60 python3 - "$@" <<'PY' > "$OUT/timeline_small_$1_p$2.txt" 2>&1
import sys, torch, taco.comm
algo, P, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
xs = [torch.randn(n, device="cuda").to(torch.bfloat16) for _ in range(P)]
comms = taco.comm.loopback(P, codec="fp8-block", algo=algo, fallback_bytes=0)
for _ in range(20):
    with taco.comm.group():
        for c, x in zip(comms, xs):
            c.allreduce(x)
torch.cuda.synchronize()
for c in comms:
    c.close()
PY
  echo "timeline $case rc=$?"; grep "TACO TIMELINE" "$OUT/timeline_small_$1_p$2.txt" | head -12
done
# 4. HBM bytes with each kernel's write-back counted by the next (CACHE=none), three calls a row.
CACHE=none CALLS=3 timeout 150 bash wip/hbm_bytes.sh "$OUT/hbm" 2>&1 | tee "$OUT/hbm.txt"
echo "total: $(( $(date +%s) - t0 )) s"

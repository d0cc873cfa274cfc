#!/usr/bin/env bash
# Work in progress (no GPU when written, 2026-12-05): HBM bytes per call from Nsight Compute against
# bench/peer_roofline.py's model, for rows where L2 may serve repeated reads (the one-shot's P
# reads of every wire, the gather's reads). On the device after a build, with TACO_LIBRARY and
# PYTHONPATH (python/) set:   bash wip/hbm_bytes.sh $OUT     (a few minutes: ncu replays kernels)
set -uo pipefail
OUT="${1:-hbm-out}"; mkdir -p "$OUT"
export TACO_PEER_EARLY_LAUNCH=0  # kernels one at a time under the profiler, as the earlier ncu runs did
# 2026-12-05 (first run, docs/data/peer_hbm_bytes_h200_2026-12-05.txt): with ncu's default cache
# control a kernel's dirty L2 lines are written back after its end, outside its counters; with
# CACHE=none (ncu --cache-control none) the next kernel of the call counts the previous one's.
CACHE="${CACHE:-all}"
export CALLS="${CALLS:-1}"  # calls per row (the sums per call); CACHE=none CALLS=3 for a steady state
# P algo codec dtype MiB-per-rank: sizes above the 50 MB L2 in total, one chunk a call
for row in "2 fused fp8-block bfloat16 64" "2 oneshot fp8-block bfloat16 64" \
           "8 fused fp8-block bfloat16 16" "8 oneshot fp8-block bfloat16 16" \
           "8 oneshot-raw fp8-block float32 16" "2 fused taco bfloat16 64"; do
  set -- $row
  tag="$1_$2_$3_$4"
  ncu --cache-control "$CACHE" --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,gpu__time_duration.sum -k regex:peer --csv --page raw \
      --print-units base python3 wip/hbm_bytes.py run "$@" > "$OUT/ncu_$tag.csv" 2> "$OUT/ncu_$tag.err" ||
    { echo "ncu failed for $row: $(tail -3 "$OUT/ncu_$tag.err")"; continue; }
  python3 wip/hbm_bytes.py sum "$OUT/ncu_$tag.csv" "$@"
done

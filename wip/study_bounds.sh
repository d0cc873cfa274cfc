#!/usr/bin/env bash
# Work in progress (written 2026-12-05 with no device lent): two upper bounds for the fused
# two-shot, so that the next kernel change is chosen by a measurement, not a guess.
#   - TACO_STUDY_NO_WAITS: the fused phases skip their flag waits (from epoch 2 on, once both
#     halves of the scratch hold a call's data): what phases that overlap perfectly (per-tile
#     flags, deliverable 2 of the fused-kernel work) could give at most on one GPU.
#   - TACO_STUDY_TWO_WHT: the rotated reduce skips the transform of its decoded output (two fp32
#     transforms a block instead of three, and two transpositions fewer): what the reduce summed
#     in the rotated domain (wip/rotated_reduce_study.py: accuracy unchanged, a spec change) could
#     give at most.
#   - TACO_STUDY_NONCOOP: the one-shots launched without the cooperative attribute (grids no
#     larger than the SM count): what the cooperative launch costs a small call (the one-shot's
#     fixed cost is ~8 us above plain at 4 KiB; the target is 4). Results stay right here.
# Both give wrong results; the study build (-DTACO_STUDY=1) is never installed or tested. The
# hooks are wip/study-bounds.patch; without the macro the patched tree compiles to main's device
# code (checked with -Xptxas -v and the objects of peer_kernels_bf16_e4m3: same registers, and
# the objects differ in 3 bytes of the host side), so build-gpu may be built from it.
#   git apply wip/study-bounds.patch                            # here, before the run
#   bash wip/study_bounds.sh 2>&1 | tee $OUT/study.log          # on the device, carrying .whl
# (about 6 minutes: the study library's build, then 4 x 2 sweeps of 4 codecs x 2 dtypes x 3 P;
# after wip/device_run.sh it reuses build-gpu, alone it builds it too.)
set -uo pipefail
OUT="${OUT:-$PWD/wip-out}"; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl 2>/dev/null
export PYTHONPATH="/tmp/site:$PWD/python:$PWD/bench/python"
t0=$(date +%s)
build() {  # dir, extra flags, extra targets
  cmake -S . -B "$1" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DTACO_BUILD_TESTS=OFF \
    -DTACO_BUILD_BENCH=ON -DCMAKE_CUDA_FLAGS="$2" -DCMAKE_CXX_FLAGS="$2" \
    -DPython3_EXECUTABLE="$(command -v python3)" > "$OUT/build_$1.log" 2>&1 &&
    cmake --build "$1" -j"$(nproc)" --target taco ${3:-} >> "$OUT/build_$1.log" 2>&1 || { tail -30 "$OUT/build_$1.log"; return 1; }
}
[ -f build-gpu/libtaco.so ] || build build-gpu "" || exit 1
build build-study "-DTACO_STUDY=1" taco_perf || exit 1
echo "builds: $(( $(date +%s) - t0 )) s"
CODECS=fp8-block,int8-block,taco,int6-hadamard
sweep() {  # tag, library, sizes, env...
  local tag=$1 lib=$2 sizes=$3; shift 3
  env "$@" TACO_LIBRARY="$lib" timeout 150 python3 bench/peer_roofline.py --all --algos fused --iters 5 \
    --sizes "$sizes" --codecs "$CODECS" --json "$OUT/study_$tag.json" > "$OUT/study_$tag.txt" 2>&1
  echo "sweep $tag rc=$? ($(( $(date +%s) - t0 )) s)"
}
# Two turns, alternating, so that drift shows as a difference between the turns.
# No waits at P = 2 and 4 only: from P = 5 on the fused phases claim their tiles from counters
# that the last CTA of a phase resets, and without the waits a phase of chunk k + 2 (or of the
# next call) may claim from a counter that chunk k's phase has not reset yet, skipping or redoing
# tiles: the bound would not be a bound there.
ALL=2:256,4:256,8:64
for turn in 1 2; do
  sweep main$turn "$PWD/build-gpu/libtaco.so" $ALL
  sweep control$turn "$PWD/build-study/libtaco.so" $ALL
  sweep nowaits$turn "$PWD/build-study/libtaco.so" 2:256,4:256 TACO_STUDY_NO_WAITS=1
  sweep twowht$turn "$PWD/build-study/libtaco.so" $ALL TACO_STUDY_TWO_WHT=1
done
# The cooperative launch's cost to a small call: the one-shots at 4 KiB (P = 2) and 256 KiB
# (P = 8), graph-replayed, with and without the attribute, alternating, two turns.
SP=$(find build-study -name taco_perf -type f | head -1)
for turn in 1 2; do
  for coop in coop noncoop; do
    for case in "2 4K oneshot" "2 4K oneshot-raw" "8 256K oneshot-raw"; do
      set -- $case
      envs=(); [ $coop = noncoop ] && envs=(TACO_STUDY_NONCOOP=1)
      env "${envs[@]}" timeout 30 "$SP" --loopback $1 -b $2 -e $2 -n 500 -w 50 -G 20 -C fp8-block -d bfloat16 \
        --algo $3 > "$OUT/small_${coop}_$1_$2_$3_t$turn.txt" 2>&1
      echo "$coop P=$1 $2 $3 turn $turn rc=$? $(grep -E '^ +[0-9]+ ' "$OUT/small_${coop}_$1_$2_$3_t$turn.txt" | head -1)"
    done
  done
done
python3 - "$OUT" <<'PY'
import json, math, sys
out = sys.argv[1]
def load(tag):
    try:
        rows = json.load(open(f"{out}/study_{tag}.json"))["rows"]
    except (OSError, ValueError):
        return {}
    return {(r["P"], r["dtype"], r["codec"]): r for r in rows}
base = {t: load(f"main{t}") for t in (1, 2)}
print("time variant / main, each turn; fraction of the roofline main -> variant (turn 1)")
for var in ("control", "nowaits", "twowht"):
    print(f"## {var}")
    for key in sorted(base[1]):
        cells = []
        for t in (1, 2):
            v = load(f"{var}{t}").get(key)
            b = base[t].get(key)
            cells.append(f"{v['time_ms'] / b['time_ms']:.3f}" if v and b else "-")
        v1 = load(f"{var}1").get(key)
        frac = f"{base[1][key]['of_memcpy']:.2f} -> {v1['of_memcpy']:.2f}" if v1 else ""
        print(f"P={key[0]} {key[1]:8s} {key[2]:14s} {' / '.join(cells)}   {frac}")
PY
echo "total: $(( $(date +%s) - t0 )) s"

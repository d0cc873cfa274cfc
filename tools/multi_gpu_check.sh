#!/usr/bin/env bash
# The multi-GPU measurement in one command, for a machine with N GPUs on NVLink and no network
# (the shared nvidia-h200-x2/-x4/-x8 machines):
#   bash tools/multi_gpu_check.sh [N]        (N: ranks, default: every GPU)
#   STEPS="1 2" bash tools/multi_gpu_check.sh  (only those steps: a 10-minute job limit fits
#                                               the build with step 1, or one or two of the others)
# Builds build-gpu/, then, every step bounded by a time limit and logged under $OUT:
#   1. the MPI suite on N ranks (tests/mpi: bit for bit against the model, every peer-memory route);
#   2. taco_perf AllReduce against NCCL in the same run, bf16 and fp32, 8 B .. 4 GiB, for each
#      AllReduce algorithm forced and the default selection, peer memory on (TACO_PEER_MEMORY=1);
#   3. the same with each peer-memory route forced (nccl, ipc) at 64 MiB .. 1 GiB;
#   4. ReduceScatter, AllGather and AlltoAll against NCCL;
#   5. an emulated slow wire (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1: NCCL's socket transport) for
#      the staged path against NCCL.
# NVLink multicast stays off (NCCL_NVLS_ENABLE=0), as the shared machines require. Everything
# ends up in $OUT/multi_gpu.tgz (one file: the device tool returns few files). Exit status: that
# of the MPI suite.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OUT="${OUT:-$ROOT/multi-gpu-check}"
PY="${PYTHON:-python3}"
N="${1:-$(nvidia-smi -L | wc -l)}"
LOG=/tmp/multi_gpu_logs
rm -rf "$LOG" && mkdir -p "$LOG" "$OUT"
export NCCL_NVLS_ENABLE=0
if compgen -G ".whl/*.whl" > /dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
  export PYTHONPATH="/tmp/site:$ROOT/python:$ROOT/bench/python"
else
  export PYTHONPATH="$ROOT/python:$ROOT/bench/python"
fi
t0=$(date +%s)
step() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
STEPS=" ${STEPS:-1 2 3 4 5} "
want() { [[ "$STEPS" == *" $1 "* ]]; }
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="${CUDAARCHS:-90}" \
  -DPython3_EXECUTABLE="$(command -v "$PY")" -DTACO_BUILD_TESTS=ON -DTACO_BUILD_BENCH=ON > "$LOG/build.log" 2>&1 &&
  cmake --build build-gpu -j"$(nproc)" >> "$LOG/build.log" 2>&1 || { tail -30 "$LOG/build.log"; exit 1; }
step "build"
export TACO_LIBRARY="$ROOT/build-gpu/libtaco.so" TACO_WAIT_TIMEOUT_S=30
nvidia-smi -L | tee "$LOG/gpus.txt"
MPI=(mpirun --allow-run-as-root -np "$N" -x NCCL_NVLS_ENABLE -x PYTHONPATH -x TACO_LIBRARY -x TACO_WAIT_TIMEOUT_S)
PERF=build-gpu/bench/taco_perf

# 1. The MPI suite (its peer-memory route tests set TACO_PEER_MEMORY themselves).
mpi_rc=0
if want 1; then
  timeout 600 "${MPI[@]}" "$PY" -m pytest -q -m mpi tests/mpi -p no:cacheprovider > "$LOG/mpi_suite.txt" 2>&1
  mpi_rc=$?
  grep -E "passed|failed|error" "$LOG/mpi_suite.txt" | tail -"$N"
  step "MPI suite (exit $mpi_rc)"
fi

# 2. AllReduce against NCCL, every algorithm forced and the default, peer memory on.
want 2 && for algo in auto staged fused oneshot oneshot-raw; do
  timeout 900 "${MPI[@]}" -x TACO_PEER_MEMORY=1 "$PERF" -b 8 -e 4G -f 4 -n 20 -w 5 -c 1 --check-max 64M \
    -o allreduce -d bfloat16,float -C fp8-block,taco,int8-hadamard,int6-hadamard,none --algo "$algo" \
    -J "$LOG/allreduce_$algo.json" > "$LOG/allreduce_$algo.txt" 2>&1
  step "allreduce --algo $algo (exit $?)"
done

# 3. Each peer-memory route alone, large messages.
want 3 && for route in nccl ipc; do
  timeout 600 "${MPI[@]}" -x TACO_PEER_MEMORY="$route" -x TACO_DEBUG=INFO "$PERF" -b 64M -e 1G -f 2 \
    -o allreduce -d bfloat16 -C fp8-block,int6-hadamard --algo fused -J "$LOG/route_$route.json" \
    > "$LOG/route_$route.txt" 2>&1
  step "route $route (exit $?)"
done

# 4. The other collectives.
want 4 && timeout 600 "${MPI[@]}" "$PERF" -b 1K -e 1G -f 4 -o reduce_scatter,allgather,alltoall -d bfloat16,float \
  -C fp8-block,taco -J "$LOG/others.json" > "$LOG/others.txt" 2>&1
want 4 && step "other collectives"

# 5. An emulated slow wire: NCCL over sockets, the staged path against it.
want 5 && timeout 600 "${MPI[@]}" -x NCCL_P2P_DISABLE=1 -x NCCL_SHM_DISABLE=1 "$PERF" -b 1M -e 256M -f 4 \
  -o allreduce -d bfloat16 -C fp8-block,taco,int6-hadamard --algo staged -J "$LOG/slow_wire.json" \
  > "$LOG/slow_wire.txt" 2>&1
want 5 && step "slow wire"

tar czf "$OUT/multi_gpu.tgz" -C /tmp multi_gpu_logs
step "done: $OUT/multi_gpu.tgz"
exit "$mpi_rc"

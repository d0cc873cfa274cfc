// Device helpers of taco_perf: input generation, conversion for the host check,
// cross-rank comparison, and the do-it-yourself FP8 baseline (diy.cu).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "taco.h"

namespace perf {

// Laplace(0, 1) values, rounded to `dtype`: element i of rank `rank` depends only
// on (seed, rank, i), so any rank can regenerate any other rank's input.
cudaError_t launchFill(void* buf, size_t count, tacoDataType_t dtype, uint64_t seed, int rank, cudaStream_t s);
// dst[i] = float(src[i]).
cudaError_t launchToFloat(const void* src, float* dst, size_t count, tacoDataType_t dtype, cudaStream_t s);
// *out += a position-sensitive 64-bit checksum of `bytes` (a multiple of 2)
// bytes; the order of accumulation does not matter (sum mod 2^64), so the
// result is deterministic. Zero *out first.
cudaError_t launchHash(const void* buf, size_t bytes, unsigned long long* out, cudaStream_t s);
// *out += the number of 16-bit words in which a and b differ. Zero *out first.
cudaError_t launchCompare(const void* a, const void* b, size_t bytes, unsigned long long* out, cudaStream_t s);

// ---- do-it-yourself baseline: what a user writes without libtaco.
constexpr int kDiyBlock = 256;  // elements per FP8 block (one fp32 absmax scale each)
// A rank's packet: nblocks*256 FP8 E4M3 codes (the tail block zero-padded), then
// nblocks fp32 scales. Its size, a multiple of 4 bytes.
size_t diyPacketBytes(size_t count);
// x -> packet (one thread block per FP8 block: absmax, scale = absmax/448, codes).
cudaError_t launchDiyQuantize(const void* x, size_t count, tacoDataType_t dtype, void* packet, cudaStream_t s);
// y[i] = sum over p = 0..P-1 (in that order, fp32) of dequantize(packet p)[i],
// rounded once to dtype; `packets` holds P packets of diyPacketBytes(count) each.
cudaError_t launchDiyDequantSum(const void* packets, int P, size_t count, tacoDataType_t dtype, void* y,
                                cudaStream_t s);

}  // namespace perf

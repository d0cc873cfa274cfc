// Device code shared by every codec path: the group reductions, asynchronous
// global -> shared copies, the Walsh-Hadamard butterflies in registers and the
// generic transform.
//
// Thread mapping assumed: a block of B elements is held by tpb = B / 32 consecutive
// lanes of one warp ("a group", tpb a power of two <= 32), so a group reduction is a
// butterfly of xor shuffles over the low lane bits. The generic fwht also assumes
// the chunk layout of the generic path (block_generic.cuh).
//
// Everything here and in the other device/ headers is a template or __device__
// __forceinline__ in namespace taco::dev, so any number of .cu files can include
// them (the codec kernels, the fused collective kernels).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "codec/block_math.h"
#include "codec/device/args.h"

namespace taco {
namespace dev {

using namespace blockmath;  // the per-block math, shared with the host twin

__device__ __forceinline__ bool groupAny(bool p, int tpb) {
  int v = p;
  for (int o = 1; o < tpb; o <<= 1) v |= __shfl_xor_sync(0xffffffffu, v, o);
  return v != 0;
}
__device__ __forceinline__ float groupMax(float v, int tpb) {
  for (int o = 1; o < tpb; o <<= 1) v = fmax2(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ uint32_t groupSum(uint32_t v, int tpb) {
  for (int o = 1; o < tpb; o <<= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ uint32_t groupMaxU(uint32_t v, int tpb) {
  for (int o = 1; o < tpb; o <<= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// ---- Asynchronous global -> shared copies (cp.async, sm_80+): every thread stages
// the chunks of the tile after next while it computes this one, so loads stay in
// flight without holding registers (a register prefetch cost a third of the
// occupancy). Each thread reads back only what it copied itself: no barrier. With
// no barrier, nothing but the "memory" clobbers below keeps the compiler from moving
// a slot's shared-memory reads above the wait that completes it, or below the copy
// that refills it.
__device__ __forceinline__ void cpAsync(void* smem, const void* gmem, int bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const uint32_t s = (uint32_t)__cvta_generic_to_shared(smem);
  if (bytes == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
  else if (bytes == 8)
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(s), "l"(gmem) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(s), "l"(gmem) : "memory");
#else
  memcpy(smem, gmem, bytes);
#endif
}
__device__ __forceinline__ void cpAsyncCommit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
template <int N>
__device__ __forceinline__ void cpAsyncWait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

// Walsh-Hadamard butterflies in registers on strides H0, 2 H0, ..., H1 of the register
// index (none when H1 < H0).
template <int H0, int H1, int N>
__device__ __forceinline__ void butterflies(float (&v)[N]) {
#pragma unroll
  for (int h = H0; h <= H1; h <<= 1)
#pragma unroll
    for (int r = 0; r < N; ++r)
      if (!(r & h)) {
        const float x = v[r], y = v[r + h];
        v[r] = x + y;
        v[r + h] = x - y;
      }
}

// Walsh-Hadamard butterflies in ascending stride: the chunk bits (in registers),
// the thread bits (shuffles), then the chunk-index bits (in registers).
template <int V>
__device__ __forceinline__ void fwht(float (&v)[kPerThread], int t, int tpb) {
  butterflies<1, V / 2>(v);
  for (int o = 1; o < tpb; o <<= 1) {
    // lower lane: a + b; upper lane: a - b, as other + sign * own in one exact-sign FMA
    // (sign * own is exact, so the FMA rounds once, like the plain add/sub).
    const float sign = (t & o) ? -1.0f : 1.0f;
#pragma unroll
    for (int r = 0; r < kPerThread; ++r) {
      float other = __shfl_xor_sync(0xffffffffu, v[r], o);
      v[r] = __fmaf_rn(sign, v[r], other);
    }
  }
  butterflies<V, kPerThread / 2>(v);
}

}  // namespace dev
}  // namespace taco

// Decoding a block of compressed inputs through the general loads: each input's
// scales and decode shift, the sum of the decoded inputs (+ the rotation), back from
// the shift (+ the exact input), and the same scaled by 2^-64 for a sum that overflowed.
// The staged paths repeat these operations per element, in this order.
#pragma once
#include "codec/device/block_chunk_codes.cuh"

namespace taco {
namespace dev {

// Input q's scales (alpha, s) of `block` (alpha = 1 without the adaptive scale).
__device__ __forceinline__ void inputScales(const Args& a, int q, size_t block, float& alpha, float& s) {
  const float* sc = reinterpret_cast<const float*>(static_cast<const uint8_t*>(a.in.ptr[q]) + a.scalesOffset);
  alpha = a.k.adaptive ? sc[2 * block] : 1.0f;
  s = a.k.adaptive ? sc[2 * block + 1] : sc[block];
}

// A block's decode shift: K, the largest of its inputs' (block_math.h, decodeShift), and
// whether its unshift saturates (sat: one input, not wide).
struct SumShift {
  int K;
  bool sat;
};

// The decode shift of `block` (a.in.n > 0). No division: the plain decode's cost stays one
// per input.
__device__ __forceinline__ SumShift blockDecodeShift(const Args& a, size_t block) {
  SumShift sh{-64, false};
  for (int q = 0; q < a.in.n; ++q) {
    float alpha, s;
    inputScales(a, q, block, alpha, s);
    sh.K = max(sh.K, decodeShift(s, alpha, a.k.c));
    if (q == 0) sh.sat = a.in.n == 1 && !wideScale(s);
  }
  return sh;
}

// Back from the decode's exponent shift K != 0 (block_math.h, unshift), in one loop: the
// saturation limit is FLT_MAX 2^-64 with K > 0 and sat, else +Inf (no clamp; NaN stays NaN).
template <int N>
__device__ __forceinline__ void unshiftAll(float (&v)[N], int K, bool sat) {
  const float mul = K < 0 ? 0x1p-64f : 0x1p64f;
  const float lim = K > 0 && sat ? kTopScaled : INFINITY;
#pragma unroll
  for (int r = 0; r < N; ++r) v[r] = (fabsf(v[r]) > lim ? copysignf(lim, v[r]) : v[r]) * mul;
}

template <typename T, int FMT, bool FIRST>
__device__ __forceinline__ void accumulateInput(const Args& a, int q, size_t block, int t, bool active, int K,
                                                float (&v)[kPerThread]) {
  constexpr int V = Vec<T>::V;
  const uint8_t* w = static_cast<const uint8_t*>(a.in.ptr[q]);
  float d = 0.0f;
  if (active) {
    float alpha, s;
    inputScales(a, q, block, alpha, s);
    d = decodeScaleShifted(s, alpha, a.k.c, K);
  }
  // every chunk's load issued before the first decode (memory-level parallelism)
  LoadedChunk<V, FMT> c[Vec<T>::NCH];
  const bool whole = active && a.vec && wholeCodes<FMT>(a);  // its codes in one load
  if (whole) {
    if constexpr (FMT == kFmtInt4) LoadedChunk<V, FMT>::loadBlock(c, w + TACO_HEADER_BYTES, block);
  } else if (active && a.vec) {
#pragma unroll
    for (int j = 0; j < Vec<T>::NCH; ++j) c[j].template load<true>(w + TACO_HEADER_BYTES, block, t, a, j);
  } else if (active) {
#pragma unroll
    for (int j = 0; j < Vec<T>::NCH; ++j) c[j].template load<false>(w + TACO_HEADER_BYTES, block, t, a, j);
  } else {
#pragma unroll
    for (int j = 0; j < Vec<T>::NCH; ++j) c[j].clear();
  }
#pragma unroll
  for (int j = 0; j < Vec<T>::NCH; ++j) {
    float f[V];
    c[j].decode(f);
#pragma unroll
    for (int i = 0; i < V; ++i) v[j * V + i] = FIRST ? f[i] * d : v[j * V + i] + f[i] * d;
  }
}

// Decoded sum of the k inputs for this thread's elements of `block`: R = W_0 + W_1 + ...
// (W_q = code * d_q, the first one assigned, not added to 0, so that -0 survives), then
// the rotation; still scaled by the decode's exponent shift, which it returns.
template <typename T, int FMT>
__device__ __forceinline__ SumShift accumulateRaw(const Args& a, size_t block, int t, bool active,
                                                  float (&v)[kPerThread]) {
  SumShift sh{0, false};
  if (a.in.n == 0) {
#pragma unroll
    for (int r = 0; r < kPerThread; ++r) v[r] = 0.0f;
  } else {
    if (active) sh = blockDecodeShift(a, block);
    accumulateInput<T, FMT, true>(a, 0, block, t, active, sh.K, v);
    for (int q = 1; q < a.in.n; ++q) accumulateInput<T, FMT, false>(a, q, block, t, active, sh.K, v);
  }
  if (a.k.rotate) fwht<Vec<T>::V>(v, t, a.k.tpb);
  return sh;
}

// The sum back from its shift, + the exact input a.x if there is one: at K = 64 the two
// together (block_math.h, unshiftAddTop: a sum past FLT_MAX that the exact input does not
// bring back is +-Inf), else unshift, then + x.
template <typename T>
__device__ __forceinline__ void finishSum(const Args& a, size_t block, int t, bool active, float (&v)[kPerThread],
                                          SumShift sh) {
  const bool exact = a.x != nullptr && active;
  if (exact && sh.K > 0) {
    const bool sat = sh.sat;
    combineValues<T>(static_cast<const T*>(a.x), block, t, a, v,
                     [sat](float u, float e) { return unshiftAddTop(u, e, sat); });
    return;
  }
  if (sh.K != 0) unshiftAll(v, sh.K, sh.sat);
  if (exact) addValues<T>(static_cast<const T*>(a.x), block, t, a, v);
}

// The same sum scaled by 2^-64, for the wide block of a sum that overflowed
// (block_math.h, wideValue): the exact input joins it as e * 2^-64.
template <typename T>
__device__ __forceinline__ void wideSum(const Args& a, size_t block, int t, bool active, float (&v)[kPerThread],
                                        SumShift sh) {
#pragma unroll
  for (int r = 0; r < kPerThread; ++r) v[r] = wideValue(v[r], sh.K, sh.sat);
  if (a.x != nullptr && active)
    combineValues<T>(static_cast<const T*>(a.x), block, t, a, v,
                     [](float u, float e) { return u + e * 0x1p-64f; });
}

// A plain decompress (one input, no exact input) of this thread's elements of `block`
// through the general loads: the sum of accumulateRaw, back from its shift.
template <typename T, int FMT>
__device__ __forceinline__ void accumulateTile(const Args& a, size_t block, int t, bool active,
                                               float (&v)[kPerThread]) {
  const SumShift sh = accumulateRaw<T, FMT>(a, block, t, active, v);
  if (sh.K != 0) unshiftAll(v, sh.K, sh.sat);
}

}  // namespace dev
}  // namespace taco

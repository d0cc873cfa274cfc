// The elementwise codecs: none (raw T on the wire) and bf16, compress,
// decompress(-accumulate) and decompress-reduce-compress.
//
// Thread mapping: V = 16 / sizeof(T) consecutive elements per thread and step (one
// 16-byte vector of T), grid-stride: thread tid of nThreads takes vectors tid,
// tid + nThreads, ...; thread 0 of the partition writes the output's header. Any
// block size; no shared memory.
#pragma once
#include <type_traits>

#include "codec/device/io.cuh"

namespace taco {
namespace dev {

// An fp32 value as a wire element: the bf16 codec saturates fp32 data (block_math.h,
// toBf16Saturating); 16-bit data keeps the plain conversion: compressed as it is it cannot
// exceed bf16's range, and a sum of it that does is Inf, as it is in the dtype itself.
template <typename T, typename W, int MODE>
__device__ __forceinline__ W toWire(float v) {
  if constexpr (std::is_same<W, __nv_bfloat16>::value && sizeof(T) == 4)
    return toBf16Saturating(v);
  else
    return fromFloat<W>(v);
}

// One partition's share of an elementwise codec call (all of it for tid in
// [0, nThreads)): W is the wire type (__nv_bfloat16 for the bf16 codec, T for none).
template <typename T, typename W, int MODE>
__device__ __forceinline__ void elementTiles(const Args& a, size_t tid, size_t nThreads) {
  constexpr int V = Vec<T>::V;
  const size_t nVec = (a.count + V - 1) / V;
  bool inputsOk = true;
  if (MODE != kCompress) inputsOk = inputHeadersOk(a);
  if ((MODE != kAccumulate) && tid == 0) writeHeader(a.out, a);
  const T* x = static_cast<const T*>(a.x);
  for (size_t i = tid; i < nVec; i += nThreads) {
    const size_t base = i * V;
    const bool full = a.vec && base + V <= a.count;
    const int n = (int)((a.count - base) < (size_t)V ? (a.count - base) : (size_t)V);
    float v[V];
    float e[V];
    if (x != nullptr) {
      if (full) {
        uint4 raw = __ldg(reinterpret_cast<const uint4*>(x + base));
        const T* t = reinterpret_cast<const T*>(&raw);
#pragma unroll
        for (int j = 0; j < V; ++j) e[j] = toFloat<T>(t[j]);
      } else {
#pragma unroll
        for (int j = 0; j < V; ++j) e[j] = j < n ? toFloat<T>(x[base + j]) : 0.0f;
      }
    }
    if (MODE == kCompress) {
#pragma unroll
      for (int j = 0; j < V; ++j) v[j] = e[j];
    } else {
      for (int q = 0; q < a.in.n; ++q) {
        const W* w = reinterpret_cast<const W*>(static_cast<const uint8_t*>(a.in.ptr[q]) + TACO_HEADER_BYTES);
        W wv[V];
        if (full) {
          if (sizeof(W) * V == 16) {
            *reinterpret_cast<uint4*>(wv) = __ldg(reinterpret_cast<const uint4*>(w + base));
          } else {
            *reinterpret_cast<uint2*>(wv) = __ldg(reinterpret_cast<const uint2*>(w + base));
          }
        } else {
#pragma unroll
          for (int j = 0; j < V; ++j) wv[j] = j < n ? w[base + j] : fromFloat<W>(0.0f);
        }
#pragma unroll
        for (int j = 0; j < V; ++j) {
          float d = toFloat<W>(wv[j]);
          v[j] = q == 0 ? d : v[j] + d;
        }
      }
      if (a.in.n == 0)
#pragma unroll
        for (int j = 0; j < V; ++j) v[j] = 0.0f;
      if (x != nullptr)
#pragma unroll
        for (int j = 0; j < V; ++j) v[j] = v[j] + e[j];
      if (!inputsOk)
#pragma unroll
        for (int j = 0; j < V; ++j) v[j] = canonicalNaN();
    }
    if (MODE != kAccumulate) {
      W* w = reinterpret_cast<W*>(a.out + TACO_HEADER_BYTES);
      W wv[V];
#pragma unroll
      for (int j = 0; j < V; ++j) {
        wv[j] = toWire<T, W, MODE>(v[j]);
        v[j] = toFloat<W>(wv[j]);
      }
      if (full) {
        if (sizeof(W) * V == 16) {
          *reinterpret_cast<uint4*>(w + base) = *reinterpret_cast<uint4*>(wv);
        } else {
          *reinterpret_cast<uint2*>(w + base) = *reinterpret_cast<uint2*>(wv);
        }
      } else {
        for (int j = 0; j < n; ++j) w[base + j] = wv[j];
      }
    }
    if (MODE != kCompress && a.y != nullptr) {
      T* y = static_cast<T*>(a.y);
      T yv[V];
#pragma unroll
      for (int j = 0; j < V; ++j) yv[j] = fromFloat<T>(v[j]);
      if (full) {
        *reinterpret_cast<uint4*>(y + base) = *reinterpret_cast<uint4*>(yv);
      } else {
        for (int j = 0; j < n; ++j) y[base + j] = yv[j];
      }
    }
  }
}

}  // namespace dev
}  // namespace taco

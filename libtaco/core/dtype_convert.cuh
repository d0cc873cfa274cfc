// Element conversions to and from fp32, for host and device code alike: the
// codec math (codec/block_math.h), the loopback reductions and the host codec
// all convert through these, so they round the same way everywhere
// (round-to-nearest-even on the way back).
//
// The one internal header that code outside the library may include: taco_perf's kernels
// (bench/perf/kernels.cu, diy.cu) convert through it, so that its inputs and its do-it-yourself
// baseline round as the library does. Header-only, it uses no symbol of libtaco.so: keep it so.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace taco {

template <typename T> __host__ __device__ __forceinline__ float toFloat(T v);
template <> __host__ __device__ __forceinline__ float toFloat<float>(float v) { return v; }
template <> __host__ __device__ __forceinline__ float toFloat<__half>(__half v) { return __half2float(v); }
template <> __host__ __device__ __forceinline__ float toFloat<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

template <typename T> __host__ __device__ __forceinline__ T fromFloat(float v);
template <> __host__ __device__ __forceinline__ float fromFloat<float>(float v) { return v; }
template <> __host__ __device__ __forceinline__ __half fromFloat<__half>(float v) { return __float2half_rn(v); }
template <> __host__ __device__ __forceinline__ __nv_bfloat16 fromFloat<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

}  // namespace taco

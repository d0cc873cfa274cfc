// Plain (uncompressed) collectives of the loopback transport, as single
// kernels that see every rank's buffers. Each thread owns one output position
// of every rank and reads all its inputs before writing, so in-place calls are
// safe. Sums are fp32, in rank order 0..P-1, rounded once to the dtype.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "core/dtype_convert.cuh"
#include "transport/transport.h"

namespace taco {
namespace {

constexpr int kThreads = 256;

unsigned gridFor(size_t n) {
  size_t b = (n + kThreads - 1) / kThreads;
  if (b > 65535u * 8u) b = 65535u * 8u;
  return (unsigned)(b > 0 ? b : 1);
}

template <typename T>
__global__ void allReduceKernel(RankPtrs p, size_t count) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
       i += (size_t)gridDim.x * blockDim.x) {
    float s = toFloat<T>(static_cast<const T*>(p.in[0])[i]);
    for (int r = 1; r < p.n; ++r) s = __fadd_rn(s, toFloat<T>(static_cast<const T*>(p.in[r])[i]));
    const T v = fromFloat<T>(s);
    for (int r = 0; r < p.n; ++r) static_cast<T*>(p.out[r])[i] = v;
  }
}

template <typename T>
__global__ void reduceScatterKernel(RankPtrs p, size_t n) {
  const int r = blockIdx.y;  // output rank
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const size_t k = (size_t)r * n + i;
    float s = toFloat<T>(static_cast<const T*>(p.in[0])[k]);
    for (int j = 1; j < p.n; ++j) s = __fadd_rn(s, toFloat<T>(static_cast<const T*>(p.in[j])[k]));
    static_cast<T*>(p.out[r])[i] = fromFloat<T>(s);
  }
}

template <typename T>
__global__ void allGatherKernel(RankPtrs p, size_t n) {
  const int j = blockIdx.y;  // source rank
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const T v = static_cast<const T*>(p.in[j])[i];
    for (int r = 0; r < p.n; ++r) static_cast<T*>(p.out[r])[(size_t)j * n + i] = v;
  }
}

// blockIdx.y enumerates the pairs (r, j), r <= j: both directions of a pair
// are read before either is written (in-place safe).
template <typename T>
__global__ void alltoAllKernel(RankPtrs p, size_t n) {
  int pair = blockIdx.y, r = 0;
  while (pair >= p.n - r) pair -= p.n - r, ++r;
  const int j = r + pair;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const T a = static_cast<const T*>(p.in[j])[(size_t)r * n + i];  // j -> r
    const T b = static_cast<const T*>(p.in[r])[(size_t)j * n + i];  // r -> j
    static_cast<T*>(p.out[r])[(size_t)j * n + i] = a;
    static_cast<T*>(p.out[j])[(size_t)r * n + i] = b;
  }
}

}  // namespace

cudaError_t launchLoopAllReduce(const RankPtrs& p, size_t count, tacoDataType_t dtype, cudaStream_t s) {
  if (count == 0) return cudaSuccess;
  const unsigned g = gridFor(count);
  switch (dtype) {
    case tacoFloat32: allReduceKernel<float><<<g, kThreads, 0, s>>>(p, count); break;
    case tacoFloat16: allReduceKernel<__half><<<g, kThreads, 0, s>>>(p, count); break;
    case tacoBfloat16: allReduceKernel<__nv_bfloat16><<<g, kThreads, 0, s>>>(p, count); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launchLoopReduceScatter(const RankPtrs& p, size_t n, tacoDataType_t dtype, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  const dim3 g(gridFor(n), (unsigned)p.n);
  switch (dtype) {
    case tacoFloat32: reduceScatterKernel<float><<<g, kThreads, 0, s>>>(p, n); break;
    case tacoFloat16: reduceScatterKernel<__half><<<g, kThreads, 0, s>>>(p, n); break;
    case tacoBfloat16: reduceScatterKernel<__nv_bfloat16><<<g, kThreads, 0, s>>>(p, n); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launchLoopAllGather(const RankPtrs& p, size_t n, size_t elemBytes, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  const dim3 g(gridFor(n), (unsigned)p.n);
  if (elemBytes == 4) allGatherKernel<uint32_t><<<g, kThreads, 0, s>>>(p, n);
  else if (elemBytes == 2) allGatherKernel<uint16_t><<<g, kThreads, 0, s>>>(p, n);
  else return cudaErrorInvalidValue;
  return cudaGetLastError();
}

cudaError_t launchLoopAlltoAll(const RankPtrs& p, size_t n, size_t elemBytes, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  const dim3 g(gridFor(n), (unsigned)(p.n * (p.n + 1) / 2));
  if (elemBytes == 4) alltoAllKernel<uint32_t><<<g, kThreads, 0, s>>>(p, n);
  else if (elemBytes == 2) alltoAllKernel<uint16_t><<<g, kThreads, 0, s>>>(p, n);
  else return cudaErrorInvalidValue;
  return cudaGetLastError();
}

}  // namespace taco

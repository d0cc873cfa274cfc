// taco_perf device helpers: input generation, conversion to fp32 for the host
// check, and the cross-rank comparison (direct compare on loopback, a checksum
// over NCCL).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/dtype_convert.cuh"  // libtaco's conversions (header-only)
#include "kernels.h"

namespace perf {
namespace {

constexpr int kThreads = 256;

unsigned gridFor(size_t n) {
  size_t b = (n + kThreads - 1) / kThreads;
  if (b > 65535u * 16u) b = 65535u * 16u;
  return (unsigned)(b > 0 ? b : 1);
}

__host__ __device__ inline uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

template <typename T>
__global__ void fillKernel(T* buf, size_t n, uint64_t key) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const uint64_t h = splitmix64(key + i);
    // u in (0, 1), exact in fp32: a 23-bit integer plus one half, times 2^-23.
    const float u = ((float)(h >> 41) + 0.5f) * (1.0f / 8388608.0f);
    const float two_u = 2.0f * u;
    const float v = u < 0.5f ? logf(two_u) : -logf(2.0f - two_u);  // Laplace(0, 1)
    buf[i] = taco::fromFloat<T>(v);
  }
}

template <typename T>
__global__ void toFloatKernel(const T* src, float* dst, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    dst[i] = taco::toFloat<T>(src[i]);
}

// One atomic per thread block: the block's partial sum (mod 2^64) reduced in shared memory.
__device__ void blockAtomicAdd(unsigned long long v, unsigned long long* out) {
  __shared__ unsigned long long part[kThreads];
  part[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if ((int)threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0 && part[0] != 0) atomicAdd(out, part[0]);
}

__global__ void hashKernel(const uint16_t* w, size_t n, unsigned long long* out) {
  unsigned long long acc = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    acc += splitmix64((uint64_t)i << 16 | w[i]);
  blockAtomicAdd(acc, out);
}

__global__ void compareKernel(const uint16_t* a, const uint16_t* b, size_t n, unsigned long long* out) {
  unsigned long long acc = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    acc += a[i] != b[i];
  blockAtomicAdd(acc, out);
}

}  // namespace

cudaError_t launchFill(void* buf, size_t count, tacoDataType_t dtype, uint64_t seed, int rank, cudaStream_t s) {
  if (count == 0) return cudaSuccess;
  const uint64_t key = splitmix64(seed ^ splitmix64(0x5eed0000ull + (uint64_t)rank));
  const unsigned g = gridFor(count);
  switch (dtype) {
    case tacoFloat32: fillKernel<<<g, kThreads, 0, s>>>(static_cast<float*>(buf), count, key); break;
    case tacoFloat16: fillKernel<<<g, kThreads, 0, s>>>(static_cast<__half*>(buf), count, key); break;
    case tacoBfloat16: fillKernel<<<g, kThreads, 0, s>>>(static_cast<__nv_bfloat16*>(buf), count, key); break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launchToFloat(const void* src, float* dst, size_t count, tacoDataType_t dtype, cudaStream_t s) {
  if (count == 0) return cudaSuccess;
  const unsigned g = gridFor(count);
  switch (dtype) {
    case tacoFloat32: toFloatKernel<<<g, kThreads, 0, s>>>(static_cast<const float*>(src), dst, count); break;
    case tacoFloat16: toFloatKernel<<<g, kThreads, 0, s>>>(static_cast<const __half*>(src), dst, count); break;
    case tacoBfloat16:
      toFloatKernel<<<g, kThreads, 0, s>>>(static_cast<const __nv_bfloat16*>(src), dst, count);
      break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launchHash(const void* buf, size_t bytes, unsigned long long* out, cudaStream_t s) {
  const size_t n = bytes / 2;
  if (n == 0) return cudaSuccess;
  hashKernel<<<gridFor(n), kThreads, 0, s>>>(static_cast<const uint16_t*>(buf), n, out);
  return cudaGetLastError();
}

cudaError_t launchCompare(const void* a, const void* b, size_t bytes, unsigned long long* out, cudaStream_t s) {
  const size_t n = bytes / 2;
  if (n == 0) return cudaSuccess;
  compareKernel<<<gridFor(n), kThreads, 0, s>>>(static_cast<const uint16_t*>(a), static_cast<const uint16_t*>(b),
                                                n, out);
  return cudaGetLastError();
}

}  // namespace perf

// The do-it-yourself baseline: the FP8 AllReduce a user writes without libtaco.
//
//   1. Quantize: per block of 256 elements, scale = absmax / 448, codes =
//      fp8_e4m3(x / scale) (saturating, round to nearest even); the payload and
//      the fp32 scales are packed into one buffer ("packet").
//   2. All-gather the packets: the driver calls tacoAllGather on a codec "none"
//      communicator, i.e. plain ncclAllGather of raw bytes (the loopback's
//      copy kernel on one GPU).
//   3. Dequantize and sum: every rank decodes all P packets and sums them in
//      fp32, rank order 0..P-1, rounding once to the element type.
//
// One quantization per element, but each rank receives P-1 full compressed
// copies: (P-1)*C bytes against the two-shot's 2(P-1)/P*C, i.e. P/2 times the
// two-shot's receive traffic.
#include <cuda_fp8.h>

#include "core/dtype_convert.cuh"  // libtaco's conversions (header-only)
#include "kernels.h"

namespace perf {
namespace {

constexpr float kE4M3Max = 448.0f;

size_t diyBlocks(size_t count) { return (count + kDiyBlock - 1) / kDiyBlock; }

// One thread block (256 threads) per FP8 block; one element per thread.
template <typename T>
__global__ void __launch_bounds__(kDiyBlock) quantizeKernel(const T* x, size_t count, uint8_t* codes, float* scales) {
  __shared__ float warpMax[kDiyBlock / 32];
  const size_t i = (size_t)blockIdx.x * kDiyBlock + threadIdx.x;
  const float v = i < count ? taco::toFloat<T>(x[i]) : 0.0f;
  float a = fabsf(v);
  for (int o = 16; o > 0; o >>= 1) a = fmaxf(a, __shfl_xor_sync(0xffffffffu, a, o));
  if ((threadIdx.x & 31) == 0) warpMax[threadIdx.x >> 5] = a;
  __syncthreads();
  float amax = warpMax[0];
  for (int w = 1; w < kDiyBlock / 32; ++w) amax = fmaxf(amax, warpMax[w]);
  const float inv = amax > 0.0f ? kE4M3Max / amax : 0.0f;
  codes[i] = (uint8_t)__nv_cvt_float_to_fp8(v * inv, __NV_SATFINITE, __NV_E4M3);
  if (threadIdx.x == 0) scales[blockIdx.x] = amax / kE4M3Max;
}

__device__ __forceinline__ float fp8ToFloat(uint32_t code) {
  __nv_fp8_e4m3 f;
  f.__x = (__nv_fp8_storage_t)code;
  return (float)f;
}

// Four consecutive elements per thread (a 256-block holds whole groups of 4).
template <typename T>
__global__ void dequantSumKernel(const uint8_t* packets, size_t packetBytes, size_t scalesOffset, int P,
                                 size_t count, T* y) {
  const size_t groups = (count + 3) / 4;
  for (size_t g = blockIdx.x * (size_t)blockDim.x + threadIdx.x; g < groups; g += (size_t)gridDim.x * blockDim.x) {
    const size_t i = g * 4;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int p = 0; p < P; ++p) {
      const uint8_t* base = packets + (size_t)p * packetBytes;
      const uint32_t c4 = *reinterpret_cast<const uint32_t*>(base + i);
      const float s = reinterpret_cast<const float*>(base + scalesOffset)[i / kDiyBlock];
      for (int k = 0; k < 4; ++k) acc[k] += fp8ToFloat((c4 >> (8 * k)) & 0xffu) * s;
    }
    for (int k = 0; k < 4; ++k)
      if (i + k < count) y[i + k] = taco::fromFloat<T>(acc[k]);
  }
}

}  // namespace

size_t diyPacketBytes(size_t count) { return diyBlocks(count) * (kDiyBlock + sizeof(float)); }

cudaError_t launchDiyQuantize(const void* x, size_t count, tacoDataType_t dtype, void* packet, cudaStream_t s) {
  const size_t nb = diyBlocks(count);
  if (nb == 0) return cudaSuccess;
  uint8_t* codes = static_cast<uint8_t*>(packet);
  float* scales = reinterpret_cast<float*>(codes + nb * kDiyBlock);
  const unsigned g = (unsigned)nb;
  switch (dtype) {
    case tacoFloat32: quantizeKernel<<<g, kDiyBlock, 0, s>>>(static_cast<const float*>(x), count, codes, scales); break;
    case tacoFloat16: quantizeKernel<<<g, kDiyBlock, 0, s>>>(static_cast<const __half*>(x), count, codes, scales); break;
    case tacoBfloat16:
      quantizeKernel<<<g, kDiyBlock, 0, s>>>(static_cast<const __nv_bfloat16*>(x), count, codes, scales);
      break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t launchDiyDequantSum(const void* packets, int P, size_t count, tacoDataType_t dtype, void* y,
                                cudaStream_t s) {
  if (count == 0) return cudaSuccess;
  const size_t pb = diyPacketBytes(count);
  const size_t so = diyBlocks(count) * kDiyBlock;
  const uint8_t* in = static_cast<const uint8_t*>(packets);
  size_t blocks = ((count + 3) / 4 + 255) / 256;
  if (blocks > 65535u * 16u) blocks = 65535u * 16u;
  const unsigned g = (unsigned)blocks;
  switch (dtype) {
    case tacoFloat32: dequantSumKernel<<<g, 256, 0, s>>>(in, pb, so, P, count, static_cast<float*>(y)); break;
    case tacoFloat16: dequantSumKernel<<<g, 256, 0, s>>>(in, pb, so, P, count, static_cast<__half*>(y)); break;
    case tacoBfloat16:
      dequantSumKernel<<<g, 256, 0, s>>>(in, pb, so, P, count, static_cast<__nv_bfloat16*>(y));
      break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace perf

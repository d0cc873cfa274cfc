// Launch policy of the codec kernels (codec/kernels.cu.in): the grid size per kernel,
// the kernel and its dynamic shared memory for a codec, and the four launchers that
// codec.h exports; and the host helpers of codec/launch.h.
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

#include "codec/device/rotated256_sum.cuh"  // the staging constants (shared memory sizes)
#include "codec/kernels.h"
#include "codec/launch.h"
#include "core/dtype.h"

namespace taco {

using namespace dev;  // the kernels' arguments and constants

namespace {

// Per-device attributes, queried once per device.
int deviceAttribute(cudaDeviceAttr attr, int fallback) {
  static int cache[64][3] = {};
  const int slot = attr == cudaDevAttrMultiProcessorCount ? 0 : attr == cudaDevAttrL2CacheSize ? 1 : 2;
  int device = 0;
  cudaGetDevice(&device);
  if (device < 0 || device >= 64) return fallback;
  if (cache[device][slot] == 0) {
    int c = 0;
    cudaDeviceGetAttribute(&c, attr, device);
    cache[device][slot] = c > 0 ? c : fallback;
  }
  return cache[device][slot];
}

}  // namespace

int smCount() { return deviceAttribute(cudaDevAttrMultiProcessorCount, 132); }
size_t l2Bytes() { return (size_t)deviceAttribute(cudaDevAttrL2CacheSize, 50 << 20); }
int computeCapabilityMajor() { return deviceAttribute(cudaDevAttrComputeCapabilityMajor, 8); }

cudaError_t allowSharedMemory(const void* kernel, size_t bytes) {
  if (bytes <= 48 * 1024) return cudaSuccess;
  // The largest size allowed so far per (kernel, device): one kernel launches with
  // different sizes (decompress-accumulate: the plain decompress's or the sum's).
  static std::mutex mu;
  static std::map<std::pair<const void*, int>, size_t> allowed;
  int device = 0;
  cudaGetDevice(&device);
  std::lock_guard<std::mutex> lock(mu);
  size_t& had = allowed[{kernel, device}];
  if (had >= bytes) return cudaSuccess;
  const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
  if (e == cudaSuccess) had = bytes;
  return e;
}

size_t genericCompressSmemBytes(tacoDataType_t dtype) {
  return dtype == tacoFloat32 ? (size_t)Stage<float>::kCompressDepth * Stage<float>::kCompressSlot
                              : (size_t)Stage<__half>::kCompressDepth * Stage<__half>::kCompressSlot;
}
size_t genericDecompressSmemBytes(tacoDataType_t dtype) {
  return dtype == tacoFloat32 ? (size_t)Stage<float>::kDecompressDepth * Stage<float>::kDecompressSlot
                              : (size_t)Stage<__half>::kDecompressDepth * Stage<__half>::kDecompressSlot;
}
size_t genericSumSmemBytes(tacoDataType_t dtype) {
  return dtype == tacoFloat32 ? (size_t)Stage<float>::kSumDepth * Stage<float>::kSumSlot
                              : (size_t)Stage<__half>::kSumDepth * Stage<__half>::kSumSlot;
}
size_t rotated256CompressSmemBytes(tacoDataType_t dtype) {
  return (size_t)(dtype == tacoFloat32 ? rotated256::kCompressUnits : rotated256::fourLane::kUnits) * 16;
}
size_t rotated256DecompressSmemBytes(tacoDataType_t) { return (size_t)rotated256::kDecompressUnits * 16; }
size_t rotated256SumSmemBytes(tacoDataType_t) { return (size_t)rotated256::kSumUnits * 16; }

bool aligned16(const void* p) { return p == nullptr || ((uintptr_t)p & 15) == 0; }

Args makeArgs(tacoCodec_t codec, size_t count, tacoDataType_t dtype) {
  const CodecDesc* d = codecById(codec.id);
  Args a{};
  a.k.fmt = d->format;
  a.k.rotate = d->rotate;
  a.k.adaptive = d->adaptive;
  a.k.B = d->blocked ? codec.blockSize : 1;
  a.k.log2B = 0;
  while ((1 << a.k.log2B) < a.k.B) ++a.k.log2B;
  a.k.tpb = d->blocked ? codec.blockSize / kPerThread : 1;
  a.k.c = d->rotate ? (float)(1.0 / sqrt((double)codec.blockSize)) : 1.0f;
  a.k.id = (uint8_t)codec.id;
  a.k.version = (uint8_t)d->formatVersion;
  setWire(a, pieceWireOf(wireLayout(codec, count, dtype), count));
  a.dtype = (uint8_t)dtype;
  return a;
}

namespace {

// The grid's cap in CTAs per SM (beyond it each warp loops over tiles). Measured on the H200 at
// 2^28 elements, caps 8 … 128 side by side in one run (docs/results.md, "Codec kernels", "Grid
// size"): the kernels with little work per byte — every fp32 kernel, the element codecs, the
// general block kernel's 16-bit compress — are fastest with many short-lived CTAs (128 per SM, ~2
// tiles per warp at 2^28: the block scheduler keeps every SM busy to the end, where a long-lived
// grid leaves SMs idle behind the slowest ones; fp32 decompress +9 %, fp8-block bf16 compress
// +20 %); the issue-bound 16-bit rotated kernels want few, each warp's software pipeline filling once
// per CTA (compress 8, decompress 32); the general kernel's 16-bit decompress is best at 64.
// Decompress-reduce-compress keeps the earlier 8 (not re-measured), and so do the rotated256
// sums (sumPath).
template <typename T, int MODE>
int ctasPerSm(bool blocked, bool rotated256Path, bool sumPath) {
  if (!blocked) return 128;
  if (MODE == kReduceCompress || sumPath) return 8;
  if (sizeof(T) == 2 && rotated256Path) return MODE == kCompress ? 8 : 32;
  if (sizeof(T) == 2 && MODE == kAccumulate) return 64;
  return 128;
}

// The block-codec kernel for the codec's code format (compiled in: no per-element switch) and its
// dynamic shared memory; fastPath = takesRotated256Kernel(), sumPath = takesRotated256SumKernel().
// The staged pipelines copy a chunk's codes whole: sums of several inputs (decompress-accumulate,
// reduce-compress) of the other formats (stagedSumCodes false: INT6) take
// generalTiles, without shared memory.
template <typename T, int MODE>
KernelFn blockKernel(const Args& a, int fmt, bool fastPath, bool sumPath, size_t& smem) {
  const tacoDataType_t dtype = (tacoDataType_t)a.dtype;
  if constexpr (MODE != kReduceCompress) {
    if (fastPath) {
      smem = MODE == kCompress ? rotated256CompressSmemBytes(dtype) : rotated256DecompressSmemBytes(dtype);
      return rotated256KernelFor<T, MODE>(fmt);
    }
  }
  if constexpr (MODE != kCompress) {
    if (sumPath) {
      smem = rotated256SumSmemBytes(dtype);
      return rotated256SumKernelFor<T, MODE>(fmt);
    }
  }
  smem = MODE == kCompress                ? genericCompressSmemBytes(dtype)
         : plainDecompress(a, MODE)       ? genericDecompressSmemBytes(dtype)  // genericDecompressTiles
         : stagedSumCodes(fmt, (int)dtypeBytes(dtype)) ? genericSumSmemBytes(dtype)  // genericSumTiles
                                          : 0;
  return blockCodecKernelFor<T, MODE>(fmt);
}

template <typename T, int MODE>
cudaError_t launchTyped(const Args& a, cudaStream_t stream) {
  const CodecDesc* d = codecById(a.k.id);
  const int sms = smCount();
  const bool fastPath = d->blocked && takesRotated256Kernel(a, MODE);
  const bool sumPath = d->blocked && takesRotated256SumKernel(a, MODE);
  size_t work;
  if (d->blocked) {
    // blocks per warp tile: four lanes per block in the 16-bit rotated compress
    const bool fourLanePath = MODE == kCompress && sizeof(T) == 2 && fastPath;
    const int groupsPerWarp = fourLanePath ? rotated256::fourLane::kBlocks : 32 / a.k.tpb;
    work = (a.nBlocks + groupsPerWarp - 1) / groupsPerWarp * 32;  // threads wanted
  } else {
    work = (a.count + Vec<T>::V - 1) / Vec<T>::V;
  }
  size_t grid = (work + kThreads - 1) / kThreads;
  const size_t maxGrid = (size_t)sms * ctasPerSm<T, MODE>(d->blocked, fastPath, sumPath);
  if (grid > maxGrid) grid = maxGrid;
  if (grid == 0) grid = 1;
  if (d->blocked) {
    size_t smem;
    const KernelFn kernel = blockKernel<T, MODE>(a, d->format, fastPath, sumPath, smem);
    cudaError_t e = allowSharedMemory(reinterpret_cast<const void*>(kernel), smem);
    if (e != cudaSuccess) return e;
    kernel<<<(unsigned)grid, kThreads, smem, stream>>>(a);
  } else {
    const KernelFn kernel = elementCodecKernelFor<T, MODE>(d->format);
    kernel<<<(unsigned)grid, kThreads, 0, stream>>>(a);
  }
  return cudaGetLastError();
}

template <int MODE>
cudaError_t launch(Args& a, tacoDataType_t dtype, cudaStream_t stream) {
  a.vec = aligned16(a.x) && aligned16(a.y) && aligned16(a.out);
  for (int q = 0; q < a.in.n; ++q) a.vec = a.vec && aligned16(a.in.ptr[q]);
  const size_t elemBytes = dtype == tacoFloat32 ? 4 : 2;
  a.streamOut = a.y != nullptr && a.count * elemBytes > l2Bytes();  // measured: fp32 decompress +2 %
  switch (dtype) {
    case tacoFloat32: return launchTyped<float, MODE>(a, stream);
    case tacoFloat16: return launchTyped<__half, MODE>(a, stream);
    case tacoBfloat16: return launchTyped<__nv_bfloat16, MODE>(a, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace

cudaError_t launchCompress(tacoCodec_t codec, const void* x, size_t count, tacoDataType_t dtype, void* out,
                           cudaStream_t stream) {
  Args a = makeArgs(codec, count, dtype);
  a.x = x;
  a.out = static_cast<uint8_t*>(out);
  return launch<kCompress>(a, dtype, stream);
}

cudaError_t launchDecompress(tacoCodec_t codec, const void* in, void* y, size_t count, tacoDataType_t dtype,
                             cudaStream_t stream) {
  Args a = makeArgs(codec, count, dtype);
  a.in.n = 1;
  a.in.ptr[0] = in;
  a.y = y;
  return launch<kAccumulate>(a, dtype, stream);
}

cudaError_t launchDecompressAccumulate(tacoCodec_t codec, const AccumInputs& in, const void* exact, void* y,
                                       size_t count, tacoDataType_t dtype, cudaStream_t stream) {
  Args a = makeArgs(codec, count, dtype);
  a.in = in;
  a.x = exact;
  a.y = y;
  return launch<kAccumulate>(a, dtype, stream);
}

cudaError_t launchDecompressReduceCompress(tacoCodec_t codec, const AccumInputs& in, const void* exact,
                                           void* out, void* y, size_t count, tacoDataType_t dtype,
                                           cudaStream_t stream) {
  Args a = makeArgs(codec, count, dtype);
  a.in = in;
  a.x = exact;
  a.out = static_cast<uint8_t*>(out);
  a.y = y;
  return launch<kReduceCompress>(a, dtype, stream);
}

}  // namespace taco

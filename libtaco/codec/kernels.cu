// The fused codec kernels: thin __global__ wrappers around the device functions of
// codec/device/, instantiated here once each. One kernel per (mode, dtype, code
// format); the rest of the codec (rotation, adaptive scale, block size) is a runtime
// parameter, uniform across the grid, so the build stays small. One exception, for
// the default configuration: compress and plain decompress of the rotated codecs at
// B = 256 have a kernel of their own with a different thread mapping
// (rotated256Kernel, namespace rotated256 in device/rotated256.cuh: the FWHT's cross-lane
// strides through shared-memory transpositions instead of shuffles; 16-bit compress
// with four lanes per block, namespace rotated256::fourLane, the rest with eight).
//
// Memory traffic per element (the kernels' only global accesses): compress
// reads the input once and writes 1 byte (3/4 for INT6, 1/2 for INT4; + 4 or 8
// bytes of scales per block); decompress-accumulate reads k codes and the optional
// exact input and writes the output once; decompress-reduce-compress does both in
// one pass.
#include "codec/kernels.h"

#include "codec/device/element.cuh"
#include "codec/device/rotated256.cuh"

namespace taco {
namespace dev {

// This warp's index in the grid and the grid's warps, in 32 bits: for the tile loops
// whose state must stay small (the launcher caps the grid far below 2^32 threads).
__device__ __forceinline__ uint32_t warp32() { return (blockIdx.x * blockDim.x + threadIdx.x) >> 5; }
__device__ __forceinline__ uint32_t nWarps32() { return (gridDim.x * blockDim.x) >> 5; }

template <typename T, int MODE, int FMT>
__global__ void __launch_bounds__(kThreads, MODE == kCompress && sizeof(T) == 4 ? 3 : 2) rotated256Kernel(const Args a) {
  static_assert(MODE != kReduceCompress && FMT != kFmtInt4, "no B = 256 fast path for this kernel");
  const int lane = threadIdx.x & 31, t = lane & 7, g = lane >> 3;
  const size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const size_t nWarps = ((size_t)gridDim.x * blockDim.x) >> 5;
  const size_t nTiles = (a.nBlocks + 3) / 4;
  if constexpr (MODE == kCompress) {
    if (blockIdx.x == 0 && threadIdx.x == 0) writeHeader(a.out, a);
    if constexpr (sizeof(T) == 2)
      rotated256::fourLane::fourLaneCompressTiles<T, FMT>(a, warp32(), nWarps32(), lane);
    else
      rotated256::rotated256CompressTiles<T, FMT>(a, warp, nWarps, nTiles, g, t);
  } else if (headerOk(static_cast<const uint8_t*>(a.in.ptr[0]), a)) {
    rotated256::rotated256DecompressTiles<T, FMT>(a, warp32(), nWarps32(), g, t);
  } else {
    generalTiles<T, MODE, FMT>(a, warp, nWarps, nTiles, 4, g, t, false);
  }
}

template <typename T, int MODE, int FMT>
__global__ void __launch_bounds__(kThreads, MODE == kCompress ? 3 : 2) blockCodecKernel(const Args a) {
  const int lane = threadIdx.x & 31;
  const int t = lane & (a.k.tpb - 1);
  const int groupInWarp = lane / a.k.tpb;
  const int groupsPerWarp = 32 / a.k.tpb;
  const size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const size_t nWarps = ((size_t)gridDim.x * blockDim.x) >> 5;
  const size_t nTiles = (a.nBlocks + groupsPerWarp - 1) / groupsPerWarp;

  bool inputsOk = true;
  if (MODE != kCompress) inputsOk = inputHeadersOk(a);
  if ((MODE != kAccumulate) && blockIdx.x == 0 && threadIdx.x == 0) writeHeader(a.out, a);

  if constexpr (MODE == kCompress) {
    genericCompressTiles<T, FMT>(a, warp, nWarps, nTiles, groupsPerWarp, groupInWarp, t);
  } else if (MODE == kAccumulate && FMT != kFmtInt4 && FMT != kFmtInt6 && a.vec && a.in.n == 1 && a.x == nullptr &&
             inputsOk) {  // the staged decompress copies a byte per code
    genericDecompressTiles<T, FMT>(a, warp, nWarps, nTiles, groupsPerWarp, groupInWarp, t);
  } else if (takesStagedSum<FMT>(a, inputsOk)) {  // k inputs (+ exact), staged
    genericSumTiles<T, MODE, FMT>(a, warp, nWarps, nTiles, groupsPerWarp, groupInWarp, t);
  } else {
    generalTiles<T, MODE, FMT>(a, warp, nWarps, nTiles, groupsPerWarp, groupInWarp, t, inputsOk);
  }
}

template <typename T, typename W, int MODE>
__global__ void __launch_bounds__(kThreads) elementCodecKernel(const Args a) {
  elementTiles<T, W, MODE>(a, (size_t)blockIdx.x * blockDim.x + threadIdx.x, (size_t)gridDim.x * blockDim.x);
}

template <typename T, int MODE>
KernelFn rotated256KernelFor(int fmt) {
  switch (fmt) {
    case kFmtE4M3: return rotated256Kernel<T, MODE, kFmtE4M3>;
    case kFmtE5M2: return rotated256Kernel<T, MODE, kFmtE5M2>;
    case kFmtInt6: return rotated256Kernel<T, MODE, kFmtInt6>;
    default: return rotated256Kernel<T, MODE, kFmtInt8>;
  }
}

template <typename T, int MODE>
KernelFn blockCodecKernelFor(int fmt) {
  switch (fmt) {
    case kFmtE4M3: return blockCodecKernel<T, MODE, kFmtE4M3>;
    case kFmtE5M2: return blockCodecKernel<T, MODE, kFmtE5M2>;
    case kFmtInt8: return blockCodecKernel<T, MODE, kFmtInt8>;
    case kFmtInt6: return blockCodecKernel<T, MODE, kFmtInt6>;
    default: return blockCodecKernel<T, MODE, kFmtInt4>;
  }
}

template <typename T, int MODE>
KernelFn elementCodecKernelFor(int fmt) {
  if (fmt == kFmtBf16) return elementCodecKernel<T, __nv_bfloat16, MODE>;
  return elementCodecKernel<T, T, MODE>;
}

// The kernels codec/launch.cu launches, and no others: no B = 256 kernel for
// decompress-reduce-compress.
#define TACO_KERNELS_FOR(T)                                       \
  template KernelFn rotated256KernelFor<T, kCompress>(int);       \
  template KernelFn rotated256KernelFor<T, kAccumulate>(int);     \
  template KernelFn blockCodecKernelFor<T, kCompress>(int);       \
  template KernelFn blockCodecKernelFor<T, kAccumulate>(int);     \
  template KernelFn blockCodecKernelFor<T, kReduceCompress>(int); \
  template KernelFn elementCodecKernelFor<T, kCompress>(int);     \
  template KernelFn elementCodecKernelFor<T, kAccumulate>(int);   \
  template KernelFn elementCodecKernelFor<T, kReduceCompress>(int);
TACO_KERNELS_FOR(float)
TACO_KERNELS_FOR(__half)
TACO_KERNELS_FOR(__nv_bfloat16)
#undef TACO_KERNELS_FOR

}  // namespace dev
}  // namespace taco

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
// reads the input once and writes 1 byte (+ 4 or 8 bytes of scales per block);
// decompress-accumulate reads k codes and the optional exact input and writes
// the output once; decompress-reduce-compress does both in one pass.
#include "codec/kernels.h"

#include "codec/device/rotated256.cuh"

namespace taco {
namespace dev {

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
      rotated256::fourLane::fourLaneCompressTiles<T, FMT>(a, lane);
    else
      rotated256::rotated256CompressTiles<T, FMT>(a, warp, nWarps, nTiles, g, t);
  } else if (headerOk(static_cast<const uint8_t*>(a.in.ptr[0]), a)) {
    rotated256::rotated256DecompressTiles<T, FMT>(a, g, t);
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
  if (MODE != kCompress)
    for (int q = 0; q < a.in.n; ++q) inputsOk &= headerOk(static_cast<const uint8_t*>(a.in.ptr[q]), a);
  if ((MODE != kAccumulate) && blockIdx.x == 0 && threadIdx.x == 0) writeHeader(a.out, a);

  if constexpr (MODE == kCompress) {
    // Software pipeline over this warp's tiles: tile i + D - 1 is being copied in
    // while tile i is compressed. Only whole, aligned tiles are staged (bit s of
    // `staged` marks slot s); the rest go through the general load.
    constexpr int D = Stage<T>::kCompressDepth;
    extern __shared__ uint4 stagingArea[];
    uint4* mine = stagingArea + threadIdx.x;
    auto stageable = [&](size_t tile) {
      return tile < nTiles && __all_sync(0xffffffffu, wholeBlock(a, tile * groupsPerWarp + groupInWarp));
    };
    uint32_t staged = 0;
#pragma unroll
    for (int i = 0; i < D - 1; ++i) {
      const size_t tile = warp + i * nWarps;
      if (stageable(tile)) {
        stageRaw<T>(static_cast<const T*>(a.x), tile * groupsPerWarp + groupInWarp, t, a,
                    mine + i * Vec<T>::NCH * kThreads);
        staged |= 1u << i;
      }
      cpAsyncCommit();
    }
    int s = 0;
    for (size_t tile = warp; tile < nTiles; tile += nWarps) {
      const int ahead = s == 0 ? D - 1 : s - 1;  // the slot read one iteration ago
      staged &= ~(1u << ahead);
      const size_t far = tile + (size_t)(D - 1) * nWarps;
      if (stageable(far)) {
        stageRaw<T>(static_cast<const T*>(a.x), far * groupsPerWarp + groupInWarp, t, a,
                    mine + ahead * Vec<T>::NCH * kThreads);
        staged |= 1u << ahead;
      }
      cpAsyncCommit();
      cpAsyncWait<D - 1>();  // this tile's copies have landed
      compressBlockTile<T, FMT>(a, tile * groupsPerWarp + groupInWarp, t,
                                (staged >> s) & 1 ? mine + s * Vec<T>::NCH * kThreads : nullptr);
      s = s + 1 == D ? 0 : s + 1;
    }
    cpAsyncWait<0>();
  } else {
  if (MODE == kAccumulate && FMT != kFmtInt4 && a.vec && a.in.n == 1 && a.x == nullptr && inputsOk) {
    genericDecompressTiles<T, FMT>(a, warp, nWarps, nTiles, groupsPerWarp, groupInWarp, t);
    return;
  }
  generalTiles<T, MODE, FMT>(a, warp, nWarps, nTiles, groupsPerWarp, groupInWarp, t, inputsOk);
  }
}

// ---- elementwise codecs: none (raw T) and bf16. V elements per thread per step.
template <typename T, typename W, int MODE>
__global__ void __launch_bounds__(kThreads) elementCodecKernel(const Args a) {
  constexpr int V = Vec<T>::V;
  const size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  const size_t nThreads = (size_t)gridDim.x * blockDim.x;
  const size_t nVec = (a.count + V - 1) / V;
  bool inputsOk = true;
  if (MODE != kCompress)
    for (int q = 0; q < a.in.n; ++q) inputsOk &= headerOk(static_cast<const uint8_t*>(a.in.ptr[q]), a);
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
        wv[j] = fromFloat<W>(v[j]);
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

template <typename T, int MODE>
KernelFn rotated256KernelFor(int fmt) {
  switch (fmt) {
    case kFmtE4M3: return rotated256Kernel<T, MODE, kFmtE4M3>;
    case kFmtE5M2: return rotated256Kernel<T, MODE, kFmtE5M2>;
    default: return rotated256Kernel<T, MODE, kFmtInt8>;
  }
}

template <typename T, int MODE>
KernelFn blockCodecKernelFor(int fmt) {
  switch (fmt) {
    case kFmtE4M3: return blockCodecKernel<T, MODE, kFmtE4M3>;
    case kFmtE5M2: return blockCodecKernel<T, MODE, kFmtE5M2>;
    case kFmtInt8: return blockCodecKernel<T, MODE, kFmtInt8>;
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

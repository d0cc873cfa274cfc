// How a tile of decompress-accumulate or decompress-reduce-compress ends, whichever
// loop summed it: the sum stored, or compressed again (zero past `count`); and the
// blocks whose sum overflowed, summed again and written wide (wideBlocks).
#pragma once
#include "codec/device/block_compress.cuh"

namespace taco {
namespace dev {

// Zero past `count`, as compress() pads (the rotation leaves the padding of the last block
// non-zero).
template <typename T>
__device__ __forceinline__ void zeroPadding(const Args& a, size_t block, int t, bool active, float (&v)[kPerThread]) {
  if (active && (block + 1) * a.k.B > a.count) {
    constexpr int V = Vec<T>::V;
#pragma unroll
    for (int r = 0; r < kPerThread; ++r) {
      const size_t idx = block * a.k.B + (size_t)(t + a.k.tpb * (r / V)) * V + (r % V);
      if (idx >= a.count) v[r] = 0.0f;
    }
  }
}

// The end of a decompress-accumulate or decompress-reduce-compress tile, the sum (+ the
// exact input) in v: accumulate stores it; reduce-compress compresses it, zero past
// `count`, and optionally decompresses it again into y. Returns whether the block's sum
// held NaN or +-Inf (reduce-compress): it was written as a NaN block, and wideBlocks()
// looks at it again. WHOLE: the caller knows the block is whole and aligned (wholeBlock):
// active holds, and the tests of it, of the padding and of alignment go. yRows (INT4 with a
// block per lane, WHOLE, where the caller has free rows of 32 entries for the warp: a staged
// slot's region): the warp's tile is stored through them in order (storeTileInOrder).
template <typename T, int MODE, int FMT, bool WHOLE = false>
__device__ __forceinline__ bool sumTileOut(const Args& a, size_t block, int t, bool active,
                                           float (&v)[kPerThread], uint4* yRows = nullptr) {
  active = WHOLE || active;
  auto storeY = [&] {
    if constexpr (FMT == kFmtInt4 && WHOLE) {
      if (yRows != nullptr) {
        const int lane = (int)(threadIdx.x & 31);
        storeTileInOrder<T, 32>(static_cast<T*>(a.y), (block - lane) / 32, yRows, lane, v);
        return;
      }
    }
    if (active) storeValues<T, WHOLE>(static_cast<T*>(a.y), block, t, a, v);
  };
  if constexpr (MODE == kAccumulate) {
    storeY();
    return false;
  } else {
    if (!WHOLE) zeroPadding<T>(a, block, t, active, v);
    float m0, d;
    int K;
    bool bad;
    blockMaxBad(v, a.k.tpb, m0, bad);
    compressTile<T, FMT, MODE, WHOLE>(a, block, t, active, v, m0, bad, a.out, d, K);
    if (a.y != nullptr) {
#pragma unroll
      for (int r = 0; r < kPerThread; ++r) v[r] = v[r] * d;
      if (a.k.rotate) fwht<Vec<T>::V>(v, t, a.k.tpb);
      if (K != 0) unshiftAll(v, K, true);
      storeY();
    }
    return bad && active;
  }
}

// Decompress-reduce-compress, after a tile's sum was written: a block whose sum held NaN or +-Inf
// was written as a NaN block. Where it overflowed (every input finite, some element of the sum past
// FLT_MAX), its sum scaled by 2^-64 is finite: that block is summed again through the general
// loads, scaled (wideSum), and written wide over the NaN block, and its y too (block_math.h,
// wideValue). The block's stored s tells it (NaN); the lanes read what lane 0 of the block stored,
// after a __syncwarp (the caller's). wideTile: this lane's block of one tile; wideBlocks: every
// tile of the warp (tiles warp, warp + nWarps, ...), after them all. Only a warp that wrote a NaN
// block comes here (the caller's vote), so a sum without one costs nothing; and outside the tile
// loop, this code adds nothing to the loop's registers.
__device__ __forceinline__ const float* storedScales(const Args& a) {
  return reinterpret_cast<const float*>(a.out + a.scalesOffset);
}
template <typename T, int FMT>
__device__ __forceinline__ void wideTile(const Args& a, const float* stored, size_t block, int t) {
  const bool active = block < a.nBlocks;
  const float sBlock = active ? stored[a.k.adaptive ? 2 * block + 1 : block] : 0.0f;
  const bool nanBlock = sBlock != sBlock;
  if (!__any_sync(0xffffffffu, nanBlock)) return;  // warp-uniform: the rotation's shuffles below
  float v[kPerThread];
  wideSum<T>(a, block, t, active, v, accumulateRaw<T, FMT>(a, block, t, active, v));
  zeroPadding<T>(a, block, t, active, v);
  float m0, d;
  int K;
  bool bad;
  blockMaxBad(v, a.k.tpb, m0, bad);
  const bool write = nanBlock && !bad;  // an input that is NaN or +-Inf: it stays a NaN block
  compressTile<T, FMT, kReduceCompress>(a, block, t, write, v, m0, bad, a.out, d, K, true);
  if (a.y != nullptr) {
#pragma unroll
    for (int r = 0; r < kPerThread; ++r) v[r] = v[r] * d;
    if (a.k.rotate) fwht<Vec<T>::V>(v, t, a.k.tpb);
    if (K != 0) unshiftAll(v, K, false);
    if (write) storeValues<T>(static_cast<T*>(a.y), block, t, a, v);
  }
}
template <typename T, int FMT>
__device__ __forceinline__ void wideBlocks(const Args& a, size_t warp, size_t nWarps, size_t nTiles,
                                           int groupsPerWarp, int groupInWarp, int t) {
  __syncwarp();
  const float* stored = storedScales(a);
  for (size_t tile = warp; tile < nTiles; tile += nWarps)
    wideTile<T, FMT>(a, stored, tile * groupsPerWarp + groupInWarp, t);
}

}  // namespace dev
}  // namespace taco

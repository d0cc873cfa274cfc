// The order in which a warp takes its tiles in the generic block path's loops.
//  - StaticTiles: tiles warp, warp + nWarps, ... (every warp's share fixed at launch: the codec
//    kernels, the one-shot, the fused two-shot by default).
//  - ClaimedTiles: tiles claimed one at a time from a counter that the warps working on one piece
//    share (the fused two-shot's claimed kernels, coll/device/peer_kernels.cuh). With fixed shares a
//    phase's CTAs end apart, as their speeds differ: on an H200 (loopback, P = 2), phase B of
//    fp8-block took 42-60 us (median 53) over a rank's 132 CTAs for the same tiles. Claimed, they
//    end within a few us of each other. That wins time only where the phase's end waits on the
//    slow CTAs' own work; where the phase is bound by HBM, CTAs that end early leave their bandwidth
//    to the others and the claims only cost (docs/results.md, "Tiles claimed from a counter").
// Both give the tile being computed (front), the ones the pipelines stage ahead (ahead(n), n < D;
// after(ahead(n - 1), n) == ahead(n)) and the next (pop). A warp's claims only grow, so once
// front() is past a limit so is every later tile. Every lane holds the same values (lane 0
// claims, a shuffle hands them out).
#pragma once
#include <cstddef>
#include <cstdint>

namespace taco {
namespace dev {

template <typename I>
struct StaticTilesOf {
  static constexpr bool kClaimed = false;
  I tile, step;
  __device__ __forceinline__ I front() const { return tile; }
  __device__ __forceinline__ I ahead(int n) const { return tile + (I)n * step; }
  // ahead(n), given ahead(n - 1) (n >= 1)
  __device__ __forceinline__ I after(I prev, int) const { return prev + step; }
  __device__ __forceinline__ void pop() { tile += step; }
};
using StaticTiles = StaticTilesOf<size_t>;
// 32-bit tile indices: the rotated256 loops (rotated256.cuh), whose loop state must fit beside
// their 32 or 64 values a lane in 128 registers
using StaticTiles32 = StaticTilesOf<uint32_t>;

// D: tiles known (front and D - 1 after it); one claim more is in flight, issued a turn before its
// tile is staged, so that the claim's round trip to L2 hides behind a tile's work. Whoever resets
// the counter for its next use does so once every CTA that claims from it has passed a barrier
// after its loops (peer::ctaArrive), which orders every claim before the reset, as it orders the
// data.
template <int D>
struct ClaimedTiles {
  static constexpr bool kClaimed = true;
  uint32_t* counter;
  uint32_t q[D];     // q[0]: front
  uint32_t pending;  // lane 0: the claim after q[D - 1], in flight

  __device__ __forceinline__ explicit ClaimedTiles(uint32_t* c) : counter(c), pending(0) {
    uint32_t first = 0;
    if ((threadIdx.x & 31) == 0) {
      first = atomicAdd(counter, (uint32_t)D);
      pending = atomicAdd(counter, 1u);
    }
    first = __shfl_sync(~0u, first, 0);
#pragma unroll
    for (int i = 0; i < D; ++i) q[i] = first + (uint32_t)i;
  }
  __device__ __forceinline__ size_t front() const { return q[0]; }
  __device__ __forceinline__ size_t ahead(int n) const {  // n < D, known at run time or not
    uint32_t v = q[0];
#pragma unroll
    for (int i = 1; i < D; ++i) v = n == i ? q[i] : v;
    return v;
  }
  __device__ __forceinline__ size_t after(size_t, int n) const { return ahead(n); }
  __device__ __forceinline__ void pop() {
#pragma unroll
    for (int i = 0; i + 1 < D; ++i) q[i] = q[i + 1];
    q[D - 1] = __shfl_sync(~0u, pending, 0);
    if ((threadIdx.x & 31) == 0) pending = atomicAdd(counter, 1u);
  }
};

}  // namespace dev
}  // namespace taco

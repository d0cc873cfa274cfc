// The order in which a warp takes its tiles in the generic block path's loops.
//  - StaticTiles: tiles warp, warp + nWarps, ... (a codec kernel: every warp's share fixed at
//    launch).
//  - ClaimedTiles: tiles claimed one at a time from a counter that the warps working on one piece
//    share (the fused two-shot's phases, coll/device/peer_kernels.cuh). With fixed shares a phase
//    ends with its slowest CTA, and CTAs differ: on an H200, over the 132 CTAs of a rank, phase B
//    of fp8-block took 42-60 us (median 53) for the same tiles. Claimed, a CTA that runs slower
//    takes fewer tiles and the phase ends within about a tile of its mean.
// Both give the tile being computed (front), the ones the pipelines stage ahead (ahead(n), n < D;
// after(ahead(n - 1), n) == ahead(n)) and the next (pop). A warp's claims only grow, so once front() is past a limit so is every
// later tile. Every lane holds the same values (lane 0 claims, a shuffle hands it out).
#pragma once
#include <cstddef>
#include <cstdint>

namespace taco {
namespace dev {

struct StaticTiles {
  static constexpr bool kClaimed = false;
  size_t tile, step;
  __device__ __forceinline__ size_t front() const { return tile; }
  __device__ __forceinline__ size_t ahead(int n) const { return tile + (size_t)n * step; }
  // ahead(n), given ahead(n - 1) (n >= 1)
  __device__ __forceinline__ size_t after(size_t prev, int) const { return prev + step; }
  __device__ __forceinline__ void pop() { tile += step; }
};

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

// The staging of the generic block path's software pipelines: how many tiles each warp
// keeps in flight and the shared-memory slot that holds one (the sizes codec/launch.h's
// generic*SmemBytes report to the launchers).
#pragma once
#include "codec/device/io.cuh"
#include "codec/device/tile_queue.cuh"

namespace taco {
namespace dev {

// Pipeline depth (tiles in flight per warp) and shared-memory slots of the staged
// paths: a compress slot holds a tile's input (16 KB per CTA for 16-bit types, 32 KB
// for fp32), a decompress slot its codes and scales (10 KB). The multi-input sum
// (genericSumTiles) stages a tile as units: the codes and scales of up to kSumGroup
// inputs (30 KB), or the exact input (a compress slot's 16 or 32 KB); kSumDepth slots,
// two units in flight while one is computed: 90 KB per CTA for 16-bit types, 96 KB for
// fp32, so that two CTAs of kThreads fit an SM (227 KB on sm_90), as many as the
// registers allow anyway.
template <typename T>
struct Stage {
  static constexpr int kCompressDepth = sizeof(T) == 4 ? 2 : 3;
  static constexpr int kDecompressDepth = 3;
  static constexpr int kCompressSlot = Vec<T>::NCH * kThreads * 16;
  static constexpr int kCodesBytes = Vec<T>::NCH * kThreads * Vec<T>::V;  // one byte per element
  static constexpr int kDecompressSlot = kCodesBytes + kThreads * 8;      // + alpha and s per thread
  static constexpr int kSumGroup = 3;
  static constexpr int kSumDepth = 3;
  static constexpr int kSumSlot =
      kSumGroup * kDecompressSlot > kCompressSlot ? kSumGroup * kDecompressSlot : kCompressSlot;
};

// The staged loop of a software pipeline over this warp's tiles, in the order `tiles` gives them
// (tile_queue.cuh), while they are below nStaged (the tiles whose blocks are all whole and
// aligned), D - 1 tiles ahead: stage(tile, slot) issues a tile's copies into one of D slots (only
// for tiles < nStaged; a commit group either way, which the waits count), body(tile, slot)
// computes a tile once its copies have landed, and top() runs at the start of every turn, before
// the copies into the slot read one turn ago (a __syncwarp where the lanes read each other's
// copies). On return tiles.front() is the first tile past the staged ones, for the general loop
// after it; every copy has landed by then.
template <int D, class Tiles, class StageFn, class BodyFn, class TopFn>
__device__ __forceinline__ void stagedTileLoop(Tiles& tiles, size_t nStaged, StageFn stage, BodyFn body, TopFn top) {
  auto issue = [&](size_t tile, int slot) {
    if (tile < nStaged) stage(tile, slot);
    cpAsyncCommit();
  };
#pragma unroll
  for (int i = 0; i < D - 1; ++i) issue(tiles.ahead(i), i);
  int s = 0;
  for (; tiles.front() < nStaged; tiles.pop()) {
    top();
    issue(tiles.ahead(D - 1), s == 0 ? D - 1 : s - 1);  // into the slot read one turn ago
    cpAsyncWait<D - 1>();  // this tile's copies have landed
    body(tiles.front(), s);
    s = s + 1 == D ? 0 : s + 1;
  }
  cpAsyncWait<0>();
}
template <int D, class Tiles, class StageFn, class BodyFn>
__device__ __forceinline__ void stagedTileLoop(Tiles& tiles, size_t nStaged, StageFn stage, BodyFn body) {
  stagedTileLoop<D>(tiles, nStaged, stage, body, [] {});
}

}  // namespace dev
}  // namespace taco

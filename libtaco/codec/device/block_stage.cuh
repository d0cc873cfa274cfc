// The staging of the generic block path's software pipelines: how many tiles each warp
// keeps in flight and the shared-memory slot that holds one (the sizes codec/launch.h's
// generic*SmemBytes report to the launchers).
#pragma once
#include "codec/device/io.cuh"

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

}  // namespace dev
}  // namespace taco

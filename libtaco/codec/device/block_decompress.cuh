// Plain decompress of the generic block path (one input, no exact input, a byte per
// code, aligned pointers) as a software pipeline of its own: genericDecompressTiles.
#pragma once
#include <type_traits>

#include "codec/device/block_decode.cuh"
#include "codec/device/block_stage.cuh"

namespace taco {
namespace dev {

// Plain decompress (one input, no exact input, byte codes, aligned pointers), with
// the same software pipeline as compress: each thread stages its codes and its
// block's scales for the tile D - 1 ahead while it decodes this one. As there, the tiles
// whose blocks are all whole (the first nStaged) are staged, in a loop of one straight
// path, and the rest (the piece's last tiles) go through the general loads after it.
// SMEM_ARGS: `args` is in shared memory; the staged loop takes its fields into registers
// (scalarsOf), as genericSumTiles does.
template <typename T, int FMT, bool SMEM_ARGS = false>
__device__ __forceinline__ void genericDecompressTiles(const Args& args, size_t warp, size_t nWarps, size_t nTiles,
                                                int groupsPerWarp, int groupInWarp, int t) {
  const Args copy = SMEM_ARGS ? scalarsOf(args) : Args{};
  const Args& a = SMEM_ARGS ? copy : args;  // every field but the input pointers (args.in.ptr)
  constexpr int D = Stage<T>::kDecompressDepth, V = Vec<T>::V, NCH = Vec<T>::NCH;
  using Chunk = StagedChunk<V, FMT>;
  using Word = typename Chunk::Word;  // one chunk's codes
  extern __shared__ uint4 stagingArea[];
  uint8_t* area = reinterpret_cast<uint8_t*>(stagingArea);
  const uint8_t* w = static_cast<const uint8_t*>(args.in.ptr[0]);
  const float* sc = reinterpret_cast<const float*>(w + a.scalesOffset);
  const int perBlock = a.k.adaptive ? 2 : 1;  // scales per block: (alpha, s) or s
  const size_t nStaged = a.vec ? min(nTiles, (a.count / (size_t)a.k.B) / (size_t)groupsPerWarp) : 0;
  auto codesAt = [&](int slot, int j) {
    return reinterpret_cast<Word*>(area + slot * Stage<T>::kDecompressSlot) + j * kThreads + threadIdx.x;
  };
  auto scalesAt = [&](int slot) {
    return reinterpret_cast<float2*>(area + slot * Stage<T>::kDecompressSlot + Stage<T>::kCodesBytes) + threadIdx.x;
  };
  // INT4 with a block per thread (wholeCodes): its codes whole, at bytes 16 i of the slot for thread i
  const bool whole = wholeCodes<FMT>(a);
  auto wholeAt = [&](int slot) {
    return reinterpret_cast<uint4*>(area + slot * Stage<T>::kDecompressSlot) + threadIdx.x;
  };
  auto stageTile = [&](size_t tile, int slot) {
    if (tile < nStaged) {
      const size_t block = tile * groupsPerWarp + groupInWarp;
      if (whole)
        cpAsync(wholeAt(slot), w + TACO_HEADER_BYTES + block * (kPerThread / 2), 16);
      else
#pragma unroll
        for (int j = 0; j < NCH; ++j)
          cpAsync(codesAt(slot, j), w + TACO_HEADER_BYTES + Chunk::byteOffset(block * a.k.B + (size_t)(t + a.k.tpb * j) * V),
                  sizeof(Word));
      cpAsync(scalesAt(slot), sc + perBlock * block, 4 * perBlock);
    }
    cpAsyncCommit();
  };
#pragma unroll
  for (int i = 0; i < D - 1; ++i) stageTile(warp + i * nWarps, i);
  int s = 0;
  size_t tile = warp;
  for (; tile < nStaged; tile += nWarps) {
    stageTile(tile + (size_t)(D - 1) * nWarps, s == 0 ? D - 1 : s - 1);  // into the slot read one tile ago
    cpAsyncWait<D - 1>();
    const size_t block = tile * groupsPerWarp + groupInWarp;
    float v[kPerThread];
    const float2 sp = *scalesAt(s);
    const float alpha = a.k.adaptive ? sp.x : 1.0f, sc = a.k.adaptive ? sp.y : sp.x;
    const int K = decodeShift(sc, alpha, a.k.c);  // block_math.h: K != 0 only at the extremes
    const float d = decodeScaleShifted(sc, alpha, a.k.c, K);
    auto decodeInto = [&](int j, const Word cw) {
      float f[V];
      Chunk::decode(cw, f);
#pragma unroll
      for (int i = 0; i < V; ++i) v[j * V + i] = f[i] * d;
    };
    if (whole) {
      Word cw[NCH];
      wholeCodeWords(*wholeAt(s), cw);
#pragma unroll
      for (int j = 0; j < NCH; ++j) decodeInto(j, cw[j]);
    } else {
#pragma unroll
      for (int j = 0; j < NCH; ++j) decodeInto(j, *codesAt(s, j));
    }
    if (a.k.rotate) fwht<V>(v, t, a.k.tpb);
    if (K != 0) unshiftAll(v, K, !wideScale(sc));
    storeValues<T, true>(static_cast<T*>(a.y), block, t, a, v);
    s = s + 1 == D ? 0 : s + 1;
  }
  cpAsyncWait<0>();
  for (; tile < nTiles; tile += nWarps) {
    const size_t block = tile * groupsPerWarp + groupInWarp;
    const bool active = block < a.nBlocks;
    float v[kPerThread];
    accumulateTile<T, FMT>(args, block, t, active, v);
    if (active) storeValues<T>(static_cast<T*>(args.y), block, t, args, v);
  }
}

}  // namespace dev
}  // namespace taco

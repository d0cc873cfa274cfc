// Plain decompress of the generic block path (one input, no exact input, a byte per
// code, aligned pointers) as a software pipeline of its own: genericDecompressTiles.
#pragma once
#include <type_traits>

#include "codec/device/block_decode.cuh"
#include "codec/device/block_stage.cuh"

namespace taco {
namespace dev {

// Plain decompress (one input, no exact input, codes that cp.async copies a chunk at a time:
// stagedCodes; aligned pointers; INT4 with a block per thread takes int4WholeDecompressTiles
// below), with the same software pipeline as compress: each thread stages its codes and its
// block's scales for the tile D - 1 ahead while it decodes this one. As there, the tiles
// whose blocks are all whole (the first nStaged) are staged, in a loop of one straight
// path, and the rest (the piece's last tiles) go through the general loads after it.
// SMEM_ARGS: `args` is in shared memory; the staged loop takes its fields into registers
// (scalarsOf), as genericSumTiles does.
template <typename T, int FMT, bool SMEM_ARGS = false, class Tiles>
__device__ __forceinline__ void genericDecompressTiles(const Args& args, Tiles& tiles, size_t nTiles, int groupsPerWarp,
                                                       int groupInWarp, int t) {
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
  stagedTileLoop<D>(
      tiles, nStaged,
      [&](size_t tile, int slot) {
        const size_t block = tile * groupsPerWarp + groupInWarp;
#pragma unroll
        for (int j = 0; j < NCH; ++j)
          cpAsync(codesAt(slot, j),
                  w + TACO_HEADER_BYTES + Chunk::byteOffset(block * a.k.B + (size_t)(t + a.k.tpb * j) * V), sizeof(Word));
        cpAsync(scalesAt(slot), sc + perBlock * block, 4 * perBlock);
      },
      [&](size_t tile, int s) {
        const size_t block = tile * groupsPerWarp + groupInWarp;
        float v[kPerThread];
        const float2 sp = *scalesAt(s);
        const float alpha = a.k.adaptive ? sp.x : 1.0f, scale = a.k.adaptive ? sp.y : sp.x;
        const int K = decodeShift(scale, alpha, a.k.c);  // block_math.h: K != 0 only at the extremes
        const float d = decodeScaleShifted(scale, alpha, a.k.c, K);
        auto decodeInto = [&](int j, const Word cw) {
          float f[V];
          Chunk::decode(cw, f);
#pragma unroll
          for (int i = 0; i < V; ++i) v[j * V + i] = f[i] * d;
        };
#pragma unroll
        for (int j = 0; j < NCH; ++j) decodeInto(j, *codesAt(s, j));
        if (a.k.rotate) fwht<V>(v, t, a.k.tpb);
        if (K != 0) unshiftAll(v, K, !wideScale(scale));
        storeValues<T, true>(static_cast<T*>(a.y), block, t, a, v);
      });
  for (; tiles.front() < nTiles; tiles.pop()) {
    const size_t block = tiles.front() * groupsPerWarp + groupInWarp;
    const bool active = block < a.nBlocks;
    float v[kPerThread];
    accumulateTile<T, FMT>(args, block, t, active, v);
    if (active) storeValues<T>(static_cast<T*>(args.y), block, t, args, v);
  }
}

// INT4 with a block per thread (int4WholeDecode: B = kPerThread, tpb 1, not rotated), plain decompress,
// in fp32 as in 16-bit types: staged as above (a lane's block of codes, 16 bytes, at bytes 16 i of
// the slot for thread i, so a warp's 512 bytes are its tile's codes in order; and its block's
// scales), but decoded across the warp. For chunk j, lane i decodes the tile's 16-byte output unit
// u = 32 j + i: V elements of block u / NCH, whose codes are the V / 2 bytes at u V / 2 of the
// warp's staged bytes and whose decode scale comes from that block's lane by a shuffle. A warp's
// store is then 512 consecutive bytes; a lane a block stored 16 bytes every 64 (bf16) or 128 (fp32)
// bytes, and its gather was latency-bound. Every element takes the same operations as there
// (decode, times d, unshift), so the bits are the same.
__device__ __forceinline__ bool int4WholeDecode(const Args& a) { return wholeCodes<kFmtInt4>(a) && !a.k.rotate; }
template <typename T, bool SMEM_ARGS = false, class Tiles>
__device__ __forceinline__ void int4WholeDecompressTiles(const Args& args, Tiles& tiles, size_t nTiles) {
  const Args copy = SMEM_ARGS ? scalarsOf(args) : Args{};
  const Args& a = SMEM_ARGS ? copy : args;  // every field but the input pointers (args.in.ptr)
  constexpr int D = Stage<T>::kDecompressDepth, V = Vec<T>::V, NCH = Vec<T>::NCH;
  constexpr int kTileElems = 32 * kPerThread;  // a warp's tile: a block per lane
  extern __shared__ uint4 stagingArea[];
  uint8_t* area = reinterpret_cast<uint8_t*>(stagingArea);
  const uint8_t* w = static_cast<const uint8_t*>(args.in.ptr[0]);
  const uint8_t* codes = w + TACO_HEADER_BYTES;
  const float* sc = reinterpret_cast<const float*>(w + a.scalesOffset);
  const int perBlock = a.k.adaptive ? 2 : 1;  // scales per block: (alpha, s) or s
  const int lane = (int)(threadIdx.x & 31);
  const size_t nStaged = a.vec ? min(nTiles, a.count / kTileElems) : 0;
  auto codesAt = [&](int slot) {  // this lane's block of codes
    return reinterpret_cast<uint4*>(area + slot * Stage<T>::kDecompressSlot) + threadIdx.x;
  };
  auto scalesAt = [&](int slot) {
    return reinterpret_cast<float2*>(area + slot * Stage<T>::kDecompressSlot + Stage<T>::kCodesBytes) + threadIdx.x;
  };
  auto stage = [&](size_t tile, int slot) {
    const size_t block = tile * 32 + lane;
    cpAsync(codesAt(slot), codes + block * (kPerThread / 2), 16);
    cpAsync(scalesAt(slot), sc + perBlock * block, 4 * perBlock);
  };
  auto decode = [&](size_t tile, int s) {
    __syncwarp();  // every lane's copies have landed: the lanes read each other's codes
    const float2 sp = *scalesAt(s);
    const float alpha = a.k.adaptive ? sp.x : 1.0f, scale = a.k.adaptive ? sp.y : sp.x;
    const int K = decodeShift(scale, alpha, a.k.c);  // block_math.h: K != 0 only at the extremes
    const float d = decodeScaleShifted(scale, alpha, a.k.c, K);
    const int shift = 2 * K + (wideScale(scale) ? 0 : 1);  // K and unshift's sat (a lone input: not wide)
    const bool anyShift = __any_sync(~0u, K != 0);
    const uint8_t* warpCodes = reinterpret_cast<const uint8_t*>(codesAt(s)) - 16 * lane;
    T* y = static_cast<T*>(a.y) + tile * kTileElems;
#pragma unroll
    for (int j = 0; j < NCH; ++j) {
      const int u = 32 * j + lane, src = u / NCH;  // this lane's unit and the lane of its block
      const float dj = __shfl_sync(~0u, d, src);
      const uint32_t cw = V == 8 ? *reinterpret_cast<const uint32_t*>(warpCodes + 4 * u)
                                 : *reinterpret_cast<const uint16_t*>(warpCodes + 2 * u);
      float f[V];
      decodeInt4Word<V>(cw, f);
#pragma unroll
      for (int i = 0; i < V; ++i) f[i] *= dj;
      if (anyShift) {
        const int sj = __shfl_sync(~0u, shift, src), Kj = sj >> 1;
        if (Kj != 0) unshiftAll(f, Kj, (sj & 1) != 0);
      }
      float v[kPerThread];  // packChunk's layout: the unit as chunk 0
#pragma unroll
      for (int i = 0; i < V; ++i) v[i] = f[i];
      uint4 raw;
      packChunk<T>(v, 0, raw);
      *reinterpret_cast<uint4*>(y + (size_t)u * V) = raw;
    }
  };
  stagedTileLoop<D>(tiles, nStaged, stage, decode, [] {
    __syncwarp();  // the slot refilled next was read by every lane one turn ago
  });
  for (; tiles.front() < nTiles; tiles.pop()) {  // the piece's last tiles: a lane a block, through the general loads
    const size_t block = tiles.front() * 32 + lane;
    const bool active = block < a.nBlocks;
    float v[kPerThread];
    accumulateTile<T, kFmtInt4>(args, block, 0, active, v);
    if (active) storeValues<T>(static_cast<T*>(args.y), block, 0, args, v);
  }
}

}  // namespace dev
}  // namespace taco

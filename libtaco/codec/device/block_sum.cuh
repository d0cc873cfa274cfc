// The tile loops of decompress-accumulate and decompress-reduce-compress: one tile at a
// time through the general loads (generalTiles), or the k inputs staged through shared
// memory (genericSumTiles) where takesStagedSum says so.
#pragma once
#include <type_traits>

#include "codec/device/block_sum_out.cuh"

namespace taco {
namespace dev {

// Whether a staged sum takes `block` (a whole block, a.in.n >= 1): the decode shift of its
// first `group` inputs (the staged sum's first unit; block_math.h, decodeShift) is not
// positive, and no later input's is larger. Else the block needs the general loop's order
// (the largest shift of all inputs before the first decode; K > 0: unshiftAddTop): only at
// the extremes of the range, and for wide (overflowed) inputs.
__device__ __forceinline__ bool stagedShifts(const Args& a, size_t block, int group) {
  int first = -64, all = -64;
  for (int q = 0; q < a.in.n; ++q) {
    float alpha, s;
    inputScales(a, q, block, alpha, s);
    const int K = decodeShift(s, alpha, a.k.c);
    if (q < group) first = max(first, K);
    all = max(all, K);
  }
  return first <= 0 && all <= first;
}

// What a staged sum (genericSumTiles, rotated256SumTiles) leaves to the general loop, for
// one warp: its tiles from `first` on (past the staged ones: blocks not whole), and where
// `skipped`, those of its staged tiles (below nStaged) whose inputs' decode shifts the staged
// loop does not take (stagedShifts, with the inputs of its first unit: `group`). nanBlocks:
// a block of the warp's was written as a NaN block.
// In a claimed order (ClaimedTiles, tile_queue.cuh) the staged sum stops at the first tile it
// cannot take, which stays the order's front for the general loop, and at the first tile in
// which it wrote a NaN block (`nanTile`, past the front: the general loop widens it first).
struct SumRest {
  size_t first, nStaged;
  int group;
  bool skipped, nanBlocks;
  size_t nanTile = kNoTile;
  static constexpr size_t kNoTile = ~(size_t)0;
};

// Every tile of the warp: no staged sum before.
__device__ __forceinline__ SumRest allTiles(size_t warp) { return SumRest{warp, 0, 1, false, false}; }

// One tile of the general loads: the sum of `block`'s inputs (NaN where their headers did not
// match), written out by sumTileOut; whether it holds a NaN block (one to widen).
template <typename T, int MODE, int FMT>
__device__ __forceinline__ bool generalTile(const Args& a, size_t block, int t, bool inputsOk) {
  const bool active = block < a.nBlocks;
  float v[kPerThread];
  finishSum<T>(a, block, t, active, v, accumulateRaw<T, FMT>(a, block, t, active, v));
  if (!inputsOk)
#pragma unroll
    for (int r = 0; r < kPerThread; ++r) v[r] = canonicalNaN();
  return sumTileOut<T, MODE, FMT>(a, block, t, active, v);
}

// Decompress-accumulate and decompress-reduce-compress, one tile at a time without
// staging (and plain decompress when its inputs fail the header check: NaN output): the
// warp's tiles, or those the staged sum left (`rest`); then wideBlocks where a block
// overflowed.
template <typename T, int MODE, int FMT>
__device__ __forceinline__ void generalTiles(const Args& a, size_t warp, size_t nWarps, size_t nTiles,
                                             int groupsPerWarp, int groupInWarp, int t, bool inputsOk,
                                             const SumRest& rest) {
  bool nanBlocks = rest.nanBlocks;
  for (size_t tile = rest.skipped ? warp : rest.first; tile < nTiles; tile += nWarps) {
    const size_t block = tile * groupsPerWarp + groupInWarp;
    if (tile < rest.nStaged && __all_sync(0xffffffffu, stagedShifts(a, block, rest.group))) continue;  // summed staged
    nanBlocks |= generalTile<T, MODE, FMT>(a, block, t, inputsOk);
  }
  if (MODE == kReduceCompress && inputsOk && __any_sync(0xffffffffu, nanBlocks))
    wideBlocks<T, FMT>(a, warp, nWarps, nTiles, groupsPerWarp, groupInWarp, t);
}

template <typename T, int MODE, int FMT>
__device__ __forceinline__ void generalTiles(const Args& a, size_t warp, size_t nWarps, size_t nTiles,
                                             int groupsPerWarp, int groupInWarp, int t, bool inputsOk) {
  generalTiles<T, MODE, FMT>(a, warp, nWarps, nTiles, groupsPerWarp, groupInWarp, t, inputsOk, allTiles(warp));
}

// generalTiles in a claimed order: the tiles from the order's front on (after the staged sum: the
// tile it stopped at), each widened at once where it wrote a NaN block (the warp holds no list of
// its tiles to look at later), after rest.nanTile.
template <typename T, int MODE, int FMT, int D>
__device__ __forceinline__ void generalTiles(const Args& a, ClaimedTiles<D>& tiles, size_t nTiles, int groupsPerWarp,
                                             int groupInWarp, int t, bool inputsOk, const SumRest& rest) {
  const bool widen = MODE == kReduceCompress && inputsOk;
  if (widen && rest.nanTile != SumRest::kNoTile) {
    __syncwarp();
    wideTile<T, FMT>(a, storedScales(a), rest.nanTile * groupsPerWarp + groupInWarp, t);
  }
  for (; tiles.front() < nTiles; tiles.pop()) {
    const size_t block = tiles.front() * groupsPerWarp + groupInWarp;
    const bool nanBlock = generalTile<T, MODE, FMT>(a, block, t, inputsOk);
    if (widen && __any_sync(0xffffffffu, nanBlock)) {
      __syncwarp();
      wideTile<T, FMT>(a, storedScales(a), block, t);
    }
  }
}

// Whether decompress-accumulate or decompress-reduce-compress of `a` takes the staged
// sum (genericSumTiles): one compressed input or more whose headers matched, codes that
// cp.async copies a chunk at a time (stagedCodes, codec/format.h: byte codes, and INT4 in
// 16-bit types) or INT4 with a block per lane in any type (wholeCodes: its 16 code bytes at
// once; INT4 in fp32 otherwise, and INT6, take generalTiles), and aligned pointers. Plain
// decompress (one input, no exact input) has pipelines of its own (block_decompress.cuh).
// The callers test stagedSumCodes at compile time (the pipeline is not instantiated without it).
template <typename T, int FMT>
__device__ __forceinline__ bool takesStagedSum(const Args& a, bool inputsOk) {
  return (stagedCodes(FMT, sizeof(T)) || wholeCodes<FMT>(a)) && a.vec && inputsOk && a.in.n >= 1;
}

// This thread's codes of one staged input (NCH words, a warp apart), decoded and
// scaled by d: v = W_q, or v += W_q (FIRST: input 0, assigned, so that -0 survives),
// the same operations per element as accumulateInput.
template <typename T, int FMT, bool FIRST, typename Word>
__device__ __forceinline__ void accumulateStaged(const Word* codes, bool whole, float d, float (&v)[kPerThread]) {
  constexpr int V = Vec<T>::V, NCH = Vec<T>::NCH;
  auto add = [&](int j, const Word cw) {
    float f[V];
    StagedChunk<V, FMT>::decode(cw, f);
#pragma unroll
    for (int i = 0; i < V; ++i) v[j * V + i] = FIRST ? f[i] * d : v[j * V + i] + f[i] * d;
  };
  if (whole) {  // wholeCodes: the thread's 16 bytes at `codes`
    Word cw[NCH];
    wholeCodeWords(*reinterpret_cast<const uint4*>(codes), cw);
#pragma unroll
    for (int j = 0; j < NCH; ++j) add(j, cw[j]);
  } else {
#pragma unroll
    for (int j = 0; j < NCH; ++j) add(j, codes[j * 32]);
  }
}

// Decompress-accumulate and decompress-reduce-compress of k = a.in.n >= 1 inputs
// (takesStagedSum), software-pipelined like genericDecompressTiles. A tile is a
// sequence of units, each one shared-memory slot: the codes and scales of inputs
// kSumGroup g .. kSumGroup g + kSumGroup - 1, for every group g, then the exact input
// if there is one; each thread stages its part of the unit kSumDepth - 1 ahead of the
// one it computes, across tile boundaries, so that every input's loads are in flight
// while the previous units are decoded (generalTiles waits for one input at a time).
// The shared memory per CTA is bounded whatever k is (kSumDepth slots of kSumSlot:
// codec/launch.h, genericSumSmemBytes); a slot for every input of a tile would not be
// (10 KB per input, and k reaches 15 in two-shot at P = 16, 16 in one-shot).
//
// The per-element operations are accumulateRaw's and finishSum's, in their order: R = W_0 +
// W_1 + ..., the rotation, back from the decode's exponent shift K, then + x; then
// sumTileOut. K is the largest decodeShift of the block's k inputs (blockDecodeShift),
// needed before the first decode: the staged sum takes group 0's and checks every later
// group's against it. It takes only the tiles whose blocks are all whole (the first
// nStaged of the piece) and whose shifts are those of a plain sum (stagedShifts: K <= 0,
// no later group's larger; all but the extremes of the range), so that its loop holds
// one straight path: no test of `active`, the padding or alignment per tile, and no
// K > 0 code. It returns the rest, which the caller hands to generalTiles, and it need
// not call it here: the kernel holds the general loop's code once.
// SMEM_ARGS: `a` is in shared memory; the loop takes its fields into registers (scalarsOf).
// Tiles: the warp's tiles in the order of tile_queue.cuh (in a claimed order see SumRest).
template <typename T, int MODE, int FMT, bool SMEM_ARGS = false, class Tiles>
__device__ __forceinline__ SumRest genericSumTiles(const Args& a, Tiles& tiles, size_t nTiles, int groupsPerWarp,
                                                   int groupInWarp, int t) {
  const Args copy = SMEM_ARGS ? scalarsOf(a) : Args{};
  const Args& r = SMEM_ARGS ? copy : a;  // every field but the input pointers (a.in.ptr)
  constexpr int D = Stage<T>::kSumDepth, G = Stage<T>::kSumGroup, V = Vec<T>::V, NCH = Vec<T>::NCH;
  using Chunk = StagedChunk<V, FMT>;
  using Word = typename Chunk::Word;  // one chunk's codes
  extern __shared__ uint4 stagingArea[];
  uint8_t* area = reinterpret_cast<uint8_t*>(stagingArea);
  const int k = r.in.n;
  const int codeUnits = (k + G - 1) / G;
  const int units = codeUnits + (r.x != nullptr ? 1 : 0);  // per tile
  const int perBlock = r.k.adaptive ? 2 : 1;               // scales per block: (alpha, s) or s
  // The tiles whose blocks are all whole (wholeBlock; a.vec holds: takesStagedSum).
  const size_t nStaged = min(nTiles, (r.count / (size_t)r.k.B) / (size_t)groupsPerWarp);
  // Slot layout: one region per warp, since a slot holds codes in one unit and the exact
  // input in another, laid out differently, and the warps of a CTA run their units
  // independently: with a CTA-wide layout a warp's copies would land in bytes another
  // warp has still to read. In its region: input i's chunk j at codes [i][j][lane], its
  // scales at scales [i][lane]; or the exact input's chunk j at [j][lane].
  constexpr int kRegion = Stage<T>::kSumSlot / (kThreads / 32);
  static_assert(kRegion % 16 == 0 && G * 32 * (NCH * V + 8) <= kRegion && NCH * 32 * 16 <= kRegion,
                "a warp's units fit its region of a slot");
  const int lane = threadIdx.x & 31;
  uint8_t* const region = area + (threadIdx.x >> 5) * kRegion;
  auto codesAt = [&](int slot, int i) {
    return reinterpret_cast<Word*>(region + slot * Stage<T>::kSumSlot) + i * NCH * 32 + lane;
  };
  // INT4 with a block per thread (wholeCodes): input i's codes of lane l whole, at [i][l] as 16
  // bytes (the bytes of its chunks)
  const bool whole = wholeCodes<FMT>(r);
  auto wholeAt = [&](int slot, int i) {
    return reinterpret_cast<uint4*>(region + slot * Stage<T>::kSumSlot) + i * 32 + lane;
  };
  auto scalesAt = [&](int slot, int i) {
    return reinterpret_cast<float2*>(region + slot * Stage<T>::kSumSlot + G * NCH * 32 * V) + i * 32 + lane;
  };
  auto exactAt = [&](int slot) { return reinterpret_cast<uint4*>(region + slot * Stage<T>::kSumSlot) + lane; };
  auto stage = [&](size_t tile, int u, int slot) {
    const size_t block = tile * groupsPerWarp + groupInWarp;
    if (u < codeUnits) {
#pragma unroll
      for (int i = 0; i < G; ++i) {
        const int q = u * G + i;
        if (q < k) {
          const uint8_t* w = static_cast<const uint8_t*>(a.in.ptr[q]);
          if (whole) {
            cpAsync(wholeAt(slot, i), w + TACO_HEADER_BYTES + block * (kPerThread / 2), 16);
          } else if constexpr (Chunk::kChunkCopies) {
            Word* c = codesAt(slot, i);
#pragma unroll
            for (int j = 0; j < NCH; ++j)
              cpAsync(c + j * 32, w + TACO_HEADER_BYTES + Chunk::byteOffset(block * r.k.B + (size_t)(t + r.k.tpb * j) * V),
                      sizeof(Word));
          }
          cpAsync(scalesAt(slot, i), reinterpret_cast<const float*>(w + r.scalesOffset) + perBlock * block,
                  4 * perBlock);
        }
      }
    } else {
      const T* x = static_cast<const T*>(r.x) + block * r.k.B;
#pragma unroll
      for (int j = 0; j < NCH; ++j) cpAsync(exactAt(slot) + j * 32, x + (size_t)(t + r.k.tpb * j) * V, 16);
    }
  };
  // Stages unit u + n of this warp's tile sequence from unit u of the front tile (n < D) into
  // `slot`, if its tile is a staged one; one commit group either way.
  auto stageAhead = [&](int u, int n, int slot) {
    int farU = u + n;
    size_t farTile = tiles.front();
    for (int m = 1; farU >= units; ++m) {
      farU -= units;
      farTile = tiles.after(farTile, m);
    }
    if (farTile < nStaged) stage(farTile, farU, slot);
    cpAsyncCommit();
  };
#pragma unroll
  for (int i = 0; i < D - 1; ++i) stageAhead(0, i, i);
  int s = 0;
  bool skipped = false;    // a tile was left to the general loop (stagedShifts)
  bool nanBlocks = false;  // a block of this warp's was written as a NaN block (wideBlocks)
  size_t wide = SumRest::kNoTile;
  for (; tiles.front() < nStaged; tiles.pop()) {
    const size_t block = tiles.front() * groupsPerWarp + groupInWarp;
    float v[kPerThread];
    int K = 0;
    bool skip = false;  // warp-uniform: not stagedShifts; its units are still waited for
    for (int u = 0; u < units; ++u) {
      __syncwarp();  // every lane has read the slot computed one unit ago (lanes share its bytes)
      stageAhead(u, D - 1, s == 0 ? D - 1 : s - 1);  // into that slot
      cpAsyncWait<D - 1>();                // this unit's copies have landed
      if (u < codeUnits) {
        float alpha[G], sc[G];
        int Kg = -64;
#pragma unroll
        for (int i = 0; i < G; ++i) {
          alpha[i] = sc[i] = 1.0f;
          if (u * G + i < k) {
            const float2 sp = *scalesAt(s, i);
            alpha[i] = r.k.adaptive ? sp.x : 1.0f;
            sc[i] = r.k.adaptive ? sp.y : sp.x;
            Kg = max(Kg, decodeShift(sc[i], alpha[i], r.k.c));
          }
        }
        if (u == 0) K = Kg;
        skip = skip || __any_sync(0xffffffffu, u == 0 ? K > 0 : Kg > K);
        if (!skip) {
#pragma unroll
          for (int i = 0; i < G; ++i) {
            const int q = u * G + i;
            if (q < k) {
              const float d = decodeScaleShifted(sc[i], alpha[i], r.k.c, K);
              if (i == 0 && u == 0)
                accumulateStaged<T, FMT, true>(whole ? reinterpret_cast<Word*>(wholeAt(s, 0)) : codesAt(s, 0), whole, d, v);
              else
                accumulateStaged<T, FMT, false>(whole ? reinterpret_cast<Word*>(wholeAt(s, i)) : codesAt(s, i), whole, d, v);
            }
          }
          if (u == codeUnits - 1) {
            if (r.k.rotate) fwht<V>(v, t, r.k.tpb);
            if (K < 0) unshiftAll(v, K, false);
          }
        }
      } else if (!skip) {  // the exact input, as finishSum (K <= 0: the plain add)
#pragma unroll
        for (int j = 0; j < NCH; ++j) {
          RawChunks<T, V> raw;
          raw.c[0] = exactAt(s)[j * 32];
          float f[V];
          rawToFloat<T, V>(raw, f);
#pragma unroll
          for (int i = 0; i < V; ++i) v[j * V + i] = v[j * V + i] + f[i];
        }
      }
      s = s + 1 == D ? 0 : s + 1;
    }
    if (skip) {
      skipped = true;
      if (Tiles::kClaimed) break;  // the general loop takes it, and the rest of this warp's tiles
      continue;
    }
    // INT4 with a block per lane: y in order through the rows of the slot of the tile's last unit,
    // read by now (storeTileInOrder, io.cuh)
    uint4* const yRows =
        FMT == kFmtInt4 && whole ? reinterpret_cast<uint4*>(region + (s == 0 ? D - 1 : s - 1) * Stage<T>::kSumSlot)
                                 : nullptr;
    const bool nanBlock = sumTileOut<T, MODE, FMT, true>(r, block, t, true, v, yRows);
    nanBlocks |= nanBlock;
    if (Tiles::kClaimed && MODE == kReduceCompress && __any_sync(0xffffffffu, nanBlock)) {
      wide = tiles.front();  // widened first by the general loop, which takes the rest of this warp's tiles
      tiles.pop();
      break;
    }
  }
  cpAsyncWait<0>();
  SumRest rest{tiles.front(), nStaged, G, skipped, nanBlocks};
  rest.nanTile = wide;
  return rest;
}

}  // namespace dev
}  // namespace taco

// Decompress-accumulate and decompress-reduce-compress of k >= 1 inputs for the rotated
// codecs at B = 256, in the rotated256 layout (rotated256.cuh): eight lanes per block,
// lane t holding positions 32t .. 32t + 31 of each input's codes, the FWHT's cross-lane
// strides through shared-memory transpositions. The generic path (block_sum.cuh) does
// the same sums with the rotation's three lane strides in shuffles, three rotations per
// block in reduce-compress (the sum back, the compress, the decoded copy): 9 x 32
// shuffles per lane, the bulk of the fused two-shot's reduce phase.
//
// The operations per element are genericSumTiles', in its order, so the bits are its:
// R = W_0 + W_1 + ... (input 0 assigned), the rotation, back from the decode's shift K,
// + x (at K = 64 the two together); then either the sum stored, or compressed (the
// adaptive scale and lift, the rotation, the scales, the codes) and decoded again into
// y. Max, the energy sum and the elementwise steps do not depend on where an element
// sits, and the rotation's butterflies run in the same order of strides.
//
// Pipeline: a tile (a warp's 4 blocks) is a sequence of units, one 32-byte staging area
// per lane each: input q's codes (and lane 0 of each block its scales), then the exact
// input's elements in 32-byte parts, kSumDepth - 1 units ahead across tiles (cp.async),
// so that the P - 1 inputs' loads are in flight together. K is input 0's shift; a tile
// with K > 0, or a later input that shifts further (only at the extremes of the range), is
// left to the general path, as are tiles not wholly inside `count`.
#pragma once
#include "codec/device/rotated256.cuh"

namespace taco {
namespace dev {
namespace rotated256 {

constexpr int kSumDepth = 4;  // units in flight per warp, this one included
// Slots as the plain decompress's (kDecompressSlot: each lane's 32 bytes, then each
// block's scales), then the blocks' transposition buffers.
constexpr int kSumUnits = kSumDepth * kDecompressSlot + kWarps * 4 * kXposeGroup;

// Units of the exact input per tile: 32 bytes per lane each.
template <typename T>
constexpr int kExactUnits = (int)sizeof(T);
static_assert(kExactUnits<float> <= 4, "rotated256SumTiles's switch takes at most four exact parts");

// Back from transposedFwht's layout (positions 32a + 4t + b in v[4a + b]) to positions
// 32t + r in v[r], through the block's buffer (row = buf + 9t, col = buf + t).
__device__ __forceinline__ void untranspose(float (&v)[kPerThread], float4* row, float4* col) {
  __syncwarp();  // the buffer's previous readers are done
#pragma unroll
  for (int a = 0; a < 8; ++a) col[9 * a] = make_float4(v[4 * a], v[4 * a + 1], v[4 * a + 2], v[4 * a + 3]);
  __syncwarp();
#pragma unroll
  for (int q = 0; q < 8; ++q) {
    const float4 f = row[q];
    v[4 * q] = f.x;
    v[4 * q + 1] = f.y;
    v[4 * q + 2] = f.z;
    v[4 * q + 3] = f.w;
  }
}

// A reduced block held in transposedFwht's layout, compressed into a.out (codes as
// rotated256CompressBlock stores them, scales by lane 0) and, with a.y, decoded again
// and stored there. The operations are compressTile's and sumTileOut's. Returns whether
// the block held NaN or +-Inf (written as a NaN block; wideBlocks looks at it again).
template <typename T, int FMT>
__device__ __forceinline__ bool reduceCompressBlock(const Args& a, size_t block, int t, float (&v)[kPerThread],
                                                    float4* buf) {
  float m0;
  bool bad;
  blockMaxBad(v, kLanes, m0, bad);
  float lift;
  float alpha = prescale(a, v, m0, bad, kLanes, lift);
  untranspose(v, buf + 9 * t, buf + t);
  transposedFwht(v, buf + 9 * t, buf + t);
  float m = 0.0f;
#pragma unroll
  for (int r = 0; r < kPerThread; ++r) m = fmaxf(m, fabsf(v[r]));  // no NaN in a good block
  m = groupMax(m, kLanes);
  const QuantScales qs = blockScales<FMT>(a, m, lift, bad, alpha);
  uint32_t words[8];
  encodeRotatedCodes<FMT>(a, block, t, v, qs.inv, buf, words);
  if (t == 0) storeScales(a, a.out, block, alpha, qs.s);
  if (a.y != nullptr) {
    const int K = decodeShift(qs.s, alpha, a.k.c);
    const float d = decodeScaleShifted(qs.s, alpha, a.k.c, K);
#pragma unroll
    for (int q = 0; q < 8; ++q) {
      uint8_t c[4];
      memcpy(c, &words[q], 4);
      decodeChunk<4, FMT>(c, &v[4 * q]);
    }
#pragma unroll
    for (int r = 0; r < kPerThread; ++r) v[r] = v[r] * d;
    untranspose(v, buf + 9 * t, buf + t);
    transposedFwht(v, buf + 9 * t, buf + t);
    if (K != 0) unshiftAll(v, K, true);
    T* out = static_cast<T*>(a.y) + block * 256 + 4 * t;
#pragma unroll
    for (int q = 0; q < 8; ++q) store4<T>(out + 32 * q, &v[4 * q], a.streamOut);
  }
  return bad;
}

// Exact part E (N elements) into v, as finishSum at K <= 0: v + x.
template <int E, int N>
__device__ __forceinline__ void addExactPart(float (&v)[kPerThread], const float (&f)[N]) {
  if constexpr ((E + 1) * N <= kPerThread) {
#pragma unroll
    for (int i = 0; i < N; ++i) v[E * N + i] = v[E * N + i] + f[i];
  }
}

// This warp's tiles (warp, warp + nWarps, ...; 4 blocks each, this lane t of block g) of
// a sum of a.in.n >= 1 inputs whose headers matched, a.vec (MODE: kAccumulate or
// kReduceCompress): those wholly inside `count` whose decode shifts are a plain sum's
// (stagedShifts, input 0 the first group), in a loop of one straight path. It returns the
// rest, which the caller hands to generalTiles (4 blocks a tile there too). Dynamic shared
// memory: kSumUnits * 16 bytes.
template <typename T, int MODE, int FMT>
__device__ __forceinline__ SumRest rotated256SumTiles(const Args& a, uint32_t warp, uint32_t nWarps, int g, int t) {
  constexpr int D = kSumDepth;
  extern __shared__ uint4 stagingArea[];
  const uint32_t nFull = (uint32_t)(a.count / 1024);  // tiles wholly inside count
  const int k = a.in.n;
  const int units = k + (a.x != nullptr ? kExactUnits<T> : 0);
  const int b = (threadIdx.x >> 5) * 4 + g;  // this block's index in the CTA's tile
  const int swap = (t >> 2) & 1;             // the lane's two 16-byte units, swapped on lanes 4..7: no bank conflict
  const int perBlock = a.k.adaptive ? 2 : 1;  // scales per block: (alpha, s) or s
  auto areaAt = [&](int slot) { return stagingArea + slot * kDecompressSlot + b * kCodesGroup + 2 * t; };
  auto scalesAt = [&](int slot) {
    return reinterpret_cast<float2*>(stagingArea + slot * kDecompressSlot + kWarps * 4 * kCodesGroup) + b;
  };
  float4* buf = reinterpret_cast<float4*>(stagingArea + D * kDecompressSlot) + b * kXposeGroup;
  auto stage = [&](uint32_t tile, int u, int slot) {
    const size_t block = (size_t)tile * 4 + g;
    uint4* area = areaAt(slot);
    if (u < k) {
      const uint8_t* in = static_cast<const uint8_t*>(a.in.ptr[u]);
      if constexpr (FMT == kFmtInt6) {  // 24 bytes at 16 + 192 block + 24t: 8-byte aligned for odd t
        const uint8_t* src = in + TACO_HEADER_BYTES + block * 192 + 24 * t;
        char* dst = reinterpret_cast<char*>(area) + 8 * (t & 1);
        const int wide = 8 * (t & 1), narrow = (t & 1) ? 0 : 16;
        cpAsync(dst + wide, src + wide, 16);
        cpAsync(dst + narrow, src + narrow, 8);
      } else {
        const uint8_t* src = in + TACO_HEADER_BYTES + block * 256 + 32 * t;
        cpAsync(area + swap, src, 16);
        cpAsync(area + (swap ^ 1), src + 16, 16);
      }
      if (t == 0)
        cpAsync(scalesAt(slot), reinterpret_cast<const float*>(in + a.scalesOffset) + perBlock * block, 4 * perBlock);
    } else {  // exact part e: positions 32a + 4t .. + 3 for the part's a
      const int e = u - k;
      const T* x = static_cast<const T*>(a.x) + block * 256 + 4 * t;
      if constexpr (sizeof(T) == 4) {
        cpAsync(area + swap, x + 32 * (2 * e), 16);
        cpAsync(area + (swap ^ 1), x + 32 * (2 * e + 1), 16);
      } else {
#pragma unroll
        for (int i = 0; i < 4; ++i)
          cpAsync(reinterpret_cast<char*>(area + (swap ^ (i >> 1))) + 8 * (i & 1), x + 32 * (4 * e + i), 8);
      }
    }
  };
  // Unit u + n of this warp's sequence from unit u of `tile`, into `slot` if its tile is
  // whole; one commit group either way.
  auto stageAhead = [&](uint32_t tile, int u, int n, int slot) {
    int farU = u + n;
    uint32_t farTile = tile;
    while (farU >= units) {
      farU -= units;
      farTile += nWarps;
    }
    if (farTile < nFull) stage(farTile, farU, slot);
    cpAsyncCommit();
  };
#pragma unroll
  for (int i = 0; i < D - 1; ++i) stageAhead(warp, 0, i, i);
  int s = 0;
  bool skipped = false;    // a tile was left to the general loop (stagedShifts)
  bool nanBlocks = false;  // a block of this warp's was written as a NaN block (wideBlocks)
  uint32_t tile = warp;
  for (; tile < nFull; tile += nWarps) {
    const size_t block = (size_t)tile * 4 + g;
    float v[kPerThread];
    int K = 0;
    bool skip = false;  // this lane's block is not stagedShifts: its sum is wasted, and the warp's tile is left
    for (int u = 0; u < units; ++u) {
      __syncwarp();  // every lane has read the slot computed one unit ago
      stageAhead(tile, u, D - 1, s == 0 ? D - 1 : s - 1);  // into that slot
      cpAsyncWait<D - 1>();                                  // this unit's copies have landed
      __syncwarp();                                          // lane 0's scales too
      if (u < k) {
        const float2 sp = *scalesAt(s);
        const float alpha = a.k.adaptive ? sp.x : 1.0f, sc = a.k.adaptive ? sp.y : sp.x;
        const int Kq = decodeShift(sc, alpha, a.k.c);
        if (u == 0) K = Kq;
        skip = skip || (u == 0 ? K > 0 : Kq > K);  // the warp votes once, after the tile's units
        const float d = decodeScaleShifted(sc, alpha, a.k.c, K);
        uint32_t cw[8];  // this lane's 32 codes (INT6: 24 bytes in cw[0..5])
        if constexpr (FMT == kFmtInt6) {
          const uint2* p = reinterpret_cast<const uint2*>(reinterpret_cast<const char*>(areaAt(s)) + 8 * (t & 1));
#pragma unroll
          for (int i = 0; i < 3; ++i) memcpy(&cw[2 * i], &p[i], 8);
        } else {
          const uint4 c0 = areaAt(s)[swap], c1 = areaAt(s)[swap ^ 1];
          memcpy(cw, &c0, 16);
          memcpy(cw + 4, &c1, 16);
        }
#pragma unroll
        for (int h = 0; h < 2; ++h) {  // 16 codes at a time: fewer registers live
          float f[16];
          if constexpr (FMT == kFmtInt6) {
            decodeInt6Run(cw + 3 * h, f);
          } else {
            uint8_t c[16];
            memcpy(c, cw + 4 * h, 16);
            decodeChunk<16, FMT>(c, f);
          }
          if (u == 0) {
#pragma unroll
            for (int i = 0; i < 16; ++i) v[16 * h + i] = f[i] * d;
          } else {
#pragma unroll
            for (int i = 0; i < 16; ++i) v[16 * h + i] = v[16 * h + i] + f[i] * d;
          }
        }
        if (u == k - 1) {
          transposedFwht(v, buf + 9 * t, buf + t);
          if (K < 0) unshiftAll(v, K, false);
        }
      } else {  // exact part u - k, as finishSum (K <= 0: the plain add)
        constexpr int N = kPerThread / kExactUnits<T>;  // elements per part
        RawChunks<T, N> raw;
        raw.c[0] = areaAt(s)[swap];
        raw.c[1] = areaAt(s)[swap ^ 1];
        float f[N];
        rawToFloat<T, N>(raw, f);
        switch (u - k) {  // v indexed by constants only, else it lives in local memory
          case 0: addExactPart<0>(v, f); break;
          case 1: addExactPart<1>(v, f); break;
          case 2: addExactPart<2>(v, f); break;
          default: addExactPart<3>(v, f); break;
        }
      }
      s = s + 1 == D ? 0 : s + 1;
    }
    if (__any_sync(0xffffffffu, skip)) {
      skipped = true;
      continue;
    }
    if constexpr (MODE == kAccumulate) {
      T* out = static_cast<T*>(a.y) + block * 256 + 4 * t;
#pragma unroll
      for (int q = 0; q < 8; ++q) store4<T>(out + 32 * q, &v[4 * q], a.streamOut);
    } else {
      nanBlocks |= reduceCompressBlock<T, FMT>(a, block, t, v, buf);
    }
  }
  cpAsyncWait<0>();
  return SumRest{tile, nFull, 1, skipped, nanBlocks};
}

}  // namespace rotated256
}  // namespace dev
}  // namespace taco

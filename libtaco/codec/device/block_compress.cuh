// Compress of the generic block path: a block's max |x|, the scaling before the
// rotation and the quantisation scales after it, the codes of a block, of a tile, and
// the software-pipelined loop over a warp's tiles (genericCompressTiles).
#pragma once
#include "codec/device/block_decode.cuh"
#include "codec/device/block_stage.cuh"

namespace taco {
namespace dev {

// Block max |x| (NaN ignored) and whether the block holds NaN/Inf, for values already
// in registers (the reduce-compress sum, and the unaligned/tail path of compress).
// x * 0 is NaN exactly for non-finite x: two instructions per element.
__device__ __forceinline__ void blockMaxBad(const float (&v)[kPerThread], int tpb, float& m0, bool& bad) {
  float m = 0.0f, probe = 0.0f;
#pragma unroll
  for (int r = 0; r < kPerThread; ++r) {
    m = fmaxf(m, fabsf(v[r]));
    probe = __fmaf_rn(v[r], 0.0f, probe);
  }
  m0 = groupMax(m, tpb);
  bad = __any_sync(0xffffffffu, probe != probe) ? groupAny(probe != probe, tpb) : false;
}

// Before the rotation: the adaptive scale alpha (from the block energy; 1 without
// it) and the block lift (block_math.h, blockLift), both applied to v. m0 = max|x| of
// the block, bad = it holds NaN/Inf; tpb: lanes per block.
template <int N>
__device__ __forceinline__ float prescale(const Args& a, float (&v)[N], float m0, bool bad, int tpb,
                                          float& lift) {
  float alpha = 1.0f;
  if (a.k.adaptive) {
    // energyScale's exponent and single multiplier straight from the bits of max|x| when
    // that is a normal float >= 2^-118 (frexp's e = biased exponent - 126, and
    // 2^(10 - e) is then a normal float): the same values without the general code.
    const float mm = bad ? 1.0f : m0;
    const uint32_t eb = __float_as_uint(mm) >> 23;
    const bool common = eb >= 9;
    uint32_t S = 0;
    int e = (int)eb - 126;
    float k = __uint_as_float((263u - eb) << 23);
    bool single = true;
    EnergyScale ks{1.0f, 1.0f, 0};
    if (!common) {
      ks = energyScale(mm);
      e = ks.e;
      single = energySingleScale(ks);
      k = ks.k1 * ks.k2;
    }
    if (common && eb <= 136) {
      // max|x| < 2^10 (eb: its biased exponent): energyTermSingle without the 2^23
      // trick. Scaled by 2^-149 more, |x| k lands in the subnormal range, where fp32
      // rounds to whole multiples of 2^-149 (half to even, as the trick does), so the
      // product's bits are the integer r itself and r^2 is one integer multiply-add
      // (no integer subtract: the ALU pipe is the busier one with 16-bit inputs).
      // k 2^-149 = 2^(-139-E) is one float, normal or subnormal. Needs denormals kept.
      const float kd = eb <= 113 ? __uint_as_float((114u - eb) << 23) : __uint_as_float(1u << (136u - eb));
#pragma unroll
      for (int r = 0; r < N; ++r) {
        const uint32_t rr = __float_as_uint(__fmul_rn(fabsf(v[r]), kd));
        S += rr * rr;
      }
    } else if (single) {
      // energyTermSingle with the multiply fused: |x| * k is exact (k a power of two,
      // no overflow, and an underflowed product rounds to r = 0 either way), so the
      // FMA rounds exactly as FMUL-then-FADD does. u = C + r (C = 0x4b000000, the bits
      // of 2^23) and, mod 2^32, r^2 = u^2 - 2Cu + C^2 = u^2 + (2^32 - 2C) u since C^2 =
      // 0: so S = sum u^2 + 0x6a000000 * sum u, exact as S < 2^32.
      uint32_t sq = 0, su = 0;
#pragma unroll
      for (int r = 0; r < N; r += 2) {
        const uint32_t u0 = __float_as_uint(__fmaf_rn(fabsf(v[r]), k, 8388608.0f));
        const uint32_t u1 = __float_as_uint(__fmaf_rn(fabsf(v[r + 1]), k, 8388608.0f));
        sq += u0 * u0;
        sq += u1 * u1;
        su += u0 + u1;
      }
      S = sq + 0x6a000000u * su;
    } else {
#pragma unroll
      for (int r = 0; r < N; ++r) S += energyTerm(v[r], ks);
    }
    S = groupSum(S, tpb);
    // adaptiveAlpha, its ldexp as a multiply by an exact power of two (2e - 20 - log2B
    // >= -264: a normal double) in the common case
    if (common)
      alpha = (float)(kTau / sqrt((double)S * __hiloint2double((2 * e - 20 - a.k.log2B + 1023) << 20, 0) + kEps));
    else
      alpha = adaptiveAlpha(S, e, a.k.log2B);
#pragma unroll
    for (int r = 0; r < N; ++r) v[r] *= alpha;
  }
  lift = blockLift(bad ? 1.0f : m0, a.k.adaptive);
  if (lift != 1.0f)
#pragma unroll
    for (int r = 0; r < N; ++r) v[r] *= lift;
  return alpha;
}

// After it: the quantisation scales from m = max|Z'|; a bad block gets NaN scales, and
// inv = NaN makes every code the format's NaN code (the FP8 conversion writes 0x7f for
// NaN, the integer one 0: FormatInfo::nanCode).
template <int FMT>
__device__ __forceinline__ QuantScales blockScales(const Args& a, float m, float lift, bool bad, float& alpha) {
  QuantScales qs = quantScales(m, a.k.c, (CodeFormat)FMT);
  if (lift != 1.0f) qs.s = unliftScale(qs, lift, a.k.c);  // x / 1 == x: skip it (and its slow path) in the common case
  if (bad) {
    qs.s = canonicalNaN();
    qs.inv = canonicalNaN();
    alpha = canonicalNaN();
  }
  return qs;
}

__device__ __forceinline__ void storeScales(const Args& a, uint8_t* outWire, size_t block, float alpha, float s) {
  float* sc = reinterpret_cast<float*>(outWire + a.scalesOffset);
  if (a.k.adaptive) {
    sc[2 * block] = alpha;
    sc[2 * block + 1] = s;
  } else {
    sc[block] = s;
  }
}

// Compresses this thread's part of a block held in v (destroyed); m0 = max|x| of the
// block, bad = it holds NaN/Inf. kReduceCompress leaves the decoded codes in v, and in
// dOut and kOut the decode multiplier and exponent shift of the block; wide (there only):
// v is a sum scaled by 2^-64, whose stored s is negated (block_math.h, wideScale). WHOLE:
// the caller knows the block is whole and aligned (wholeBlock), so active and a.vec hold.
template <typename T, int FMT, int MODE, bool WHOLE = false>
__device__ __forceinline__ void compressTile(const Args& a, size_t block, int t, bool active,
                                             float (&v)[kPerThread], float m0, bool bad, uint8_t* outWire,
                                             float& dOut, int& kOut, bool wide = false) {
  constexpr int V = Vec<T>::V;
  float lift;
  float alpha = prescale(a, v, m0, bad, a.k.tpb, lift);
  float m = m0 * lift;
  if (a.k.rotate) {
    fwht<V>(v, t, a.k.tpb);
    m = 0.0f;
#pragma unroll
    for (int r = 0; r < kPerThread; ++r) m = fmaxf(m, fabsf(v[r]));  // no NaN in a good block
    m = groupMax(m, a.k.tpb);
  }
  const QuantScales qs = blockScales<FMT>(a, m, lift, bad, alpha);
  const float sStored = MODE == kReduceCompress && wide ? -qs.s : qs.s;
  if constexpr (MODE == kReduceCompress) {
    kOut = decodeShift(sStored, alpha, a.k.c);
    dOut = decodeScaleShifted(sStored, alpha, a.k.c, kOut);
  }
  uint8_t* codes = outWire + TACO_HEADER_BYTES;
  if constexpr (FMT == kFmtInt4) {
    if ((WHOLE || a.vec) && wholeCodes<FMT>(a)) {  // a block per thread: its codes in one 16-byte store
      uint32_t w[Vec<T>::NCH];
#pragma unroll
      for (int j = 0; j < Vec<T>::NCH; ++j) {
        w[j] = encodeInt4Word<V>(&v[j * V], qs.inv);
        if (MODE == kReduceCompress) decodeInt4Word<V>(w[j], &v[j * V]);  // for the optional y
      }
      if (WHOLE || active) {
        storeInt4Block<V>(codes, block, w);
        if (t == 0) storeScales(a, outWire, block, alpha, sStored);
      }
      return;
    }
  }
#pragma unroll
  for (int j = 0; j < Vec<T>::NCH; ++j) {
    if constexpr ((FMT == kFmtE4M3 || FMT == kFmtE5M2) && MODE == kCompress) {
      if (WHOLE || a.vec) {
        if (WHOLE || active) storeFp8Words<V, FMT>(codes, block, t, a, j, &v[j * V], qs.inv);
        continue;
      }
    }
    if constexpr (FMT == kFmtInt4) {  // the stored word, encoded and decoded whole (block_math.h)
      const uint32_t w = encodeInt4Word<V>(&v[j * V], qs.inv);
      if (MODE == kReduceCompress) decodeInt4Word<V>(w, &v[j * V]);  // for the optional y
      if (WHOLE || active) storeInt4Word<V, WHOLE>(codes, block, t, a, j, w);
    } else {
      uint8_t c[V];
      if constexpr ((FMT == kFmtE4M3 || FMT == kFmtE5M2) && MODE == kReduceCompress) {
        uint32_t w[V / 4];  // the words that are stored, as in compress: no bytes taken apart and put back
#pragma unroll
        for (int q = 0; q < V / 4; ++q) w[q] = encodeWord<FMT>(&v[j * V + 4 * q], qs.inv);
        memcpy(c, w, V);
      } else {
        encodeChunk<V, FMT>(&v[j * V], qs.inv, c);
      }
      if (MODE == kReduceCompress) decodeChunk<V, FMT>(c, &v[j * V]);  // for the optional y
      if (WHOLE || active) storeCodes<V, FMT, WHOLE>(codes, block, t, a, j, c);
    }
  }
  if ((WHOLE || active) && t == 0) storeScales(a, outWire, block, alpha, sStored);
}

// Compress of one tile: from the staged 16-byte chunks (STAGED: the warp's blocks are all
// whole and aligned, a warp-uniform fact: the group reductions shuffle across the warp), else
// through the general load.
template <typename T, int FMT, bool STAGED>
__device__ __forceinline__ void compressBlockTile(const Args& a, size_t block, int t, const uint4* staged) {
  const bool active = STAGED || block < a.nBlocks;
  float v[kPerThread];
  float m0, d;
  int K;
  bool bad;
  if constexpr (STAGED) {
    RawChunks<T> raw;
    readStaged<T>(staged, raw);
    rawToFloat<T>(raw, v);
    absMaxFromBits<T>(groupMaxU(rawAbsMaxBits<T>(raw), a.k.tpb), m0, bad);
  } else {
    if (active) {
      loadValues<T>(static_cast<const T*>(a.x), block, t, a, v);
    } else {
#pragma unroll
      for (int r = 0; r < kPerThread; ++r) v[r] = 0.0f;
    }
    blockMaxBad(v, a.k.tpb, m0, bad);
  }
  compressTile<T, FMT, kCompress, STAGED>(a, block, t, active, v, m0, bad, a.out, d, K);
}

// Compress of this warp's tiles (in the order `tiles` gives them, below nTiles: tile_queue.cuh; a
// tile is the warp's groupsPerWarp blocks, this thread lane t of block groupInWarp), as a
// software pipeline: tile i + D - 1 is being copied in while tile i is compressed.
// The tiles whose blocks are all whole and aligned (the first nStaged) are staged, in a loop
// of one straight path; the rest (the piece's last tiles) go through the general load
// after it. Shared memory: Stage<T>::kCompressDepth slots of kCompressSlot bytes
// (codec/launch.h: genericCompressSmemBytes), kThreads per CTA.
template <typename T, int FMT, class Tiles>
__device__ __forceinline__ void genericCompressTiles(const Args& a, Tiles& tiles, size_t nTiles, int groupsPerWarp,
                                                     int groupInWarp, int t) {
  constexpr int D = Stage<T>::kCompressDepth;
  extern __shared__ uint4 stagingArea[];
  uint4* mine = stagingArea + threadIdx.x;
  const size_t nStaged = a.vec ? min(nTiles, (a.count / (size_t)a.k.B) / (size_t)groupsPerWarp) : 0;
  stagedTileLoop<D>(
      tiles, nStaged,
      [&](size_t tile, int slot) {
        stageRaw<T>(static_cast<const T*>(a.x), tile * groupsPerWarp + groupInWarp, t, a,
                    mine + slot * Vec<T>::NCH * kThreads);
      },
      [&](size_t tile, int slot) {
        compressBlockTile<T, FMT, true>(a, tile * groupsPerWarp + groupInWarp, t, mine + slot * Vec<T>::NCH * kThreads);
      });
  for (; tiles.front() < nTiles; tiles.pop())
    compressBlockTile<T, FMT, false>(a, tiles.front() * groupsPerWarp + groupInWarp, t, nullptr);
}

}  // namespace dev
}  // namespace taco

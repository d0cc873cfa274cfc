// The generic block path: every block codec at any block size B (a runtime
// parameter, uniform across the grid), compress, decompress(-accumulate) and
// decompress-reduce-compress.
//
// Thread mapping: a block of B elements is held by B/32 consecutive lanes ("a
// group"), 32 elements per thread, in 16-byte chunks interleaved across the group so
// that loads coalesce: thread t holds chunks t, t + tpb, t + 2*tpb, ... of its block.
// A warp's tile is its 32 / tpb blocks. The math (block_math.h) is independent of this
// mapping, which is what keeps GPU, CPU and numpy equal.
//
// Compress and plain decompress are software-pipelined: each thread copies its
// chunks of the tiles ahead into shared memory with cp.async while it computes the
// current tile, so DRAM reads stay in flight during the (issue-bound) block math.
// The staging slots assume kThreads threads per CTA.
#pragma once
#include <type_traits>

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

// Codes <-> floats for one chunk. FP8 formats convert two codes per instruction
// (the paired conversions round exactly as the single ones in block_math.h).
template <int V, int FMT>
__device__ __forceinline__ void decodeChunk(const uint8_t (&c)[V], float* out) {
  if (FMT == kFmtE4M3 || FMT == kFmtE5M2) {
    constexpr __nv_fp8_interpretation_t kind = FMT == kFmtE4M3 ? __NV_E4M3 : __NV_E5M2;
    // as 32-bit words, so that each pair is a half-word (not rebuilt from two bytes)
    uint32_t w[V / 4];
    memcpy(w, c, V);
#pragma unroll
    for (int i = 0; i < V; i += 2) {
      const uint32_t pair = (i & 2) ? w[i / 4] >> 16 : w[i / 4] & 0xffffu;
      const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)pair, kind);
      const float2 f = __half22float2(__half2(h));
      out[i] = f.x;
      out[i + 1] = f.y;
    }
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) out[i] = decode(c[i], (CodeFormat)FMT);
  }
}

template <int V, int FMT>
__device__ __forceinline__ void encodeChunk(const float* v, float inv, uint8_t (&c)[V]) {
  if (FMT == kFmtE4M3 || FMT == kFmtE5M2) {
    constexpr __nv_fp8_interpretation_t kind = FMT == kFmtE4M3 ? __NV_E4M3 : __NV_E5M2;
#pragma unroll
    for (int i = 0; i < V; i += 2) {
      const __nv_fp8x2_storage_t p = __nv_cvt_float2_to_fp8x2(make_float2(v[i] * inv, v[i + 1] * inv), __NV_SATFINITE, kind);
      c[i] = (uint8_t)(p & 0xff);
      c[i + 1] = (uint8_t)(p >> 8);
    }
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) c[i] = encode(v[i] * inv, (CodeFormat)FMT);
  }
}

// Four codes as the word that is stored. FP8 on sm_89+: two paired conversions into
// 16-bit registers and one byte permute (through __nv_cvt_float2_to_fp8x2, whose
// 16-bit result is widened, the compiler adds a mask per pair; through a byte array
// ~10 instructions). The PTX pair conversion puts its first operand in the high byte.
template <int FMT>
__device__ __forceinline__ uint32_t encodeWord(const float* v, float inv) {
  if constexpr (FMT == kFmtE4M3 || FMT == kFmtE5M2) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    uint32_t w;
    if constexpr (FMT == kFmtE4M3)
      asm("{ .reg .b16 lo, hi;\n"
          "  cvt.rn.satfinite.e4m3x2.f32 lo, %2, %1;\n"
          "  cvt.rn.satfinite.e4m3x2.f32 hi, %4, %3;\n"
          "  mov.b32 %0, {lo, hi}; }"
          : "=r"(w)
          : "f"(v[0] * inv), "f"(v[1] * inv), "f"(v[2] * inv), "f"(v[3] * inv));
    else
      asm("{ .reg .b16 lo, hi;\n"
          "  cvt.rn.satfinite.e5m2x2.f32 lo, %2, %1;\n"
          "  cvt.rn.satfinite.e5m2x2.f32 hi, %4, %3;\n"
          "  mov.b32 %0, {lo, hi}; }"
          : "=r"(w)
          : "f"(v[0] * inv), "f"(v[1] * inv), "f"(v[2] * inv), "f"(v[3] * inv));
    return w;
#else
    constexpr __nv_fp8_interpretation_t kind = FMT == kFmtE4M3 ? __NV_E4M3 : __NV_E5M2;
    const uint32_t p0 = __nv_cvt_float2_to_fp8x2(make_float2(v[0] * inv, v[1] * inv), __NV_SATFINITE, kind);
    const uint32_t p1 = __nv_cvt_float2_to_fp8x2(make_float2(v[2] * inv, v[3] * inv), __NV_SATFINITE, kind);
    return __byte_perm(p0, p1, 0x5410);
#endif
  } else {
    uint8_t c[4];
    encodeChunk<4, FMT>(v, inv, c);
    uint32_t w;
    memcpy(&w, c, 4);
    return w;
  }
}

// FP8 codes of a chunk straight into the words that are stored.
template <int V, int FMT>
__device__ __forceinline__ void storeFp8Words(uint8_t* codes, size_t block, int t, const Args& a, int j,
                                              const float* v, float inv) {
  uint8_t* dst = codes + block * a.k.B + (size_t)(t + a.k.tpb * j) * V;
  if constexpr (V == 8)
    *reinterpret_cast<uint2*>(dst) = make_uint2(encodeWord<FMT>(v, inv), encodeWord<FMT>(v + 4, inv));
  else
    *reinterpret_cast<uint32_t*>(dst) = encodeWord<FMT>(v, inv);
}

// Input q's scales (alpha, s) of `block` (alpha = 1 without the adaptive scale).
__device__ __forceinline__ void inputScales(const Args& a, int q, size_t block, float& alpha, float& s) {
  const float* sc = reinterpret_cast<const float*>(static_cast<const uint8_t*>(a.in.ptr[q]) + a.scalesOffset);
  alpha = a.k.adaptive ? sc[2 * block] : 1.0f;
  s = a.k.adaptive ? sc[2 * block + 1] : sc[block];
}

// A block's decode shift: K, the largest of its inputs' (block_math.h, decodeShift), and
// whether its unshift saturates (sat: one input, not wide).
struct SumShift {
  int K;
  bool sat;
};

// The decode shift of `block` (a.in.n > 0). No division: the plain decode's cost stays one
// per input.
__device__ __forceinline__ SumShift blockDecodeShift(const Args& a, size_t block) {
  SumShift sh{-64, false};
  for (int q = 0; q < a.in.n; ++q) {
    float alpha, s;
    inputScales(a, q, block, alpha, s);
    sh.K = max(sh.K, decodeShift(s, alpha, a.k.c));
    if (q == 0) sh.sat = a.in.n == 1 && !wideScale(s);
  }
  return sh;
}

// Back from the decode's exponent shift K != 0 (block_math.h, unshift), in one loop: the
// saturation limit is FLT_MAX 2^-64 with K > 0 and sat, else +Inf (no clamp; NaN stays NaN).
template <int N>
__device__ __forceinline__ void unshiftAll(float (&v)[N], int K, bool sat) {
  const float mul = K < 0 ? 0x1p-64f : 0x1p64f;
  const float lim = K > 0 && sat ? kTopScaled : INFINITY;
#pragma unroll
  for (int r = 0; r < N; ++r) v[r] = (fabsf(v[r]) > lim ? copysignf(lim, v[r]) : v[r]) * mul;
}

template <typename T, int FMT, bool FIRST>
__device__ __forceinline__ void accumulateInput(const Args& a, int q, size_t block, int t, bool active, int K,
                                                float (&v)[kPerThread]) {
  constexpr int V = Vec<T>::V;
  const uint8_t* w = static_cast<const uint8_t*>(a.in.ptr[q]);
  float d = 0.0f;
  if (active) {
    float alpha, s;
    inputScales(a, q, block, alpha, s);
    d = decodeScaleShifted(s, alpha, a.k.c, K);
  }
  // every chunk's load issued before the first decode (memory-level parallelism)
  uint8_t c[Vec<T>::NCH][V];
  if (active && a.vec) {
#pragma unroll
    for (int j = 0; j < Vec<T>::NCH; ++j) loadCodes<V, FMT, true>(w + TACO_HEADER_BYTES, block, t, a, j, c[j]);
  } else if (active) {
#pragma unroll
    for (int j = 0; j < Vec<T>::NCH; ++j) loadCodes<V, FMT, false>(w + TACO_HEADER_BYTES, block, t, a, j, c[j]);
  } else {
#pragma unroll
    for (int j = 0; j < Vec<T>::NCH; ++j)
#pragma unroll
      for (int i = 0; i < V; ++i) c[j][i] = 0;
  }
#pragma unroll
  for (int j = 0; j < Vec<T>::NCH; ++j) {
    float f[V];
    decodeChunk<V, FMT>(c[j], f);
#pragma unroll
    for (int i = 0; i < V; ++i) v[j * V + i] = FIRST ? f[i] * d : v[j * V + i] + f[i] * d;
  }
}

// Decoded sum of the k inputs for this thread's elements of `block`: R = W_0 + W_1 + ...
// (W_q = code * d_q, the first one assigned, not added to 0, so that -0 survives), then
// the rotation; still scaled by the decode's exponent shift, which it returns.
template <typename T, int FMT>
__device__ __forceinline__ SumShift accumulateRaw(const Args& a, size_t block, int t, bool active,
                                                  float (&v)[kPerThread]) {
  SumShift sh{0, false};
  if (a.in.n == 0) {
#pragma unroll
    for (int r = 0; r < kPerThread; ++r) v[r] = 0.0f;
  } else {
    if (active) sh = blockDecodeShift(a, block);
    accumulateInput<T, FMT, true>(a, 0, block, t, active, sh.K, v);
    for (int q = 1; q < a.in.n; ++q) accumulateInput<T, FMT, false>(a, q, block, t, active, sh.K, v);
  }
  if (a.k.rotate) fwht<Vec<T>::V>(v, t, a.k.tpb);
  return sh;
}

// The sum back from its shift, + the exact input a.x if there is one: at K = 64 the two
// together (block_math.h, unshiftAddTop: a sum past FLT_MAX that the exact input does not
// bring back is +-Inf), else unshift, then + x.
template <typename T>
__device__ __forceinline__ void finishSum(const Args& a, size_t block, int t, bool active, float (&v)[kPerThread],
                                          SumShift sh) {
  const bool exact = a.x != nullptr && active;
  if (exact && sh.K > 0) {
    const bool sat = sh.sat;
    combineValues<T>(static_cast<const T*>(a.x), block, t, a, v,
                     [sat](float u, float e) { return unshiftAddTop(u, e, sat); });
    return;
  }
  if (sh.K != 0) unshiftAll(v, sh.K, sh.sat);
  if (exact) addValues<T>(static_cast<const T*>(a.x), block, t, a, v);
}

// The same sum scaled by 2^-64, for the wide block of a sum that overflowed
// (block_math.h, wideValue): the exact input joins it as e * 2^-64.
template <typename T>
__device__ __forceinline__ void wideSum(const Args& a, size_t block, int t, bool active, float (&v)[kPerThread],
                                        SumShift sh) {
#pragma unroll
  for (int r = 0; r < kPerThread; ++r) v[r] = wideValue(v[r], sh.K, sh.sat);
  if (a.x != nullptr && active)
    combineValues<T>(static_cast<const T*>(a.x), block, t, a, v,
                     [](float u, float e) { return u + e * 0x1p-64f; });
}

// A plain decompress (one input, no exact input) of this thread's elements of `block`
// through the general loads: the sum of accumulateRaw, back from its shift.
template <typename T, int FMT>
__device__ __forceinline__ void accumulateTile(const Args& a, size_t block, int t, bool active,
                                               float (&v)[kPerThread]) {
  const SumShift sh = accumulateRaw<T, FMT>(a, block, t, active, v);
  if (sh.K != 0) unshiftAll(v, sh.K, sh.sat);
}

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
// v is a sum scaled by 2^-64, whose stored s is negated (block_math.h, wideScale).
template <typename T, int FMT, int MODE>
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
#pragma unroll
  for (int j = 0; j < Vec<T>::NCH; ++j) {
    if constexpr ((FMT == kFmtE4M3 || FMT == kFmtE5M2) && MODE == kCompress) {
      if (a.vec) {
        if (active) storeFp8Words<V, FMT>(codes, block, t, a, j, &v[j * V], qs.inv);
        continue;
      }
    }
    uint8_t c[V];
    encodeChunk<V, FMT>(&v[j * V], qs.inv, c);
    if (MODE == kReduceCompress) decodeChunk<V, FMT>(c, &v[j * V]);  // for the optional y
    if (active) storeCodes<V, FMT>(codes, block, t, a, j, c);
  }
  if (active && t == 0) storeScales(a, outWire, block, alpha, sStored);
}

// Compress of one tile: from the staged 16-byte chunks when the whole warp's blocks
// are full and aligned (a warp-uniform test: the group reductions shuffle across the
// warp), else through the general load.
template <typename T, int FMT>
__device__ __forceinline__ void compressBlockTile(const Args& a, size_t block, int t, const uint4* staged) {
  const bool active = block < a.nBlocks;
  float v[kPerThread];
  float m0, d;
  int K;
  bool bad;
  if (staged != nullptr) {  // warp-uniform: the tile was staged by genericCompressTiles
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
  compressTile<T, FMT, kCompress>(a, block, t, active, v, m0, bad, a.out, d, K);
}

// Compress of this warp's tiles (tiles warp, warp + nWarps, ... < nTiles; a tile is
// the warp's groupsPerWarp blocks, this thread lane t of block groupInWarp), as a
// software pipeline: tile i + D - 1 is being copied in while tile i is compressed.
// Only whole, aligned tiles are staged (bit s of `staged` marks slot s); the rest go
// through the general load. Shared memory: Stage<T>::kCompressDepth slots of
// kCompressSlot bytes (device/args.h: genericCompressSmemBytes), kThreads per CTA.
template <typename T, int FMT>
__device__ __forceinline__ void genericCompressTiles(const Args& a, size_t warp, size_t nWarps, size_t nTiles,
                                                     int groupsPerWarp, int groupInWarp, int t) {
  constexpr int D = Stage<T>::kCompressDepth;
  extern __shared__ uint4 stagingArea[];
  uint4* mine = stagingArea + threadIdx.x;
  auto stageable = [&](size_t tile) {
    return tile < nTiles && __all_sync(0xffffffffu, wholeBlock(a, tile * groupsPerWarp + groupInWarp));
  };
  uint32_t staged = 0;
#pragma unroll
  for (int i = 0; i < D - 1; ++i) {
    const size_t tile = warp + i * nWarps;
    if (stageable(tile)) {
      stageRaw<T>(static_cast<const T*>(a.x), tile * groupsPerWarp + groupInWarp, t, a,
                  mine + i * Vec<T>::NCH * kThreads);
      staged |= 1u << i;
    }
    cpAsyncCommit();
  }
  int s = 0;
  for (size_t tile = warp; tile < nTiles; tile += nWarps) {
    const int ahead = s == 0 ? D - 1 : s - 1;  // the slot read one iteration ago
    staged &= ~(1u << ahead);
    const size_t far = tile + (size_t)(D - 1) * nWarps;
    if (stageable(far)) {
      stageRaw<T>(static_cast<const T*>(a.x), far * groupsPerWarp + groupInWarp, t, a,
                  mine + ahead * Vec<T>::NCH * kThreads);
      staged |= 1u << ahead;
    }
    cpAsyncCommit();
    cpAsyncWait<D - 1>();  // this tile's copies have landed
    compressBlockTile<T, FMT>(a, tile * groupsPerWarp + groupInWarp, t,
                              (staged >> s) & 1 ? mine + s * Vec<T>::NCH * kThreads : nullptr);
    s = s + 1 == D ? 0 : s + 1;
  }
  cpAsyncWait<0>();
}

// Plain decompress (one input, no exact input, byte codes, aligned pointers), with
// the same software pipeline as compress: each thread stages its codes and its
// block's scales for the tile D - 1 ahead while it decodes this one.
template <typename T, int FMT>
__device__ __forceinline__ void genericDecompressTiles(const Args& a, size_t warp, size_t nWarps, size_t nTiles,
                                                int groupsPerWarp, int groupInWarp, int t) {
  constexpr int D = Stage<T>::kDecompressDepth, V = Vec<T>::V, NCH = Vec<T>::NCH;
  using Word = typename std::conditional<V == 8, uint2, uint32_t>::type;  // one chunk's codes
  extern __shared__ uint4 stagingArea[];
  uint8_t* area = reinterpret_cast<uint8_t*>(stagingArea);
  const uint8_t* w = static_cast<const uint8_t*>(a.in.ptr[0]);
  const float* sc = reinterpret_cast<const float*>(w + a.scalesOffset);
  const int perBlock = a.k.adaptive ? 2 : 1;  // scales per block: (alpha, s) or s
  auto codesAt = [&](int slot, int j) {
    return reinterpret_cast<Word*>(area + slot * Stage<T>::kDecompressSlot) + j * kThreads + threadIdx.x;
  };
  auto scalesAt = [&](int slot) {
    return reinterpret_cast<float2*>(area + slot * Stage<T>::kDecompressSlot + Stage<T>::kCodesBytes) + threadIdx.x;
  };
  auto stageable = [&](size_t tile) {
    return tile < nTiles && __all_sync(0xffffffffu, wholeBlock(a, tile * groupsPerWarp + groupInWarp));
  };
  auto stage = [&](size_t tile, int slot) {
    const size_t block = tile * groupsPerWarp + groupInWarp;
#pragma unroll
    for (int j = 0; j < NCH; ++j)
      cpAsync(codesAt(slot, j), w + TACO_HEADER_BYTES + block * a.k.B + (size_t)(t + a.k.tpb * j) * V, V);
    cpAsync(scalesAt(slot), sc + perBlock * block, 4 * perBlock);
  };
  uint32_t staged = 0;
#pragma unroll
  for (int i = 0; i < D - 1; ++i) {
    if (stageable(warp + i * nWarps)) {
      stage(warp + i * nWarps, i);
      staged |= 1u << i;
    }
    cpAsyncCommit();
  }
  int s = 0;
  for (size_t tile = warp; tile < nTiles; tile += nWarps) {
    const int ahead = s == 0 ? D - 1 : s - 1;
    staged &= ~(1u << ahead);
    const size_t far = tile + (size_t)(D - 1) * nWarps;
    if (stageable(far)) {
      stage(far, ahead);
      staged |= 1u << ahead;
    }
    cpAsyncCommit();
    cpAsyncWait<D - 1>();
    const size_t block = tile * groupsPerWarp + groupInWarp;
    float v[kPerThread];
    if ((staged >> s) & 1) {
      const float2 sp = *scalesAt(s);
      const float alpha = a.k.adaptive ? sp.x : 1.0f, sc = a.k.adaptive ? sp.y : sp.x;
      const int K = decodeShift(sc, alpha, a.k.c);  // block_math.h: K != 0 only at the extremes
      const float d = decodeScaleShifted(sc, alpha, a.k.c, K);
#pragma unroll
      for (int j = 0; j < NCH; ++j) {
        const Word cw = *codesAt(s, j);
        uint8_t c[V];
        memcpy(c, &cw, V);
        float f[V];
        decodeChunk<V, FMT>(c, f);
#pragma unroll
        for (int i = 0; i < V; ++i) v[j * V + i] = f[i] * d;
      }
      if (a.k.rotate) fwht<V>(v, t, a.k.tpb);
      if (K != 0) unshiftAll(v, K, !wideScale(sc));
      storeValues<T>(static_cast<T*>(a.y), block, t, a, v);
    } else {
      const bool active = block < a.nBlocks;
      accumulateTile<T, FMT>(a, block, t, active, v);
      if (active) storeValues<T>(static_cast<T*>(a.y), block, t, a, v);
    }
    s = s + 1 == D ? 0 : s + 1;
  }
  cpAsyncWait<0>();
}

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
// looks at it again.
template <typename T, int MODE, int FMT>
__device__ __forceinline__ bool sumTileOut(const Args& a, size_t block, int t, bool active,
                                           float (&v)[kPerThread]) {
  if constexpr (MODE == kAccumulate) {
    if (active) storeValues<T>(static_cast<T*>(a.y), block, t, a, v);
    return false;
  } else {
    zeroPadding<T>(a, block, t, active, v);
    float m0, d;
    int K;
    bool bad;
    blockMaxBad(v, a.k.tpb, m0, bad);
    compressTile<T, FMT, MODE>(a, block, t, active, v, m0, bad, a.out, d, K);
    if (a.y != nullptr) {
#pragma unroll
      for (int r = 0; r < kPerThread; ++r) v[r] = v[r] * d;
      if (a.k.rotate) fwht<Vec<T>::V>(v, t, a.k.tpb);
      if (K != 0) unshiftAll(v, K, true);
      if (active) storeValues<T>(static_cast<T*>(a.y), block, t, a, v);
    }
    return bad && active;
  }
}

// Decompress-reduce-compress, after this warp's tiles (tiles warp, warp + nWarps, ...): a block
// whose sum held NaN or +-Inf was written as a NaN block. Where it overflowed (every input finite,
// some element of the sum past FLT_MAX), its sum scaled by 2^-64 is finite: that block is summed
// again through the general loads, scaled (wideSum), and written wide over the NaN block, and its
// y too (block_math.h, wideValue). Only a warp that wrote a NaN block comes here (the caller's
// vote), so a sum without one costs nothing; and outside the tile loop, this code adds nothing to
// the loop's registers. The block's stored s tells it (NaN); the lanes read what lane 0 of the
// block stored, after __syncwarp.
template <typename T, int FMT>
__device__ __forceinline__ void wideBlocks(const Args& a, size_t warp, size_t nWarps, size_t nTiles,
                                           int groupsPerWarp, int groupInWarp, int t) {
  __syncwarp();
  const float* stored = reinterpret_cast<const float*>(a.out + a.scalesOffset);
  for (size_t tile = warp; tile < nTiles; tile += nWarps) {
    const size_t block = tile * groupsPerWarp + groupInWarp;
    const bool active = block < a.nBlocks;
    const float sBlock = active ? stored[a.k.adaptive ? 2 * block + 1 : block] : 0.0f;
    const bool nanBlock = sBlock != sBlock;
    if (!__any_sync(0xffffffffu, nanBlock)) continue;  // warp-uniform: the rotation's shuffles below
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
}

// Decompress-accumulate and decompress-reduce-compress, one tile at a time without
// staging (and plain decompress when its inputs fail the header check: NaN output).
template <typename T, int MODE, int FMT>
__device__ __forceinline__ void generalTiles(const Args& a, size_t warp, size_t nWarps, size_t nTiles,
                                             int groupsPerWarp, int groupInWarp, int t, bool inputsOk) {
  bool nanBlocks = false;
  for (size_t tile = warp; tile < nTiles; tile += nWarps) {
    const size_t block = tile * groupsPerWarp + groupInWarp;
    const bool active = block < a.nBlocks;
    float v[kPerThread];
    finishSum<T>(a, block, t, active, v, accumulateRaw<T, FMT>(a, block, t, active, v));
    if (!inputsOk)
#pragma unroll
      for (int r = 0; r < kPerThread; ++r) v[r] = canonicalNaN();
    nanBlocks |= sumTileOut<T, MODE, FMT>(a, block, t, active, v);
  }
  if (MODE == kReduceCompress && inputsOk && __any_sync(0xffffffffu, nanBlocks))
    wideBlocks<T, FMT>(a, warp, nWarps, nTiles, groupsPerWarp, groupInWarp, t);
}

// Whether decompress-accumulate or decompress-reduce-compress of `a` takes the staged
// sum (genericSumTiles): one compressed input or more whose headers matched, a byte per
// code (FormatInfo::stagedTiles: cp.async copies 4, 8 or 16 bytes; INT4's nibbles and
// INT6's 3- and 6-byte chunks take generalTiles), and aligned pointers. Plain decompress
// (one input, no exact input) has a pipeline of its own, genericDecompressTiles.
template <int FMT>
__device__ __forceinline__ bool takesStagedSum(const Args& a, bool inputsOk) {
  return formatInfo(FMT).stagedTiles && a.vec && inputsOk && a.in.n >= 1;
}

// This thread's codes of one staged input (NCH words, a warp apart), decoded and
// scaled by d: v = W_q, or v += W_q (FIRST: input 0, assigned, so that -0 survives),
// the same operations per element as accumulateInput.
template <typename T, int FMT, bool FIRST, typename Word>
__device__ __forceinline__ void accumulateStaged(const Word* codes, float d, float (&v)[kPerThread]) {
  constexpr int V = Vec<T>::V;
#pragma unroll
  for (int j = 0; j < Vec<T>::NCH; ++j) {
    const Word cw = codes[j * 32];
    uint8_t c[V];
    memcpy(c, &cw, V);
    float f[V];
    decodeChunk<V, FMT>(c, f);
#pragma unroll
    for (int i = 0; i < V; ++i) v[j * V + i] = FIRST ? f[i] * d : v[j * V + i] + f[i] * d;
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
// device/args.h, genericSumSmemBytes); a slot for every input of a tile would not be
// (10 KB per input, and k reaches 15 in two-shot at P = 16, 16 in one-shot).
//
// The per-element operations are accumulateRaw's and finishSum's, in their order: R = W_0 +
// W_1 + ..., the rotation, back from the decode's exponent shift K, then + x (at K = 64 the
// two together); then sumTileOut.
// K is the largest decodeShift of the block's k inputs (blockDecodeShift), needed
// before the first decode: the staged sum takes group 0's and checks every later
// group's against it. Where a later group's is larger (only at the extremes of the
// range: block_math.h, decodeShift) the warp sums the tile again with the general
// loads, as generalTiles does, and so it does tiles not wholly inside `count`.
template <typename T, int MODE, int FMT>
__device__ __forceinline__ void genericSumTiles(const Args& a, size_t warp, size_t nWarps, size_t nTiles,
                                                int groupsPerWarp, int groupInWarp, int t) {
  constexpr int D = Stage<T>::kSumDepth, G = Stage<T>::kSumGroup, V = Vec<T>::V, NCH = Vec<T>::NCH;
  using Word = typename std::conditional<V == 8, uint2, uint32_t>::type;  // one chunk's codes
  extern __shared__ uint4 stagingArea[];
  uint8_t* area = reinterpret_cast<uint8_t*>(stagingArea);
  const int k = a.in.n;
  const int codeUnits = (k + G - 1) / G;
  const int units = codeUnits + (a.x != nullptr ? 1 : 0);  // per tile
  const int perBlock = a.k.adaptive ? 2 : 1;               // scales per block: (alpha, s) or s
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
  auto scalesAt = [&](int slot, int i) {
    return reinterpret_cast<float2*>(region + slot * Stage<T>::kSumSlot + G * NCH * 32 * V) + i * 32 + lane;
  };
  auto exactAt = [&](int slot) { return reinterpret_cast<uint4*>(region + slot * Stage<T>::kSumSlot) + lane; };
  auto stageable = [&](size_t tile) {
    return tile < nTiles && __all_sync(0xffffffffu, wholeBlock(a, tile * groupsPerWarp + groupInWarp));
  };
  auto stage = [&](size_t tile, int u, int slot) {
    const size_t block = tile * groupsPerWarp + groupInWarp;
    if (u < codeUnits) {
#pragma unroll
      for (int i = 0; i < G; ++i) {
        const int q = u * G + i;
        if (q < k) {
          const uint8_t* w = static_cast<const uint8_t*>(a.in.ptr[q]);
          Word* c = codesAt(slot, i);
#pragma unroll
          for (int j = 0; j < NCH; ++j)
            cpAsync(c + j * 32, w + TACO_HEADER_BYTES + block * a.k.B + (size_t)(t + a.k.tpb * j) * V, V);
          cpAsync(scalesAt(slot, i), reinterpret_cast<const float*>(w + a.scalesOffset) + perBlock * block,
                  4 * perBlock);
        }
      }
    } else {
      const T* x = static_cast<const T*>(a.x) + block * a.k.B;
#pragma unroll
      for (int j = 0; j < NCH; ++j) cpAsync(exactAt(slot) + j * 32, x + (size_t)(t + a.k.tpb * j) * V, 16);
    }
  };
  // Stages unit u + n of this warp's tile sequence from unit u of `tile` (n < D) into
  // `slot`, if its tile is stageable (whole and aligned); one commit group either way.
  // Whether a slot holds a staged unit is its tile's stageable(), asked again when it is
  // computed: no state kept across the tile's compress beside tile and slot.
  auto stageAhead = [&](size_t tile, int u, int n, int slot) {
    int farU = u + n;
    size_t farTile = tile;
    while (farU >= units) {
      farU -= units;
      farTile += nWarps;
    }
    if (stageable(farTile)) stage(farTile, farU, slot);
    cpAsyncCommit();
  };
#pragma unroll
  for (int i = 0; i < D - 1; ++i) stageAhead(warp, 0, i, i);
  int s = 0;
  bool nanBlocks = false;  // a block of this warp's was written as a NaN block (wideBlocks)
  for (size_t tile = warp; tile < nTiles; tile += nWarps) {
    const size_t block = tile * groupsPerWarp + groupInWarp;
    const bool tileStaged = stageable(tile);  // every unit of the tile alike (warp-uniform)
    float v[kPerThread];
    int K = 0;
    bool sat = false;      // one input, not wide: its unshift saturates (block_math.h, unshift)
    bool reshift = false;  // a later group's inputs shift further than group 0's
    for (int u = 0; u < units; ++u) {
      __syncwarp();  // every lane has read the slot computed one unit ago (lanes share its bytes)
      stageAhead(tile, u, D - 1, s == 0 ? D - 1 : s - 1);  // into that slot
      cpAsyncWait<D - 1>();                // this unit's copies have landed
      if (tileStaged && u < codeUnits) {
        float alpha[G], sc[G];
        int Kg = -64;
#pragma unroll
        for (int i = 0; i < G; ++i) {
          alpha[i] = sc[i] = 1.0f;
          if (u * G + i < k) {
            const float2 sp = *scalesAt(s, i);
            alpha[i] = a.k.adaptive ? sp.x : 1.0f;
            sc[i] = a.k.adaptive ? sp.y : sp.x;
            Kg = max(Kg, decodeShift(sc[i], alpha[i], a.k.c));
          }
        }
        if (u == 0) {
          K = Kg;
          sat = k == 1 && !wideScale(sc[0]);
        } else if (Kg > K) {
          reshift = true;
        }
#pragma unroll
        for (int i = 0; i < G; ++i) {
          const int q = u * G + i;
          if (q < k) {
            const float d = decodeScaleShifted(sc[i], alpha[i], a.k.c, K);
            if (i == 0 && u == 0)
              accumulateStaged<T, FMT, true>(codesAt(s, 0), d, v);
            else
              accumulateStaged<T, FMT, false>(codesAt(s, i), d, v);
          }
        }
        if (u == codeUnits - 1) {
          if (a.k.rotate) fwht<V>(v, t, a.k.tpb);
          if (K < 0 || (K > 0 && a.x == nullptr)) unshiftAll(v, K, sat);  // K = 64 with x: below
        }
      } else if (tileStaged) {  // the exact input, as finishSum: v + x, at K = 64 unshiftAddTop
#pragma unroll
        for (int j = 0; j < NCH; ++j) {
          RawChunks<T, V> raw;
          raw.c[0] = exactAt(s)[j * 32];
          float f[V];
          rawToFloat<T, V>(raw, f);
          if (K > 0) {
#pragma unroll
            for (int i = 0; i < V; ++i) v[j * V + i] = unshiftAddTop(v[j * V + i], f[i], sat);
          } else {
#pragma unroll
            for (int i = 0; i < V; ++i) v[j * V + i] = v[j * V + i] + f[i];
          }
        }
      }
      s = s + 1 == D ? 0 : s + 1;
    }
    const bool active = block < a.nBlocks;
    if (!tileStaged || __any_sync(0xffffffffu, reshift))  // the whole warp: the rotation's shuffles
      finishSum<T>(a, block, t, active, v, accumulateRaw<T, FMT>(a, block, t, active, v));
    nanBlocks |= sumTileOut<T, MODE, FMT>(a, block, t, active, v);
  }
  cpAsyncWait<0>();
  if (MODE == kReduceCompress && __any_sync(0xffffffffu, nanBlocks))
    wideBlocks<T, FMT>(a, warp, nWarps, nTiles, groupsPerWarp, groupInWarp, t);
}

}  // namespace dev
}  // namespace taco

// Codes <-> floats for one 16-byte chunk of the generic block path: the conversions
// and the packing of four codes into the word that is stored, apart from the block
// math so that the loops that stage chunks and the ones that load them share them.
#pragma once
#include <type_traits>

#include "codec/device/io.cuh"

namespace taco {
namespace dev {

// Codes <-> floats for one chunk. FP8 formats convert two codes per instruction
// (the paired conversions round exactly as the single ones in block_math.h).
template <int V, int FMT>
__device__ __forceinline__ void decodeChunk(const uint8_t (&c)[V], float* out) {
  if constexpr (FMT == kFmtE4M3 || FMT == kFmtE5M2) {
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
  } else if constexpr (FMT == kFmtInt8) {  // decode(), a word of four codes at once (block_math.h)
    uint32_t w[V / 4];
    memcpy(w, c, V);
#pragma unroll
    for (int q = 0; q < V / 4; ++q) decodeInt8Word(w[q], out + 4 * q);
  } else if constexpr (FMT == kFmtInt6) {  // decode(), no conversion
#pragma unroll
    for (int i = 0; i < V; ++i) out[i] = decodeIntNoCvt(c[i], (CodeFormat)FMT);
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) out[i] = decode(c[i], (CodeFormat)FMT);
  }
}

// One chunk's codes as the staged pipelines copy them (stagedChunkBytes, codec/format.h): a
// word of V bytes, or of V / 2 for INT4's nibbles (element 2i in the low nibble of byte i), at
// byte offset byteOffset(e0) of the codes for a chunk whose first element is e0; decode() gives
// its V values as decodeChunk does (INT4: the word decoded whole, block_math.h). INT4 in fp32
// (kBytes 2, which cp.async does not copy) is staged a whole block at a time only (wholeCodes):
// its chunk's word is the low 16 bits of a Word.
template <int V, int FMT>
struct StagedChunk {
  static constexpr int kBytes = V * formatInfo(FMT).bits / 8;
  static_assert(kBytes == 4 || kBytes == 8 || (kBytes == 2 && FMT == kFmtInt4),
                "the staged pipelines copy 4 or 8 bytes of codes a chunk (INT4 in fp32: whole blocks)");
  static constexpr bool kChunkCopies = kBytes >= 4;  // cp.async copies a chunk's word
  using Word = typename std::conditional<kBytes == 8, uint2, uint32_t>::type;
  __device__ __forceinline__ static size_t byteOffset(size_t e0) {
    if constexpr (formatInfo(FMT).bits == 4) return e0 / 2;  // e0 is a chunk's first element: even
    else return e0;
  }
  __device__ __forceinline__ static void decode(const Word w, float (&f)[V]) {
    if constexpr (FMT == kFmtInt4) {
      decodeInt4Word<V>(w, f);
    } else {
      uint8_t c[V];
      memcpy(c, &w, V);
      decodeChunk<V, FMT>(c, f);
    }
  }
};

// Whether a thread's codes of a tile move whole: INT4 with a block per thread (B = kPerThread,
// tpb 1), whose 16 code bytes the thread holds. One 16-byte load, store, or copy and shared-memory
// load instead of NCH of 4 or 2 bytes 16 apart (a warp's access is then 512 consecutive bytes);
// the staged pipelines keep them in the same bytes of the slot, laid out by thread. False for
// every other format.
template <int FMT>
__device__ __forceinline__ bool wholeCodes(const Args& a) {
  return FMT == kFmtInt4 && a.k.tpb == 1;
}

// A thread's whole block of INT4 codes (wholeCodes), 16 bytes, as the words of its NCH chunks.
template <int NCH, typename Word>
__device__ __forceinline__ void wholeCodeWords(const uint4& q, Word (&w)[NCH]) {
  if constexpr (NCH == 4 && sizeof(Word) == 4) {
    w[0] = q.x;
    w[1] = q.y;
    w[2] = q.z;
    w[3] = q.w;
  } else if constexpr (NCH == 8 && sizeof(Word) == 4) {  // fp32: a chunk's 2 bytes in the low half
    const uint32_t words[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
    for (int j = 0; j < 8; ++j) w[j] = words[j / 2] >> (16 * (j & 1));
  }
}

// One chunk's codes between their load through the general path and their decode: a byte a
// code (io.cuh, loadCodes), or INT4's V nibbles as the word they are stored in, decoded whole.
template <int V, int FMT>
struct LoadedChunk {
  uint8_t c[V];
  template <bool VEC>
  __device__ __forceinline__ void load(const uint8_t* codes, size_t block, int t, const Args& a, int j) {
    loadCodes<V, FMT, VEC>(codes, block, t, a, j, c);
  }
  __device__ __forceinline__ void clear() {
#pragma unroll
    for (int i = 0; i < V; ++i) c[i] = 0;
  }
  __device__ __forceinline__ void decode(float (&f)[V]) const { decodeChunk<V, FMT>(c, f); }
};
template <int V>
struct LoadedChunk<V, kFmtInt4> {
  uint32_t w;
  template <bool VEC>
  __device__ __forceinline__ void load(const uint8_t* codes, size_t block, int t, const Args& a, int j) {
    w = loadInt4Word<V, VEC>(codes, block, t, a, j);
  }
  __device__ __forceinline__ void clear() { w = 0; }
  __device__ __forceinline__ void decode(float (&f)[V]) const { decodeInt4Word<V>(w, f); }
  // Where a thread holds a whole block (B = kPerThread: one thread a block), its kPerThread / 2
  // = 16 code bytes in one load instead of one per chunk: the lanes of a warp then read 512
  // consecutive bytes (a chunk at a time, 4 or 2 bytes 16 apart). `codes` 16-byte aligned.
  template <int NCH>
  __device__ __forceinline__ static void loadBlock(LoadedChunk (&c)[NCH], const uint8_t* codes, size_t block) {
    static_assert(NCH * V == kPerThread, "a thread's chunks are its whole block");
    const uint4 q = __ldg(reinterpret_cast<const uint4*>(codes + block * (kPerThread / 2)));
    const uint32_t words[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
    for (int j = 0; j < NCH; ++j) c[j].w = V == 8 ? words[j] : words[j / 2] >> (16 * (j & 1));  // (V = 4: 16 bits)
  }
};

// INT4 words of a thread's whole block (B = kPerThread), stored with one 16-byte store: w[j]
// holds chunk j's V / 2 bytes. `codes` 16-byte aligned.
template <int V, int NCH>
__device__ __forceinline__ void storeInt4Block(uint8_t* codes, size_t block, const uint32_t (&w)[NCH]) {
  static_assert(NCH * V == kPerThread, "a thread's chunks are its whole block");
  uint32_t q[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) q[i] = V == 8 ? w[i] : (w[2 * i] & 0xffffu) | (w[2 * i + 1] << 16);
  *reinterpret_cast<uint4*>(codes + block * (kPerThread / 2)) = make_uint4(q[0], q[1], q[2], q[3]);
}

template <int V, int FMT>
__device__ __forceinline__ void encodeChunk(const float* v, float inv, uint8_t (&c)[V]) {
  if constexpr (FMT == kFmtE4M3 || FMT == kFmtE5M2) {
    constexpr __nv_fp8_interpretation_t kind = FMT == kFmtE4M3 ? __NV_E4M3 : __NV_E5M2;
#pragma unroll
    for (int i = 0; i < V; i += 2) {
      const __nv_fp8x2_storage_t p = __nv_cvt_float2_to_fp8x2(make_float2(v[i] * inv, v[i + 1] * inv), __NV_SATFINITE, kind);
      c[i] = (uint8_t)(p & 0xff);
      c[i + 1] = (uint8_t)(p >> 8);
    }
  } else if constexpr (FMT == kFmtInt8 || FMT == kFmtInt6) {  // (INT4: block_math.h)
    // encode(), no conversion; a bad block (inv NaN) gets code 0, as the conversion gives it
    const uint8_t keep = inv == inv ? 0xffu : 0u;
#pragma unroll
    for (int i = 0; i < V; ++i) c[i] = encodeIntNoCvt(v[i] * inv, (CodeFormat)FMT) & keep;
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

}  // namespace dev
}  // namespace taco

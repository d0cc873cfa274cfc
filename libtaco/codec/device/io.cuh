// Global memory accesses of the block codecs: values (T <-> fp32, with the
// whole-block fast path and the zero padding past `count`), raw 16-byte chunks and
// their abs-max, codes (a byte per element, a nibble for INT4, 6 bits for INT6), and the 16-byte
// wire header (docs/format.md).
//
// Thread mapping assumed (the generic one): a block's tpb = B / 32 lanes hold 32
// elements each in 16-byte chunks of V = 16 / sizeof(T) elements, interleaved so that
// loads coalesce: chunk j of thread t is elements (t + tpb * j) * V .. + V - 1 of its
// block. The B = 256 rotated path (rotated256.cuh) reuses the raw-chunk helpers with
// its own addressing.
#pragma once
#include <type_traits>

#include "codec/device/common.cuh"
#include "codec/tile_order.h"

namespace taco {
namespace dev {

template <typename T>
struct Vec {
  static constexpr int V = 16 / (int)sizeof(T);  // elements per 16-byte chunk
  static constexpr int NCH = kPerThread / V;     // chunks per thread
};

// This thread's part of a block as raw 16-byte chunks, for blocks wholly inside
// `count` with 16-byte aligned pointers (the fast path). (Loading a tile ahead into
// registers was measured slower: the extra registers cost a third of the occupancy;
// the tiles ahead are staged in shared memory instead, see stageRaw.)
template <typename T, int N = kPerThread>
struct RawChunks {
  uint4 c[N / Vec<T>::V];
};

__device__ __forceinline__ bool wholeBlock(const Args& a, size_t block) {
  return a.vec && block < a.nBlocks && (block + 1) * (size_t)a.k.B <= a.count;
}

template <typename T>
__device__ __forceinline__ void loadRaw(const T* x, size_t block, int t, const Args& a, RawChunks<T>& r) {
  constexpr int V = Vec<T>::V;
#pragma unroll
  for (int j = 0; j < Vec<T>::NCH; ++j)
    r.c[j] = __ldg(reinterpret_cast<const uint4*>(x + block * a.k.B + (size_t)(t + a.k.tpb * j) * V));
}

// Issues the copies of this thread's chunks of `block` into its staging slot
// (chunk j at slot[j * kThreads]), and reads them back once they have landed.
template <typename T>
__device__ __forceinline__ void stageRaw(const T* x, size_t block, int t, const Args& a, uint4* slot) {
  constexpr int V = Vec<T>::V;
#pragma unroll
  for (int j = 0; j < Vec<T>::NCH; ++j)
    cpAsync(slot + j * kThreads, x + block * a.k.B + (size_t)(t + a.k.tpb * j) * V, 16);
}
template <typename T>
__device__ __forceinline__ void readStaged(const uint4* slot, RawChunks<T>& r) {
#pragma unroll
  for (int j = 0; j < Vec<T>::NCH; ++j) r.c[j] = slot[j * kThreads];
}

// Raw 16-byte chunks to floats. bf16 is the top half of an fp32: one shift or mask
// per element (the generic path spends a byte permute and a shift on every odd element).
template <typename T, int N>
__device__ __forceinline__ void rawToFloat(const RawChunks<T, N>& r, float (&v)[N]) {
  constexpr int V = Vec<T>::V;
#pragma unroll
  for (int j = 0; j < N / V; ++j) {
    if constexpr (std::is_same<T, __nv_bfloat16>::value) {
      const uint32_t w[4] = {r.c[j].x, r.c[j].y, r.c[j].z, r.c[j].w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        v[j * 8 + 2 * i] = __uint_as_float(w[i] << 16);
        v[j * 8 + 2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
      }
    } else {
      const T* e = reinterpret_cast<const T*>(&r.c[j]);
#pragma unroll
      for (int i = 0; i < V; ++i) v[j * V + i] = toFloat<T>(e[i]);
    }
  }
}

// max|x| of the raw elements as the bits of |x| (for non-negative floats the
// integer order is the float order, and NaN / Inf bits sort above every finite
// value, so one integer max gives both the block max and the non-finite flag).
// Without masking the sign: the unsigned max of the raw words is the largest negative
// magnitude (with the sign bit) if there is a negative element, and the signed max the
// largest non-negative one if there is one (else, too, a negative magnitude with its
// sign bit), so max|x| is the larger of the two with the sign bits cleared.
// Three-input SIMD integer max: 0.5 (16-bit) or 1 (fp32) instruction per element.
template <typename T, int N>
__device__ __forceinline__ uint32_t rawAbsMaxBits(const RawChunks<T, N>& r) {
  uint32_t u = 0, s = sizeof(T) == 4 ? 0x80000000u : 0x80008000u;  // the smallest signed value
#pragma unroll
  for (int j = 0; j < N / Vec<T>::V; ++j) {
    const uint32_t w[4] = {r.c[j].x, r.c[j].y, r.c[j].z, r.c[j].w};
    if constexpr (sizeof(T) == 4) {
      u = __vimax3_u32(u, w[0], w[1]);
      u = __vimax3_u32(u, w[2], w[3]);
      s = (uint32_t)__vimax3_s32((int)s, (int)w[0], (int)w[1]);
      s = (uint32_t)__vimax3_s32((int)s, (int)w[2], (int)w[3]);
    } else {
      u = __vimax3_u16x2(u, w[0], w[1]);
      u = __vimax3_u16x2(u, w[2], w[3]);
      s = __vimax3_s16x2(s, w[0], w[1]);
      s = __vimax3_s16x2(s, w[2], w[3]);
    }
  }
  if constexpr (sizeof(T) == 4) return max(u & 0x7fffffffu, s & 0x7fffffffu);
  const uint32_t m = __vmaxu2(u & 0x7fff7fffu, s & 0x7fff7fffu);
  return max(m & 0xffffu, m >> 16);
}

// The block max (as a float) and the non-finite flag from the group's abs-max bits.
template <typename T>
__device__ __forceinline__ void absMaxFromBits(uint32_t m, float& m0, bool& bad);
template <>
__device__ __forceinline__ void absMaxFromBits<float>(uint32_t m, float& m0, bool& bad) {
  bad = m >= 0x7f800000u;
  m0 = __uint_as_float(m);
}
template <>
__device__ __forceinline__ void absMaxFromBits<__nv_bfloat16>(uint32_t m, float& m0, bool& bad) {
  bad = m >= 0x7f80u;
  m0 = __uint_as_float(m << 16);
}
template <>
__device__ __forceinline__ void absMaxFromBits<__half>(uint32_t m, float& m0, bool& bad) {
  bad = m >= 0x7c00u;
  m0 = __half2float(__ushort_as_half((unsigned short)m));
}

// Loads this thread's 32 elements of `block` (zeros past `count`).
template <typename T>
__device__ __forceinline__ void loadValues(const T* x, size_t block, int t, const Args& a, float (&v)[kPerThread]) {
  constexpr int V = Vec<T>::V;
  if (wholeBlock(a, block)) {  // the common case, without a per-chunk test
    RawChunks<T> r;
    loadRaw<T>(x, block, t, a, r);
    rawToFloat<T>(r, v);
    return;
  }
#pragma unroll
  for (int j = 0; j < Vec<T>::NCH; ++j) {
    const size_t idx = block * a.k.B + (size_t)(t + a.k.tpb * j) * V;
    if (a.vec && idx + V <= a.count) {
      uint4 raw = __ldg(reinterpret_cast<const uint4*>(x + idx));
      const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
      for (int i = 0; i < V; ++i) v[j * V + i] = toFloat<T>(e[i]);
    } else {
#pragma unroll
      for (int i = 0; i < V; ++i) v[j * V + i] = (idx + i < a.count) ? toFloat<T>(x[idx + i]) : 0.0f;
    }
  }
}

// v = op(v, e) for this thread's elements e of `block` of x (the exact input of an
// accumulate; e = 0 past `count`), one chunk at a time so that only a chunk's registers are
// live beside v.
template <typename T, typename Op>
__device__ __forceinline__ void combineValues(const T* x, size_t block, int t, const Args& a, float (&v)[kPerThread],
                                              Op op) {
  constexpr int V = Vec<T>::V;
  const bool whole = wholeBlock(a, block);
#pragma unroll
  for (int j = 0; j < Vec<T>::NCH; ++j) {
    const size_t idx = block * a.k.B + (size_t)(t + a.k.tpb * j) * V;
    if (whole) {
      const uint4 raw = __ldg(reinterpret_cast<const uint4*>(x + idx));
      const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
      for (int i = 0; i < V; ++i) v[j * V + i] = op(v[j * V + i], toFloat<T>(e[i]));
    } else {
#pragma unroll
      for (int i = 0; i < V; ++i)
        v[j * V + i] = op(v[j * V + i], (idx + i < a.count) ? toFloat<T>(x[idx + i]) : 0.0f);
    }
  }
}

// v += this thread's elements of `block` of x.
template <typename T>
__device__ __forceinline__ void addValues(const T* x, size_t block, int t, const Args& a, float (&v)[kPerThread]) {
  combineValues<T>(x, block, t, a, v, [](float u, float e) { return u + e; });
}

// 16 bytes of T from v[j*V .. j*V+V); 16-bit types two at a time (one
// conversion instruction per pair, the same rounding as one at a time).
template <typename T>
__device__ __forceinline__ void packChunk(const float (&v)[kPerThread], int j, uint4& raw) {
  constexpr int V = Vec<T>::V;
  T* e = reinterpret_cast<T*>(&raw);
#pragma unroll
  for (int i = 0; i < V; ++i) e[i] = fromFloat<T>(v[j * V + i]);
}
template <>
__device__ __forceinline__ void packChunk<__nv_bfloat16>(const float (&v)[kPerThread], int j, uint4& raw) {
  __nv_bfloat162* e = reinterpret_cast<__nv_bfloat162*>(&raw);
#pragma unroll
  for (int i = 0; i < 4; ++i) e[i] = __floats2bfloat162_rn(v[j * 8 + 2 * i], v[j * 8 + 2 * i + 1]);
}
template <>
__device__ __forceinline__ void packChunk<__half>(const float (&v)[kPerThread], int j, uint4& raw) {
  __half2* e = reinterpret_cast<__half2*>(&raw);
#pragma unroll
  for (int i = 0; i < 4; ++i) e[i] = __floats2half2_rn(v[j * 8 + 2 * i], v[j * 8 + 2 * i + 1]);
}

// WHOLE: the caller knows the block is whole and aligned (wholeBlock), and the test goes.
template <typename T, bool WHOLE = false>
__device__ __forceinline__ void storeValues(T* y, size_t block, int t, const Args& a, const float (&v)[kPerThread]) {
  constexpr int V = Vec<T>::V;
  if (WHOLE || wholeBlock(a, block)) {  // the common case, without a per-chunk test
#pragma unroll
    for (int j = 0; j < Vec<T>::NCH; ++j) {
      uint4 raw;
      packChunk<T>(v, j, raw);
      *reinterpret_cast<uint4*>(y + block * a.k.B + (size_t)(t + a.k.tpb * j) * V) = raw;
    }
    return;
  }
  if constexpr (!WHOLE) {
#pragma unroll
    for (int j = 0; j < Vec<T>::NCH; ++j) {
      const size_t idx = block * a.k.B + (size_t)(t + a.k.tpb * j) * V;
      if (a.vec && idx + V <= a.count) {
        uint4 raw;
        packChunk<T>(v, j, raw);
        *reinterpret_cast<uint4*>(y + idx) = raw;
      } else {
#pragma unroll
        for (int i = 0; i < V; ++i)
          if (idx + i < a.count) y[idx + i] = fromFloat<T>(v[j * V + i]);
      }
    }
  }
}

// A tile of a block per lane (B = kPerThread, tpb 1: INT4's default) is its 32 blocks end to end.
// storeTileInOrder stores it in order, 16 bytes a lane: store j of lane i is unit u = 32 j + i of
// the tile, 512 consecutive bytes a store across the warp, where a lane that stores its own block
// writes 16 bytes every 64 (bf16) or 128 (fp32). The values go through shared memory, in rows of
// ROW 16-byte entries (the warp's lane 0 at warpSlot), laid out by codec/tile_order.h: no bank
// conflicts on either side. The rows must be free: no lane still reads them, no copy into them is
// pending. (The sums' outputs take it, block_sum.cuh. Loading a tile in order the same way,
// compress's input and the reduce's exact input, was measured slower: docs/results.md.)
template <typename T, int ROW>
__device__ __forceinline__ void storeTileInOrder(T* y, size_t tile, uint4* warpSlot, int lane,
                                                 const float (&v)[kPerThread]) {
  constexpr int V = Vec<T>::V, NCH = Vec<T>::NCH;
  __syncwarp();  // every lane is done with the rows
#pragma unroll
  for (int j = 0; j < NCH; ++j) {
    uint4 raw;
    packChunk<T>(v, j, raw);
    warpSlot[j * ROW + tileColumn(lane, j, NCH)] = raw;
  }
  __syncwarp();
  T* dst = y + tile * (32 * kPerThread);
#pragma unroll
  for (int j = 0; j < NCH; ++j) {
    const int u = 32 * j + lane, c = u % NCH, o = u / NCH;
    *reinterpret_cast<uint4*>(dst + (size_t)u * V) = warpSlot[c * ROW + tileColumn(o, c, NCH)];
  }
}

// INT6 codes of a chunk: V = 4 or 8 codes packed in 3V/4 bytes (packInt6, docs/format.md),
// whole 24-bit words, so chunks of different threads share no byte. With aligned
// pointers a V = 8 chunk is 2-byte aligned (a block's codes start at a multiple of
// 3B/4 = 24k bytes, a chunk's at a multiple of 6 after that): three 16-bit accesses;
// byte accesses otherwise.
template <int V, bool VEC>
__device__ __forceinline__ void loadInt6Chunk(const uint8_t* p, uint8_t (&c)[V]) {
  if constexpr (V == 8 && VEC) {
    const uint16_t* h = reinterpret_cast<const uint16_t*>(p);
    const uint32_t h0 = __ldg(h), h1 = __ldg(h + 1), h2 = __ldg(h + 2);
    unpackInt6(h0 | (h1 << 16), c);  // unpackInt6 reads bits 0..23 only
    unpackInt6((h1 >> 8) | (h2 << 8), c + 4);
  } else {
#pragma unroll
    for (int k = 0; k < V / 4; ++k)
      unpackInt6((uint32_t)p[3 * k] | ((uint32_t)p[3 * k + 1] << 8) | ((uint32_t)p[3 * k + 2] << 16), c + 4 * k);
  }
}
template <int V>
__device__ __forceinline__ void storeInt6Chunk(uint8_t* p, const uint8_t (&c)[V], bool aligned) {
  uint32_t w[V / 4];
#pragma unroll
  for (int k = 0; k < V / 4; ++k) w[k] = packInt6(c + 4 * k);
  if constexpr (V == 8) {
    if (aligned) {
      uint16_t* h = reinterpret_cast<uint16_t*>(p);
      h[0] = (uint16_t)w[0];
      h[1] = (uint16_t)((w[0] >> 16) | (w[1] << 8));
      h[2] = (uint16_t)(w[1] >> 8);
      return;
    }
  }
#pragma unroll
  for (int k = 0; k < V / 4; ++k) {
    p[3 * k] = (uint8_t)w[k];
    p[3 * k + 1] = (uint8_t)(w[k] >> 8);
    p[3 * k + 2] = (uint8_t)(w[k] >> 16);
  }
}

// INT6 words for the B = 256 rotated kernels (device/rotated256.cuh), whose lanes hold
// runs of 16 or 32 consecutive codes: int6Word packs the four code bytes of one
// encodeWord (c0 in the low byte) as packInt6's 24-bit word; packInt6Quad puts four such
// words, 16 codes, into the 12 wire bytes o[0..2] (little-endian). (The 16-bit compress
// encodes and packs its runs in one step, block_math.h's encodeInt6Run, and the
// decompress decodes them in one, decodeInt6Run.)
__device__ __forceinline__ uint32_t int6Word(uint32_t codes) {
  uint8_t c[4];
  memcpy(c, &codes, 4);
  return packInt6(c);
}
__device__ __forceinline__ void packInt6Quad(const uint32_t* w, uint32_t* o) {
  o[0] = w[0] | (w[1] << 24);
  o[1] = (w[1] >> 8) | (w[2] << 16);
  o[2] = (w[2] >> 16) | (w[3] << 8);
}

// Codes of chunk j: V bytes (3V/4 for INT6) at a V-aligned element offset. VEC: every pointer
// is 16-byte aligned (a.vec), a compile-time choice so that the byte loads of the unaligned
// path are not issued, predicated off, beside the vector load. (INT4: loadInt4Word.)
template <int V, int FMT, bool VEC>
__device__ __forceinline__ void loadCodes(const uint8_t* codes, size_t block, int t, const Args& a, int j,
                                          uint8_t (&c)[V]) {
  static_assert(FMT != kFmtInt4, "INT4's codes load as words (loadInt4Word)");
  const size_t e0 = block * a.k.B + (size_t)(t + a.k.tpb * j) * V;
  if constexpr (FMT == kFmtInt6) {
    loadInt6Chunk<V, VEC>(codes + e0 / 4 * 3, c);
    return;
  }
  const uint8_t* p = codes + e0;
  if (VEC) {
    if (V == 8) {
      uint2 w = __ldg(reinterpret_cast<const uint2*>(p));
      memcpy(c, &w, 8);
    } else {
      uint32_t w = __ldg(reinterpret_cast<const uint32_t*>(p));
      memcpy(c, &w, 4);
    }
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) c[i] = p[i];
  }
}

// VEC: the caller knows a.vec holds.
template <int V, int FMT, bool VEC = false>
__device__ __forceinline__ void storeCodes(uint8_t* codes, size_t block, int t, const Args& a, int j,
                                           const uint8_t (&c)[V]) {
  static_assert(FMT != kFmtInt4, "INT4's codes store as words (storeInt4Word)");
  const size_t e0 = block * a.k.B + (size_t)(t + a.k.tpb * j) * V;
  if constexpr (FMT == kFmtInt6) {
    storeInt6Chunk<V>(codes + e0 / 4 * 3, c, VEC || a.vec);
    return;
  }
  uint8_t* p = codes + e0;
  if (VEC || a.vec) {
    if (V == 8) {
      uint2 w;
      memcpy(&w, c, 8);
      *reinterpret_cast<uint2*>(p) = w;
    } else {
      uint32_t w;
      memcpy(&w, c, 4);
      *reinterpret_cast<uint32_t*>(p) = w;
    }
  } else {
#pragma unroll
    for (int i = 0; i < V; ++i) p[i] = c[i];
  }
}

// INT4's codes of chunk j: its V nibbles, V / 2 bytes at a V / 2-aligned byte offset, as one
// word (byte i in bits 8i..8i+7; block_math.h's decodeInt4Word and encodeInt4Word take it).
// With VEC (loads: at compile time; stores: or a.vec) one 4- or 2-byte access, not V / 2.
template <int V, bool VEC>
__device__ __forceinline__ uint32_t loadInt4Word(const uint8_t* codes, size_t block, int t, const Args& a, int j) {
  const uint8_t* p = codes + (block * a.k.B + (size_t)(t + a.k.tpb * j) * V) / 2;
  if (VEC) {
    if (V == 8) return __ldg(reinterpret_cast<const uint32_t*>(p));
    return __ldg(reinterpret_cast<const unsigned short*>(p));
  }
  uint32_t w = 0;
#pragma unroll
  for (int i = 0; i < V / 2; ++i) w |= (uint32_t)p[i] << (8 * i);
  return w;
}
template <int V, bool VEC = false>
__device__ __forceinline__ void storeInt4Word(uint8_t* codes, size_t block, int t, const Args& a, int j, uint32_t w) {
  uint8_t* p = codes + (block * a.k.B + (size_t)(t + a.k.tpb * j) * V) / 2;
  if (VEC || a.vec) {
    if (V == 8) *reinterpret_cast<uint32_t*>(p) = w;
    else *reinterpret_cast<unsigned short*>(p) = (unsigned short)w;
  } else {
#pragma unroll
    for (int i = 0; i < V / 2; ++i) p[i] = (uint8_t)(w >> (8 * i));
  }
}

__device__ __forceinline__ bool headerOk(const uint8_t* w, const Args& a) {
  const uint32_t* h = reinterpret_cast<const uint32_t*>(w);
  const uint32_t w1 = h[1];
  const uint64_t cnt = (uint64_t)h[2] | ((uint64_t)h[3] << 32);
  // The dtype byte names a tacoDataType_t (as the host twin checks); raw payloads are typed.
  const bool dtypeOk = (w1 >> 24) < (uint32_t)tacoNumDataTypes && (a.k.fmt != kFmtRaw || (w1 >> 24) == a.dtype);
  return h[0] == kWireMagic && (w1 & 0xff) == a.k.id && ((w1 >> 8) & 0xff) == a.k.version &&
         ((w1 >> 16) & 0xff) == (uint32_t)a.k.log2B && cnt == a.count && dtypeOk;
}

// Every compressed input's header matches `a` (all of them read: no early exit).
__device__ __forceinline__ bool inputHeadersOk(const Args& a) {
  bool ok = true;
  for (int q = 0; q < a.in.n; ++q) ok &= headerOk(static_cast<const uint8_t*>(a.in.ptr[q]), a);
  return ok;
}

__device__ __forceinline__ void writeHeader(uint8_t* w, const Args& a) {
  uint32_t* h = reinterpret_cast<uint32_t*>(w);
  h[0] = kWireMagic;
  h[1] = (uint32_t)a.k.id | ((uint32_t)a.k.version << 8) | ((uint32_t)a.k.log2B << 16) |
         ((uint32_t)a.dtype << 24);
  h[2] = (uint32_t)(a.count & 0xffffffffu);
  h[3] = (uint32_t)(a.count >> 32);
  for (size_t i = a.codesEnd; i < a.scalesOffset; ++i) w[i] = 0;  // padding is zero (< 16 bytes each)
  for (size_t i = a.scalesEnd; i < a.totalBytes; ++i) w[i] = 0;
}

}  // namespace dev
}  // namespace taco

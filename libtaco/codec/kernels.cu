// The fused codec kernels. One kernel per (mode, dtype, code format); the rest of
// the codec (rotation, adaptive scale, block size) is a runtime parameter, uniform
// across the grid, so the build stays small. One exception, for the default
// configuration: compress and plain decompress of the rotated codecs at B = 256
// have a kernel of their own with a different thread mapping (rotated256Kernel,
// namespace r256 below: the FWHT's cross-lane strides through shared-memory
// transpositions instead of shuffles; 16-bit compress with four lanes per block,
// namespace r256::quad, the rest with eight).
//
// Thread mapping for block codecs: a block of B elements is held by B/32
// consecutive lanes ("a group"), 32 elements per thread, in 16-byte chunks
// interleaved across the group so that loads coalesce: thread t holds chunks
// t, t + tpb, t + 2*tpb, ... of its block. The math (block_math.h) is
// independent of this mapping, which is what keeps GPU, CPU and numpy equal.
//
// Memory traffic per element (the kernels' only global accesses): compress
// reads the input once and writes 1 byte (+ 4 or 8 bytes of scales per block);
// decompress-accumulate reads k codes and the optional exact input and writes
// the output once; decompress-reduce-compress does both in one pass.
//
// Compress and plain decompress are software-pipelined: each thread copies its
// chunks of the tiles ahead into shared memory with cp.async while it computes the
// current tile, so DRAM reads stay in flight during the (issue-bound) block math.
#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>
#include <set>
#include <type_traits>
#include <utility>

#include "codec/block_math.h"
#include "codec/codec.h"

namespace taco {
namespace {

using namespace blockmath;

constexpr int kPerThread = 32;  // elements per thread; B = kPerThread * threads per block
constexpr int kThreads = 256;   // threads per CTA

enum Mode { kCompress = 0, kAccumulate = 1, kReduceCompress = 2 };

struct KernelCodec {
  CodeFormat fmt;
  int rotate, adaptive;
  int B, log2B, tpb;   // tpb: threads per block (B / 32)
  float c;             // 1/sqrt(B) with rotation, else 1
  uint8_t id, version;
};

struct Args {
  KernelCodec k;
  size_t count, nBlocks, scalesOffset;
  size_t codesEnd, scalesEnd, totalBytes;  // wire padding [codesEnd, scalesOffset) and [scalesEnd, totalBytes)
  const void* x;    // compress: input; accumulate / reduce-compress: exact input (may be null)
  void* y;          // accumulate: output; reduce-compress: optional decompressed output
  uint8_t* out;     // compress / reduce-compress: compressed output
  AccumInputs in;   // compressed inputs
  int vec;          // every pointer is 16-byte aligned
  int streamOut;    // the decompressed output is larger than L2: store it evict-first
  uint8_t dtype;
};

__device__ __forceinline__ bool groupAny(bool p, int tpb) {
  int v = p;
  for (int o = 1; o < tpb; o <<= 1) v |= __shfl_xor_sync(0xffffffffu, v, o);
  return v != 0;
}
__device__ __forceinline__ float groupMax(float v, int tpb) {
  for (int o = 1; o < tpb; o <<= 1) v = fmax2(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ uint32_t groupSum(uint32_t v, int tpb) {
  for (int o = 1; o < tpb; o <<= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// ---- Asynchronous global -> shared copies (cp.async, sm_80+): every thread stages
// the chunks of the tile after next while it computes this one, so loads stay in
// flight without holding registers (a register prefetch cost a third of the
// occupancy). Each thread reads back only what it copied itself: no barrier.
__device__ __forceinline__ void cpAsync(void* smem, const void* gmem, int bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const uint32_t s = (uint32_t)__cvta_generic_to_shared(smem);
  if (bytes == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
  else if (bytes == 8)
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(s), "l"(gmem));
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(s), "l"(gmem));
#else
  memcpy(smem, gmem, bytes);
#endif
}
__device__ __forceinline__ void cpAsyncCommit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
template <int N>
__device__ __forceinline__ void cpAsyncWait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

// Walsh-Hadamard butterflies in ascending stride: the chunk bits (in registers),
// the thread bits (shuffles), then the chunk-index bits (in registers).
template <int V>
__device__ __forceinline__ void fwht(float (&v)[kPerThread], int t, int tpb) {
#pragma unroll
  for (int h = 1; h < V; h <<= 1)
#pragma unroll
    for (int r = 0; r < kPerThread; ++r)
      if (!(r & h)) {
        float a = v[r], b = v[r + h];
        v[r] = a + b;
        v[r + h] = a - b;
      }
  for (int o = 1; o < tpb; o <<= 1) {
    // lower lane: a + b; upper lane: a - b, as other + sign * own in one exact-sign FMA
    // (sign * own is exact, so the FMA rounds once, like the plain add/sub).
    const float sign = (t & o) ? -1.0f : 1.0f;
#pragma unroll
    for (int r = 0; r < kPerThread; ++r) {
      float other = __shfl_xor_sync(0xffffffffu, v[r], o);
      v[r] = __fmaf_rn(sign, v[r], other);
    }
  }
#pragma unroll
  for (int h = V; h < kPerThread; h <<= 1)
#pragma unroll
    for (int r = 0; r < kPerThread; ++r)
      if (!(r & h)) {
        float a = v[r], b = v[r + h];
        v[r] = a + b;
        v[r + h] = a - b;
      }
}

template <typename T>
struct Vec {
  static constexpr int V = 16 / (int)sizeof(T);  // elements per 16-byte chunk
  static constexpr int NCH = kPerThread / V;     // chunks per thread
};

// Pipeline depth (tiles in flight per warp) and shared-memory slots of the staged
// paths: a compress slot holds a tile's input (16 KB per CTA for 16-bit types, 32 KB
// for fp32), a decompress slot its codes and scales (10 KB).
template <typename T>
struct Stage {
  static constexpr int kCompressDepth = sizeof(T) == 4 ? 2 : 3;
  static constexpr int kDecompressDepth = 3;
  static constexpr int kCompressSlot = Vec<T>::NCH * kThreads * 16;
  static constexpr int kCodesBytes = Vec<T>::NCH * kThreads * Vec<T>::V;  // one byte per element
  static constexpr int kDecompressSlot = kCodesBytes + kThreads * 8;      // + alpha and s per thread
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

__device__ __forceinline__ uint32_t groupMaxU(uint32_t v, int tpb) {
  for (int o = 1; o < tpb; o <<= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
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

// v += this thread's elements of `block` of x (the exact input of an accumulate), one
// chunk at a time so that only a chunk's registers are live beside v.
template <typename T>
__device__ __forceinline__ void addValues(const T* x, size_t block, int t, const Args& a, float (&v)[kPerThread]) {
  constexpr int V = Vec<T>::V;
  const bool whole = wholeBlock(a, block);
#pragma unroll
  for (int j = 0; j < Vec<T>::NCH; ++j) {
    const size_t idx = block * a.k.B + (size_t)(t + a.k.tpb * j) * V;
    if (whole) {
      const uint4 raw = __ldg(reinterpret_cast<const uint4*>(x + idx));
      const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
      for (int i = 0; i < V; ++i) v[j * V + i] = v[j * V + i] + toFloat<T>(e[i]);
    } else {
#pragma unroll
      for (int i = 0; i < V; ++i)
        v[j * V + i] = v[j * V + i] + ((idx + i < a.count) ? toFloat<T>(x[idx + i]) : 0.0f);
    }
  }
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

template <typename T>
__device__ __forceinline__ void storeValues(T* y, size_t block, int t, const Args& a, const float (&v)[kPerThread]) {
  constexpr int V = Vec<T>::V;
  if (wholeBlock(a, block)) {  // the common case, without a per-chunk test
#pragma unroll
    for (int j = 0; j < Vec<T>::NCH; ++j) {
      uint4 raw;
      packChunk<T>(v, j, raw);
      *reinterpret_cast<uint4*>(y + block * a.k.B + (size_t)(t + a.k.tpb * j) * V) = raw;
    }
    return;
  }
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

// Codes of chunk j: V bytes (or V/2 for 4-bit formats) at a V-aligned offset. VEC:
// every pointer is 16-byte aligned (a.vec), a compile-time choice so that the byte
// loads of the unaligned path are not issued, predicated off, beside the vector load.
template <int V, int FMT, bool VEC>
__device__ __forceinline__ void loadCodes(const uint8_t* codes, size_t block, int t, const Args& a, int j,
                                          uint8_t (&c)[V]) {
  constexpr bool nib = FMT == kFmtInt4;
  const size_t e0 = block * a.k.B + (size_t)(t + a.k.tpb * j) * V;
  const uint8_t* p = codes + (nib ? e0 / 2 : e0);
  if (!nib) {
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
  } else {
#pragma unroll
    for (int i = 0; i < V / 2; ++i) {
      uint8_t b = p[i];
      c[2 * i] = b & 0xf;
      c[2 * i + 1] = b >> 4;
    }
  }
}

template <int V, int FMT>
__device__ __forceinline__ void storeCodes(uint8_t* codes, size_t block, int t, const Args& a, int j,
                                           const uint8_t (&c)[V]) {
  constexpr bool nib = FMT == kFmtInt4;
  const size_t e0 = block * a.k.B + (size_t)(t + a.k.tpb * j) * V;
  uint8_t* p = codes + (nib ? e0 / 2 : e0);
  if (!nib) {
    if (a.vec) {
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
  } else {
#pragma unroll
    for (int i = 0; i < V / 2; ++i) p[i] = (uint8_t)((c[2 * i] & 0xf) | (c[2 * i + 1] << 4));
  }
}

__device__ __forceinline__ bool headerOk(const uint8_t* w, const Args& a) {
  const uint32_t* h = reinterpret_cast<const uint32_t*>(w);
  const uint32_t w1 = h[1];
  const uint64_t cnt = (uint64_t)h[2] | ((uint64_t)h[3] << 32);
  const bool dtypeOk = a.k.fmt != kFmtRaw || (w1 >> 24) == a.dtype;  // raw payloads are typed
  return h[0] == kWireMagic && (w1 & 0xff) == a.k.id && ((w1 >> 8) & 0xff) == a.k.version &&
         ((w1 >> 16) & 0xff) == (uint32_t)a.k.log2B && cnt == a.count && dtypeOk;
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

template <typename T, int FMT, bool FIRST>
__device__ __forceinline__ void accumulateInput(const Args& a, int q, size_t block, int t, bool active,
                                                float (&v)[kPerThread]) {
  constexpr int V = Vec<T>::V;
  const uint8_t* w = static_cast<const uint8_t*>(a.in.ptr[q]);
  float d = 0.0f;
  if (active) {
    const float* sc = reinterpret_cast<const float*>(w + a.scalesOffset);
    d = a.k.adaptive ? decodeScale(sc[2 * block + 1], sc[2 * block], a.k.c) : decodeScale(sc[block], 1.0f, a.k.c);
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
// the rotation.
template <typename T, int FMT>
__device__ __forceinline__ void accumulateTile(const Args& a, size_t block, int t, bool active,
                                               float (&v)[kPerThread]) {
  if (a.in.n == 0) {
#pragma unroll
    for (int r = 0; r < kPerThread; ++r) v[r] = 0.0f;
  } else {
    accumulateInput<T, FMT, true>(a, 0, block, t, active, v);
    for (int q = 1; q < a.in.n; ++q) accumulateInput<T, FMT, false>(a, q, block, t, active, v);
  }
  if (a.k.rotate) fwht<Vec<T>::V>(v, t, a.k.tpb);
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
// it) and the tiny-block lift, both applied to v. m0 = max|x| of the block, bad = it
// holds NaN/Inf; tpb: lanes per block.
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
  lift = tinyLift(bad ? 1.0f : m0, a.k.adaptive);
  if (lift != 1.0f)
#pragma unroll
    for (int r = 0; r < N; ++r) v[r] *= lift;
  return alpha;
}

// After it: the quantisation scales from m = max|Z'|; a bad block gets NaN scales, and
// inv = NaN makes every code the format's NaN code (the FP8 conversion writes 0x7f for
// NaN, the integer one 0 = formatNaNCode).
template <int FMT>
__device__ __forceinline__ QuantScales blockScales(const Args& a, float m, float lift, bool bad, float& alpha) {
  QuantScales qs = quantScales(m, a.k.c, (CodeFormat)FMT);
  if (lift != 1.0f) qs.s = qs.s / lift;  // x / 1 == x: skip the division (and its slow path) in the common case
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
// block, bad = it holds NaN/Inf.
template <typename T, int FMT, int MODE>
__device__ __forceinline__ void compressTile(const Args& a, size_t block, int t, bool active,
                                             float (&v)[kPerThread], float m0, bool bad, uint8_t* outWire,
                                             float (&dOut)) {
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
  dOut = decodeScale(qs.s, alpha, a.k.c);
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
  if (active && t == 0) storeScales(a, outWire, block, alpha, qs.s);
}

// Compress of one tile: from the staged 16-byte chunks when the whole warp's blocks
// are full and aligned (a warp-uniform test: the group reductions shuffle across the
// warp), else through the general load.
template <typename T, int FMT>
__device__ __forceinline__ void compressBlockTile(const Args& a, size_t block, int t, const uint4* staged) {
  const bool active = block < a.nBlocks;
  float v[kPerThread];
  float m0, d;
  bool bad;
  if (staged != nullptr) {  // warp-uniform: the tile was staged by compressTiles
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
  compressTile<T, FMT, kCompress>(a, block, t, active, v, m0, bad, a.out, d);
}

// Plain decompress (one input, no exact input, byte codes, aligned pointers), with
// the same software pipeline as compress: each thread stages its codes and its
// block's scales for the tile D - 1 ahead while it decodes this one.
template <typename T, int FMT>
__device__ __forceinline__ void decompressTiles(const Args& a, size_t warp, size_t nWarps, size_t nTiles,
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
      const float d = a.k.adaptive ? decodeScale(sp.y, sp.x, a.k.c) : decodeScale(sp.x, 1.0f, a.k.c);
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

// ---- B = 256 with rotation (taco's default, and int8-hadamard's): a faster layout.
// The general mapping does the FWHT's three lane-bit strides with 3 x 32 shuffles
// and as many FMAs per thread, over half of the rotated kernels' instructions. Here
// thread t of a block's 8 lanes first holds positions 32t .. 32t+31 (strides 1..16 in
// registers); one transposition through shared memory (8 + 8 vector accesses) then
// gives it positions 32a + 4t + b (a < 8, b < 4) in v[4a + b], for strides 32, 64 and
// 128 as register strides 4, 8 and 16. The butterfly order, so the rounding, is the
// same as everywhere else. A warp's tile is 4 blocks (1024 elements).
//
// Shared memory: every access is conflict-free, and cheap to address (per-tile address
// arithmetic was a tenth of the instructions). cp.async wants each 128-byte line of
// global memory to land in one 128-byte row of shared memory (a line spread over two
// rows cost up to 8x the wavefronts, measured), so staged chunk c of a block sits in
// row c >> 3 of the block's region, at column (c & 7) ^ (c / NCH & 7): one XOR with a
// per-thread base per read. The transposition, plain stores and loads, uses a padded
// layout instead: unit (row r, column q) at 9r + q, a per-thread base plus constants.
namespace r256 {

constexpr int kLanes = 8;                 // lanes per block
constexpr int kWarps = kThreads / 32;
constexpr int kXposeGroup = 72;           // 16-byte units of a block's transposition buffer (8 rows of 9)
constexpr int kCompressDepth = 2;         // tiles in flight per warp (compress)
constexpr int kDecompressDepth = 3;       // (decompress)
constexpr int kCodesGroup = 16;           // a block's codes, in 16-byte units
// a decompress slot: every warp's codes (row-aligned), then (alpha, s) per block
constexpr int kDecompressSlot = kWarps * 4 * kCodesGroup + kWarps * 4 * 8 / 16;

// fp32 compress: a slot holds each block's 64 staged units padded to 72, the
// transposition buffer it shares (a block transposes in the slot it has just read).
// (16-bit inputs have a compress of their own, namespace quad.)
constexpr int kCompressSlotUnits = kWarps * 4 * kXposeGroup;
constexpr int kCompressUnits = kCompressDepth * kCompressSlotUnits;
constexpr int kDecompressUnits = kDecompressDepth * kDecompressSlot + kWarps * 4 * kXposeGroup;

// Butterflies in registers on strides H0, 2 H0, ..., H1 of the register index.
template <int H0, int H1, int N>
__device__ __forceinline__ void butterflies(float (&v)[N]) {
#pragma unroll
  for (int h = H0; h <= H1; h <<= 1)
#pragma unroll
    for (int r = 0; r < N; ++r)
      if (!(r & h)) {
        const float x = v[r], y = v[r + h];
        v[r] = x + y;
        v[r + h] = x - y;
      }
}

// The whole FWHT of a block held as positions 32t + r; leaves positions 32a + 4t + b
// in v[4a + b]. row = buf + 9t, col = buf + t (this lane's bases in the block's buffer).
__device__ __forceinline__ void fwht(float (&v)[kPerThread], float4* row, const float4* col) {
  butterflies<1, 16>(v);
  __syncwarp();  // the buffer's previous readers are done
#pragma unroll
  for (int q = 0; q < 8; ++q) row[q] = make_float4(v[4 * q], v[4 * q + 1], v[4 * q + 2], v[4 * q + 3]);
  __syncwarp();
#pragma unroll
  for (int a = 0; a < 8; ++a) {
    const float4 f = col[9 * a];
    v[4 * a] = f.x;
    v[4 * a + 1] = f.y;
    v[4 * a + 2] = f.z;
    v[4 * a + 3] = f.w;
  }
  butterflies<4, 16>(v);
}

// Four output elements (16-bit types: two conversions of a pair each). fp32 outputs
// larger than L2 are stored evict-first (.cs): measured 2 % faster for the plain
// decompress, the most write-heavy kernel (4 bytes out per byte in).
template <typename T>
__device__ __forceinline__ void store4(T* p, const float* v, int streamOut) {
  if constexpr (std::is_same<T, float>::value) {
    if (streamOut) __stcs(reinterpret_cast<float4*>(p), make_float4(v[0], v[1], v[2], v[3]));
    else *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
  } else if constexpr (std::is_same<T, __nv_bfloat16>::value) {
    const __nv_bfloat162 lo = __floats2bfloat162_rn(v[0], v[1]), hi = __floats2bfloat162_rn(v[2], v[3]);
    uint2 w;
    memcpy(&w.x, &lo, 4);
    memcpy(&w.y, &hi, 4);
    *reinterpret_cast<uint2*>(p) = w;
  } else {
    const __half2 lo = __floats2half2_rn(v[0], v[1]), hi = __floats2half2_rn(v[2], v[3]);
    uint2 w;
    memcpy(&w.x, &lo, 4);
    memcpy(&w.y, &hi, 4);
    *reinterpret_cast<uint2*>(p) = w;
  }
}

// A staged block read back and prescaled, for compress: this lane's chunk k is at byte
// offset in ^ 16k of the staging area; LANES lanes hold the block. Returns alpha; bad
// and lift as prescale's.
template <typename T, int LANES, int N>
__device__ __forceinline__ float readStagedPrescaled(const Args& a, const char* area, uint32_t in, float (&v)[N],
                                                     bool& bad, float& lift) {
  RawChunks<T, N> raw;
#pragma unroll
  for (int k = 0; k < N / Vec<T>::V; ++k) raw.c[k] = *reinterpret_cast<const uint4*>(area + (in ^ (16u * k)));
  rawToFloat<T>(raw, v);
  float m0;
  absMaxFromBits<T>(groupMaxU(rawAbsMaxBits<T>(raw), LANES), m0, bad);
  return prescale(a, v, m0, bad, LANES, lift);
}

// Compress of one staged fp32 block (eight lanes); row / col are this lane's
// transposition bases.
template <typename T, int FMT>
__device__ __forceinline__ void compressBlock(const Args& a, size_t block, int t, const char* area, uint32_t in,
                                              float4* row, const float4* col) {
  float v[kPerThread];
  bool bad;
  float lift;
  float alpha = readStagedPrescaled<T, kLanes>(a, area, in, v, bad, lift);
  fwht(v, row, col);
  float m = 0.0f;
#pragma unroll
  for (int r = 0; r < kPerThread; ++r) m = fmaxf(m, fabsf(v[r]));  // no NaN in a good block
  m = groupMax(m, kLanes);
  const QuantScales qs = blockScales<FMT>(a, m, lift, bad, alpha);
  uint8_t* codes = a.out + TACO_HEADER_BYTES + block * 256 + 4 * t;
#pragma unroll
  for (int q = 0; q < 8; ++q) *reinterpret_cast<uint32_t*>(codes + 32 * q) = encodeWord<FMT>(&v[4 * q], qs.inv);
  if (t == 0) storeScales(a, a.out, block, alpha, qs.s);
}

// The fp32 compress loop: this warp's tiles, the next one copied in (cp.async) while
// this one is compressed; tiles not wholly inside `count` take the general path.
template <typename T, int FMT>
__device__ __forceinline__ void compressTiles(const Args& a, size_t warp, size_t nWarps, size_t nTiles, int g,
                                              int t) {
  static_assert(sizeof(T) == 4, "16-bit inputs take quad::compressTiles");
  constexpr int V = Vec<T>::V, NCH = Vec<T>::NCH;
  extern __shared__ uint4 stagingArea[];
  uint4* group = stagingArea + ((threadIdx.x >> 5) * 4 + g) * kXposeGroup;  // this block's region in slot 0
  // chunk c at unit (c & ~7) | ((c & 7) ^ (c / NCH & 7)): lane t reads chunks NCH t + k
  // at (NCH t ^ t) ^ k (k does not reach the bits of NCH t), writes chunks t + 8j.
  const uint32_t readOffset = (uint32_t)((group - stagingArea) + ((NCH * t) ^ t)) * 16u;
  const size_t nFull = a.count / 1024;  // tiles wholly inside count
  const size_t step = nWarps * 1024;    // elements from one of this warp's tiles to its next
  const T* next = static_cast<const T*>(a.x) + (warp * 4 + g) * 256 + t * V;  // this lane's first chunk of tile `warp`
  auto stage = [&](int slot) {  // the tile at `next`: lane t copies chunks t + 8j
    uint4* dst = group + slot * kCompressSlotUnits;
#pragma unroll
    for (int j = 0; j < NCH; ++j) cpAsync(dst + 8 * j + (t ^ ((t + 8 * j) / NCH & 7)), next + 8 * j * V, 16);
  };
  if (warp < nFull) stage(0);
  cpAsyncCommit();
  int s = 0;
  for (size_t tile = warp; tile < nTiles; tile += nWarps) {
    __syncwarp();  // every lane is done with the slot about to be refilled
    next += step;
    if (tile + nWarps < nFull) stage(s ^ 1);
    cpAsyncCommit();
    const size_t block = tile * 4 + g;
    if (tile < nFull) {
      cpAsyncWait<1>();
      __syncwarp();  // the other lanes' copies have landed too
      float4* buf = reinterpret_cast<float4*>(group + s * kCompressSlotUnits);
      compressBlock<T, FMT>(a, block, t, reinterpret_cast<const char*>(stagingArea),
                            readOffset + (uint32_t)(s * kCompressSlotUnits * 16), buf + 9 * t, buf + t);
    } else {
      compressBlockTile<T, FMT>(a, block, t, nullptr);
    }
    s ^= 1;
  }
  cpAsyncWait<0>();
}

// ---- Compress of 16-bit inputs: four lanes per block, 64 elements per lane. Per
// element, a 16-bit input costs half the DRAM time of fp32, so this path is bound by
// instruction issue, and a tenth of its instructions were per-block scalar work (the
// group reductions, alpha in fp64, the two scales) that every lane of a block
// repeats: with four lanes instead of eight it is spread over twice the elements.
// Lane t holds positions 64t + r (strides 1..32 in registers); two transpositions of
// 32 floats each give it positions 64a + 16t + e in v[16a + e] (a < 4, e < 16), for
// strides 64 and 128 as register strides 16 and 32, and 16 consecutive codes per a to
// store. A warp's tile is 8 blocks.
// Shared memory: two staging slots (the tile ahead lands while this one is computed)
// and one transposition buffer per block, rows of 10 units at 41-unit block strides
// (writes and reads conflict-free); 105 KB per CTA, two CTAs per SM.
namespace quad {

constexpr int kLanes = 4;
constexpr int kPer = 64;                   // elements per lane
constexpr int kBlocks = 8;                 // blocks per warp tile
constexpr int kDepth = 2;                  // tiles in flight per warp
constexpr int kRow = 10, kGroup = 41;      // transposition: units per lane row, per block
constexpr int kSlotUnits = kWarps * kBlocks * 32;
constexpr int kUnits = kDepth * kSlotUnits + kWarps * kBlocks * kGroup;

// Compress of one staged 16-bit block (four lanes); buf is the block's transposition
// buffer.
template <typename T, int FMT>
__device__ __forceinline__ void compressBlock(const Args& a, size_t block, int t, const char* area, uint32_t in,
                                              float4* buf) {
  float v[kPer];
  bool bad;
  float lift;
  float alpha = readStagedPrescaled<T, kLanes>(a, area, in, v, bad, lift);
  butterflies<1, 32>(v);
  // Two transpositions, of the even and of the odd positions: pass h sends v[2j + h]
  // (position 64t + 2j + h) and brings back positions 64r + 16t + 2i + h into
  // v[16r + 2i + h], the registers it has just sent.
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    __syncwarp();  // the buffer's previous readers are done
#pragma unroll
    for (int q = 0; q < 8; ++q)
      buf[kRow * t + q] = make_float4(v[8 * q + h], v[8 * q + 2 + h], v[8 * q + 4 + h], v[8 * q + 6 + h]);
    __syncwarp();
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        const float4 f = buf[kRow * r + 2 * t + u];
        float* d = &v[16 * r + 8 * u + h];
        d[0] = f.x;
        d[2] = f.y;
        d[4] = f.z;
        d[6] = f.w;
      }
  }
  butterflies<16, 16>(v);
  // The last stage with the block max: max(|a + b|, |a - b|) = fl(|a| + |b|) (one of
  // the two is |a| + |b| exactly, and rounding is monotonic), one add instead of a
  // second max per pair on the busier ALU pipe.
  float m = 0.0f;
#pragma unroll
  for (int r = 0; r < 32; ++r) {
    const float x = v[r], y = v[r + 32];
    m = fmaxf(m, fabsf(x) + fabsf(y));  // no NaN in a good block
    v[r] = x + y;
    v[r + 32] = x - y;
  }
  m = groupMax(m, kLanes);
  const QuantScales qs = blockScales<FMT>(a, m, lift, bad, alpha);
  uint8_t* codes = a.out + TACO_HEADER_BYTES + block * 256 + 16 * t;
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const float* w = &v[16 * r];
    *reinterpret_cast<uint4*>(codes + 64 * r) = make_uint4(encodeWord<FMT>(w, qs.inv), encodeWord<FMT>(w + 4, qs.inv),
                                                           encodeWord<FMT>(w + 8, qs.inv), encodeWord<FMT>(w + 12, qs.inv));
  }
  if (t == 0) storeScales(a, a.out, block, alpha, qs.s);
}

// This warp's tiles, the next one copied in while this one is compressed. Lane l
// copies chunks l + 32j of the tile (whole 128-byte lines into one shared-memory row:
// chunk c at unit (c & ~7) | ((c & 7) ^ (c >> 3 & 7))) and reads chunks 8l + k of
// it, at unit (8l | (l & 7)) ^ k. Tiles not wholly inside `count` take the general
// path, as two tiles of the eight-lane mapping.
template <typename T, int FMT>
__device__ __forceinline__ void compressTiles(const Args& a, int lane) {
  static_assert(sizeof(T) == 2, "the four-lane path is for 16-bit inputs");
  extern __shared__ uint4 stagingArea[];
  // 32-bit tile indices (the launcher sends counts >= 2^40 to the general kernel): the
  // loop state must fit beside the 64 values per lane in 128 registers without a spill
  const uint32_t warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const uint32_t nWarps = (gridDim.x * blockDim.x) >> 5;
  const uint32_t nTiles = (uint32_t)((a.nBlocks + kBlocks - 1) / kBlocks);
  const uint32_t nFull = (uint32_t)(a.count / (kBlocks * 256));  // tiles wholly inside count
  const int g = lane >> 2, t = lane & 3;
  uint4* slots = stagingArea + (threadIdx.x >> 5) * kBlocks * 32;  // this warp's tile in slot 0
  const uint32_t readOffset = (uint32_t)((slots - stagingArea) + ((8 * lane) | (lane & 7))) * 16u;
  float4* buf = reinterpret_cast<float4*>(stagingArea + kDepth * kSlotUnits) + ((threadIdx.x >> 5) * kBlocks + g) * kGroup;
  const T* x = static_cast<const T*>(a.x) + lane * 8;  // chunk `lane` of tile 0
  auto stage = [&](uint32_t tile, uint32_t slot) {
    uint4* dst = slots + slot * kSlotUnits;
    const T* src = x + (size_t)tile * (kBlocks * 256);
#pragma unroll
    for (int j = 0; j < 8; ++j) cpAsync(dst + 32 * j + (lane & ~7) + ((lane ^ ((lane >> 3) + 4 * j)) & 7), src + 256 * j, 16);
  };
  if (warp < nFull) stage(warp, 0);
  cpAsyncCommit();
  for (uint32_t tile = warp, s = 0; tile < nTiles; tile += nWarps, s ^= 1) {
    __syncwarp();  // every lane is done with the slot about to be refilled
    if (tile + nWarps < nFull) stage(tile + nWarps, s ^ 1);
    cpAsyncCommit();
    if (tile < nFull) {
      cpAsyncWait<1>();
      __syncwarp();  // the other lanes' copies have landed too
      compressBlock<T, FMT>(a, (size_t)tile * kBlocks + g, t, reinterpret_cast<const char*>(stagingArea),
                            readOffset + s * (kSlotUnits * 16), buf);
    } else {
#pragma unroll 1
      for (int h = 0; h < 2; ++h)
        compressBlockTile<T, FMT>(a, (size_t)tile * kBlocks + 4 * h + (lane >> 3), lane & 7, nullptr);
    }
  }
  cpAsyncWait<0>();
}

}  // namespace quad

// Plain decompress (one input, no exact input, aligned pointers): each lane stages its
// own 32 codes (units 2t and 2t + 1 of its block's 16, the pair swapped on lanes 4..7 so
// that reads are conflict-free) and lane 0 its block's scales, D - 1 tiles ahead. The
// next tile's codes and scales are read into registers while this tile is rotated, so
// that the shared-memory latency is not on the path of every tile (4 warps per
// scheduler cannot hide it).
template <typename T, int FMT>
__device__ __forceinline__ void decompressTiles(const Args& a, int g, int t) {
  constexpr int D = kDecompressDepth;
  extern __shared__ uint4 stagingArea[];
  // 32-bit tile indices: counts >= 2^40 take the general kernel
  const uint32_t warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const uint32_t nWarps = (gridDim.x * blockDim.x) >> 5;
  const uint32_t nTiles = (uint32_t)((a.nBlocks + 3) / 4);
  const uint32_t nFull = (uint32_t)(a.count / 1024);
  const int b = (threadIdx.x >> 5) * 4 + g;  // this block's index in the CTA's tile
  const int swap = (t >> 2) & 1;
  auto codesAt = [&](int slot) { return stagingArea + slot * kDecompressSlot + b * kCodesGroup + 2 * t; };
  auto scalesAt = [&](int slot) {
    return reinterpret_cast<float2*>(stagingArea + slot * kDecompressSlot + kWarps * 4 * kCodesGroup) + b;
  };
  float4* buf = reinterpret_cast<float4*>(stagingArea + D * kDecompressSlot) + b * kXposeGroup;
  const uint8_t* in = static_cast<const uint8_t*>(a.in.ptr[0]);
  const float* sc = reinterpret_cast<const float*>(in + a.scalesOffset);
  const int perBlock = a.k.adaptive ? 2 : 1;  // scales per block: (alpha, s) or s
  auto stage = [&](uint32_t tile, int slot) {
    const size_t block = (size_t)tile * 4 + g;
    const uint8_t* src = in + TACO_HEADER_BYTES + block * 256 + 32 * t;
    cpAsync(codesAt(slot) + swap, src, 16);
    cpAsync(codesAt(slot) + (swap ^ 1), src + 16, 16);
    if (t == 0) cpAsync(scalesAt(slot), sc + perBlock * block, 4 * perBlock);
  };
  // this lane's codes and its block's scales of the tile in `slot` (landed: waited for)
  uint4 cw[2];
  float2 sp;
  auto fetch = [&](int slot) {
    __syncwarp();  // lane 0's copy of the scales has landed too
    sp = *scalesAt(slot);
    cw[0] = codesAt(slot)[swap];
    cw[1] = codesAt(slot)[swap ^ 1];
  };
#pragma unroll
  for (int i = 0; i < D - 1; ++i) {
    if (warp + i * nWarps < nFull) stage(warp + i * nWarps, i);
    cpAsyncCommit();
  }
  if (warp < nFull) {
    cpAsyncWait<D - 2>();
    fetch(0);
  }
  int s = 0;
  T* y = static_cast<T*>(a.y);
  for (uint32_t tile = warp; tile < nTiles; tile += nWarps) {
    // refills the slot of the tile before this one, read (fetched) one iteration ago,
    // before this iteration's first __syncwarp
    const int ahead = s == 0 ? D - 1 : s - 1;
    const uint32_t far = tile + (D - 1) * nWarps;
    if (far < nFull) stage(far, ahead);
    cpAsyncCommit();
    const size_t block = (size_t)tile * 4 + g;
    float v[kPerThread];
    if (tile < nFull) {
      const float d = a.k.adaptive ? decodeScale(sp.y, sp.x, a.k.c) : decodeScale(sp.x, 1.0f, a.k.c);
#pragma unroll
      for (int k = 0; k < 2; ++k) {
        uint8_t c[16];
        memcpy(c, &cw[k], 16);
        float f[16];
        decodeChunk<16, FMT>(c, f);
#pragma unroll
        for (int i = 0; i < 16; ++i) v[16 * k + i] = f[i] * d;
      }
      const int nextSlot = s + 1 == D ? 0 : s + 1;
      if (tile + nWarps < nFull) {
        cpAsyncWait<D - 2>();  // the next tile's copies (this thread's)
        fetch(nextSlot);
      }
      fwht(v, buf + 9 * t, buf + t);
      T* out = y + block * 256 + 4 * t;
#pragma unroll
      for (int q = 0; q < 8; ++q) store4<T>(out + 32 * q, &v[4 * q], a.streamOut);
    } else {
      const bool active = block < a.nBlocks;
      accumulateTile<T, FMT>(a, block, t, active, v);
      if (active) storeValues<T>(y, block, t, a, v);
    }
    s = s + 1 == D ? 0 : s + 1;
  }
  cpAsyncWait<0>();
}

}  // namespace r256

// Decompress-accumulate and decompress-reduce-compress, one tile at a time without
// staging (and plain decompress when its inputs fail the header check: NaN output).
template <typename T, int MODE, int FMT>
__device__ __forceinline__ void generalTiles(const Args& a, size_t warp, size_t nWarps, size_t nTiles,
                                             int groupsPerWarp, int groupInWarp, int t, bool inputsOk) {
  for (size_t tile = warp; tile < nTiles; tile += nWarps) {
    const size_t block = tile * groupsPerWarp + groupInWarp;
    const bool active = block < a.nBlocks;
    float v[kPerThread];
    accumulateTile<T, FMT>(a, block, t, active, v);
    if (a.x != nullptr && active) addValues<T>(static_cast<const T*>(a.x), block, t, a, v);
    if (!inputsOk)
#pragma unroll
      for (int r = 0; r < kPerThread; ++r) v[r] = canonicalNaN();
    if (MODE == kAccumulate) {
      if (active) storeValues<T>(static_cast<T*>(a.y), block, t, a, v);
      continue;
    }
    // kReduceCompress: compress the fp32 sum, zero past `count` as compress() pads
    // (the rotation leaves the padding of the last block non-zero); optionally
    // decompress it again.
    if (active && (block + 1) * a.k.B > a.count) {
      constexpr int V = Vec<T>::V;
#pragma unroll
      for (int r = 0; r < kPerThread; ++r) {
        const size_t idx = block * a.k.B + (size_t)(t + a.k.tpb * (r / V)) * V + (r % V);
        if (idx >= a.count) v[r] = 0.0f;
      }
    }
    float m0, d;
    bool bad;
    blockMaxBad(v, a.k.tpb, m0, bad);
    compressTile<T, FMT, MODE>(a, block, t, active, v, m0, bad, a.out, d);
    if (a.y != nullptr) {
#pragma unroll
      for (int r = 0; r < kPerThread; ++r) v[r] = v[r] * d;
      if (a.k.rotate) fwht<Vec<T>::V>(v, t, a.k.tpb);
      if (active) storeValues<T>(static_cast<T*>(a.y), block, t, a, v);
    }
  }
}

// Compress and plain decompress of the rotated codecs at B = 256 with aligned
// pointers: a kernel of their own (its own registers and launch bounds, and the
// general kernel keeps its allocation). Its loops count tiles in 32 bits: counts of
// 2^40 and more (beyond any GPU's memory today) take the general kernel.
__host__ __device__ __forceinline__ bool rotated256(const Args& a, int mode) {
  return a.k.rotate && a.k.B == 256 && a.k.fmt != kFmtInt4 && a.vec && a.count < ((size_t)1 << 40) &&
         (mode == kCompress || (mode == kAccumulate && a.in.n == 1 && a.x == nullptr));
}

template <typename T, int MODE, int FMT>
__global__ void __launch_bounds__(kThreads, MODE == kCompress && sizeof(T) == 4 ? 3 : 2) rotated256Kernel(const Args a) {
  static_assert(MODE != kReduceCompress && FMT != kFmtInt4, "no B = 256 fast path for this kernel");
  const int lane = threadIdx.x & 31, t = lane & 7, g = lane >> 3;
  const size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const size_t nWarps = ((size_t)gridDim.x * blockDim.x) >> 5;
  const size_t nTiles = (a.nBlocks + 3) / 4;
  if constexpr (MODE == kCompress) {
    if (blockIdx.x == 0 && threadIdx.x == 0) writeHeader(a.out, a);
    if constexpr (sizeof(T) == 2)
      r256::quad::compressTiles<T, FMT>(a, lane);
    else
      r256::compressTiles<T, FMT>(a, warp, nWarps, nTiles, g, t);
  } else if (headerOk(static_cast<const uint8_t*>(a.in.ptr[0]), a)) {
    r256::decompressTiles<T, FMT>(a, g, t);
  } else {
    generalTiles<T, MODE, FMT>(a, warp, nWarps, nTiles, 4, g, t, false);
  }
}

template <typename T, int MODE, int FMT>
__global__ void __launch_bounds__(kThreads, MODE == kCompress ? 3 : 2) blockCodecKernel(const Args a) {
  const int lane = threadIdx.x & 31;
  const int t = lane & (a.k.tpb - 1);
  const int groupInWarp = lane / a.k.tpb;
  const int groupsPerWarp = 32 / a.k.tpb;
  const size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  const size_t nWarps = ((size_t)gridDim.x * blockDim.x) >> 5;
  const size_t nTiles = (a.nBlocks + groupsPerWarp - 1) / groupsPerWarp;

  bool inputsOk = true;
  if (MODE != kCompress)
    for (int q = 0; q < a.in.n; ++q) inputsOk &= headerOk(static_cast<const uint8_t*>(a.in.ptr[q]), a);
  if ((MODE != kAccumulate) && blockIdx.x == 0 && threadIdx.x == 0) writeHeader(a.out, a);

  if constexpr (MODE == kCompress) {
    // Software pipeline over this warp's tiles: tile i + D - 1 is being copied in
    // while tile i is compressed. Only whole, aligned tiles are staged (bit s of
    // `staged` marks slot s); the rest go through the general load.
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
  } else {
  if (MODE == kAccumulate && FMT != kFmtInt4 && a.vec && a.in.n == 1 && a.x == nullptr && inputsOk) {
    decompressTiles<T, FMT>(a, warp, nWarps, nTiles, groupsPerWarp, groupInWarp, t);
    return;
  }
  generalTiles<T, MODE, FMT>(a, warp, nWarps, nTiles, groupsPerWarp, groupInWarp, t, inputsOk);
  }
}

// ---- elementwise codecs: none (raw T) and bf16. V elements per thread per step.
template <typename T, typename W, int MODE>
__global__ void __launch_bounds__(kThreads) elementCodecKernel(const Args a) {
  constexpr int V = Vec<T>::V;
  const size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  const size_t nThreads = (size_t)gridDim.x * blockDim.x;
  const size_t nVec = (a.count + V - 1) / V;
  bool inputsOk = true;
  if (MODE != kCompress)
    for (int q = 0; q < a.in.n; ++q) inputsOk &= headerOk(static_cast<const uint8_t*>(a.in.ptr[q]), a);
  if ((MODE != kAccumulate) && tid == 0) writeHeader(a.out, a);
  const T* x = static_cast<const T*>(a.x);
  for (size_t i = tid; i < nVec; i += nThreads) {
    const size_t base = i * V;
    const bool full = a.vec && base + V <= a.count;
    const int n = (int)((a.count - base) < (size_t)V ? (a.count - base) : (size_t)V);
    float v[V];
    float e[V];
    if (x != nullptr) {
      if (full) {
        uint4 raw = __ldg(reinterpret_cast<const uint4*>(x + base));
        const T* t = reinterpret_cast<const T*>(&raw);
#pragma unroll
        for (int j = 0; j < V; ++j) e[j] = toFloat<T>(t[j]);
      } else {
#pragma unroll
        for (int j = 0; j < V; ++j) e[j] = j < n ? toFloat<T>(x[base + j]) : 0.0f;
      }
    }
    if (MODE == kCompress) {
#pragma unroll
      for (int j = 0; j < V; ++j) v[j] = e[j];
    } else {
      for (int q = 0; q < a.in.n; ++q) {
        const W* w = reinterpret_cast<const W*>(static_cast<const uint8_t*>(a.in.ptr[q]) + TACO_HEADER_BYTES);
        W wv[V];
        if (full) {
          if (sizeof(W) * V == 16) {
            *reinterpret_cast<uint4*>(wv) = __ldg(reinterpret_cast<const uint4*>(w + base));
          } else {
            *reinterpret_cast<uint2*>(wv) = __ldg(reinterpret_cast<const uint2*>(w + base));
          }
        } else {
#pragma unroll
          for (int j = 0; j < V; ++j) wv[j] = j < n ? w[base + j] : fromFloat<W>(0.0f);
        }
#pragma unroll
        for (int j = 0; j < V; ++j) {
          float d = toFloat<W>(wv[j]);
          v[j] = q == 0 ? d : v[j] + d;
        }
      }
      if (a.in.n == 0)
#pragma unroll
        for (int j = 0; j < V; ++j) v[j] = 0.0f;
      if (x != nullptr)
#pragma unroll
        for (int j = 0; j < V; ++j) v[j] = v[j] + e[j];
      if (!inputsOk)
#pragma unroll
        for (int j = 0; j < V; ++j) v[j] = canonicalNaN();
    }
    if (MODE != kAccumulate) {
      W* w = reinterpret_cast<W*>(a.out + TACO_HEADER_BYTES);
      W wv[V];
#pragma unroll
      for (int j = 0; j < V; ++j) {
        wv[j] = fromFloat<W>(v[j]);
        v[j] = toFloat<W>(wv[j]);
      }
      if (full) {
        if (sizeof(W) * V == 16) {
          *reinterpret_cast<uint4*>(w + base) = *reinterpret_cast<uint4*>(wv);
        } else {
          *reinterpret_cast<uint2*>(w + base) = *reinterpret_cast<uint2*>(wv);
        }
      } else {
        for (int j = 0; j < n; ++j) w[base + j] = wv[j];
      }
    }
    if (MODE != kCompress && a.y != nullptr) {
      T* y = static_cast<T*>(a.y);
      T yv[V];
#pragma unroll
      for (int j = 0; j < V; ++j) yv[j] = fromFloat<T>(v[j]);
      if (full) {
        *reinterpret_cast<uint4*>(y + base) = *reinterpret_cast<uint4*>(yv);
      } else {
        for (int j = 0; j < n; ++j) y[base + j] = yv[j];
      }
    }
  }
}

// Per-device attributes, queried once per device.
int deviceAttribute(cudaDeviceAttr attr, int fallback) {
  static int cache[64][2] = {};
  const int slot = attr == cudaDevAttrMultiProcessorCount ? 0 : 1;
  int dev = 0;
  cudaGetDevice(&dev);
  if (dev < 0 || dev >= 64) return fallback;
  if (cache[dev][slot] == 0) {
    int c = 0;
    cudaDeviceGetAttribute(&c, attr, dev);
    cache[dev][slot] = c > 0 ? c : fallback;
  }
  return cache[dev][slot];
}
int smCount() { return deviceAttribute(cudaDevAttrMultiProcessorCount, 132); }
size_t l2Bytes() { return (size_t)deviceAttribute(cudaDevAttrL2CacheSize, 50 << 20); }

// Opts a kernel in to more than the default 48 KB of dynamic shared memory, once
// per kernel and device (a host-side attribute: safe during stream capture).
cudaError_t allowSharedMemory(const void* kernel, size_t bytes) {
  if (bytes <= 48 * 1024) return cudaSuccess;
  static std::mutex mu;
  static std::set<std::pair<const void*, int>> done;
  int dev = 0;
  cudaGetDevice(&dev);
  std::lock_guard<std::mutex> lock(mu);
  if (done.count({kernel, dev})) return cudaSuccess;
  const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
  if (e == cudaSuccess) done.insert({kernel, dev});
  return e;
}

bool aligned16(const void* p) { return p == nullptr || ((uintptr_t)p & 15) == 0; }

Args makeArgs(tacoCodec_t codec, size_t count, tacoDataType_t dtype) {
  const CodecDesc* d = codecById(codec.id);
  const WireLayout w = wireLayout(codec, count, dtype);
  Args a{};
  a.k.fmt = d->format;
  a.k.rotate = d->rotate;
  a.k.adaptive = d->adaptive;
  a.k.B = d->blocked ? codec.blockSize : 1;
  a.k.log2B = 0;
  while ((1 << a.k.log2B) < a.k.B) ++a.k.log2B;
  a.k.tpb = d->blocked ? codec.blockSize / kPerThread : 1;
  a.k.c = d->rotate ? (float)(1.0 / sqrt((double)codec.blockSize)) : 1.0f;
  a.k.id = (uint8_t)codec.id;
  a.k.version = (uint8_t)d->formatVersion;
  a.count = count;
  a.nBlocks = w.nBlocks;
  a.scalesOffset = w.scalesOffset;
  a.codesEnd = w.codesOffset + w.codesBytes;
  a.scalesEnd = w.scalesOffset + w.scalesBytes;
  a.totalBytes = w.totalBytes;
  a.dtype = (uint8_t)dtype;
  return a;
}

// The grid's cap in CTAs per SM (beyond it each warp loops over tiles). Measured on the H200 at
// 2^28 elements, caps 8 … 128 side by side in one run (docs/codecs.md, "Grid size"): the kernels
// with little work per byte — every fp32 kernel, the element codecs, the general block kernel's
// 16-bit compress — are fastest with many short-lived CTAs (128 per SM, ~2 tiles per warp at 2^28:
// the block scheduler keeps every SM busy to the end, where a long-lived grid leaves SMs idle
// behind the slowest ones; fp32 decompress +9 %, fp8-block bf16 compress +20 %); the
// issue-bound 16-bit rotated kernels want few, each warp's software pipeline filling once per
// CTA (compress 8, decompress 32); the general kernel's 16-bit decompress is best at 64.
// Decompress-reduce-compress keeps the earlier 8 (not re-measured).
template <typename T, int MODE>
int ctasPerSm(bool blocked, bool rotated256Path) {
  if (!blocked) return 128;
  if (MODE == kReduceCompress) return 8;
  if (sizeof(T) == 2 && rotated256Path) return MODE == kCompress ? 8 : 32;
  if (sizeof(T) == 2 && MODE == kAccumulate) return 64;
  return 128;
}

using KernelFn = void (*)(const Args);

// The block-codec kernel for the codec's code format (compiled in: no per-element switch) and its
// dynamic shared memory; fastPath = rotated256(), which excludes INT4.
template <typename T, int MODE>
KernelFn blockKernel(int fmt, bool fastPath, size_t& smem) {
  if constexpr (MODE != kReduceCompress) {
    if (fastPath) {
      smem = (MODE == kCompress ? (sizeof(T) == 2 ? r256::quad::kUnits : r256::kCompressUnits)
                                : r256::kDecompressUnits) * 16;
      switch (fmt) {
        case kFmtE4M3: return rotated256Kernel<T, MODE, kFmtE4M3>;
        case kFmtE5M2: return rotated256Kernel<T, MODE, kFmtE5M2>;
        default: return rotated256Kernel<T, MODE, kFmtInt8>;
      }
    }
  }
  smem = MODE == kCompress     ? (size_t)Stage<T>::kCompressDepth * Stage<T>::kCompressSlot
         : MODE == kAccumulate ? (size_t)Stage<T>::kDecompressDepth * Stage<T>::kDecompressSlot
                               : 0;
  switch (fmt) {
    case kFmtE4M3: return blockCodecKernel<T, MODE, kFmtE4M3>;
    case kFmtE5M2: return blockCodecKernel<T, MODE, kFmtE5M2>;
    case kFmtInt8: return blockCodecKernel<T, MODE, kFmtInt8>;
    default: return blockCodecKernel<T, MODE, kFmtInt4>;
  }
}

template <typename T, int MODE>
cudaError_t launchTyped(const Args& a, cudaStream_t stream) {
  const CodecDesc* d = codecById(a.k.id);
  const int sms = smCount();
  const bool fastPath = d->blocked && rotated256(a, MODE);  // rotated256Kernel
  size_t work;
  if (d->blocked) {
    // blocks per warp tile: four lanes per block in the 16-bit rotated compress
    const bool quad = MODE == kCompress && sizeof(T) == 2 && fastPath;
    const int groupsPerWarp = quad ? r256::quad::kBlocks : 32 / a.k.tpb;
    work = (a.nBlocks + groupsPerWarp - 1) / groupsPerWarp * 32;  // threads wanted
  } else {
    work = (a.count + Vec<T>::V - 1) / Vec<T>::V;
  }
  size_t grid = (work + kThreads - 1) / kThreads;
  const size_t maxGrid = (size_t)sms * ctasPerSm<T, MODE>(d->blocked, fastPath);
  if (grid > maxGrid) grid = maxGrid;
  if (grid == 0) grid = 1;
  if (d->blocked) {
    size_t smem;
    const KernelFn kernel = blockKernel<T, MODE>(d->format, fastPath, smem);
    cudaError_t e = allowSharedMemory(reinterpret_cast<const void*>(kernel), smem);
    if (e != cudaSuccess) return e;
    kernel<<<(unsigned)grid, kThreads, smem, stream>>>(a);
  } else if (d->format == kFmtBf16) {
    elementCodecKernel<T, __nv_bfloat16, MODE><<<(unsigned)grid, kThreads, 0, stream>>>(a);
  } else {
    elementCodecKernel<T, T, MODE><<<(unsigned)grid, kThreads, 0, stream>>>(a);
  }
  return cudaGetLastError();
}

template <int MODE>
cudaError_t launch(Args& a, tacoDataType_t dtype, cudaStream_t stream) {
  a.vec = aligned16(a.x) && aligned16(a.y) && aligned16(a.out);
  for (int q = 0; q < a.in.n; ++q) a.vec = a.vec && aligned16(a.in.ptr[q]);
  const size_t elemBytes = dtype == tacoFloat32 ? 4 : 2;
  a.streamOut = a.y != nullptr && a.count * elemBytes > l2Bytes();  // measured: fp32 decompress +2 %
  switch (dtype) {
    case tacoFloat32: return launchTyped<float, MODE>(a, stream);
    case tacoFloat16: return launchTyped<__half, MODE>(a, stream);
    case tacoBfloat16: return launchTyped<__nv_bfloat16, MODE>(a, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace

cudaError_t launchCompress(tacoCodec_t codec, const void* x, size_t count, tacoDataType_t dtype, void* out,
                           cudaStream_t stream) {
  Args a = makeArgs(codec, count, dtype);
  a.x = x;
  a.out = static_cast<uint8_t*>(out);
  return launch<kCompress>(a, dtype, stream);
}

cudaError_t launchDecompress(tacoCodec_t codec, const void* in, void* y, size_t count, tacoDataType_t dtype,
                             cudaStream_t stream) {
  Args a = makeArgs(codec, count, dtype);
  a.in.n = 1;
  a.in.ptr[0] = in;
  a.y = y;
  return launch<kAccumulate>(a, dtype, stream);
}

cudaError_t launchDecompressAccumulate(tacoCodec_t codec, const AccumInputs& in, const void* exact, void* y,
                                       size_t count, tacoDataType_t dtype, cudaStream_t stream) {
  Args a = makeArgs(codec, count, dtype);
  a.in = in;
  a.x = exact;
  a.y = y;
  return launch<kAccumulate>(a, dtype, stream);
}

cudaError_t launchDecompressReduceCompress(tacoCodec_t codec, const AccumInputs& in, const void* exact,
                                           void* out, void* y, size_t count, tacoDataType_t dtype,
                                           cudaStream_t stream) {
  Args a = makeArgs(codec, count, dtype);
  a.in = in;
  a.x = exact;
  a.out = static_cast<uint8_t*>(out);
  a.y = y;
  return launch<kReduceCompress>(a, dtype, stream);
}

}  // namespace taco

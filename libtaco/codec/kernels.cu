// The fused codec kernels. One kernel per (mode, dtype); the codec (format,
// rotation, adaptive scale, block size) is a runtime parameter, uniform across
// the grid, so the build stays small: 3 modes x 3 dtypes for block codecs plus
// the same for the elementwise codecs (none, bf16).
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
#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>

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

// Loads this thread's 32 elements of `block` (zeros past `count`).
template <typename T>
__device__ __forceinline__ void loadValues(const T* x, size_t block, int t, const Args& a, float (&v)[kPerThread]) {
  constexpr int V = Vec<T>::V;
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

template <typename T>
__device__ __forceinline__ void storeValues(T* y, size_t block, int t, const Args& a, const float (&v)[kPerThread]) {
  constexpr int V = Vec<T>::V;
#pragma unroll
  for (int j = 0; j < Vec<T>::NCH; ++j) {
    const size_t idx = block * a.k.B + (size_t)(t + a.k.tpb * j) * V;
    if (a.vec && idx + V <= a.count) {
      uint4 raw;
      T* e = reinterpret_cast<T*>(&raw);
#pragma unroll
      for (int i = 0; i < V; ++i) e[i] = fromFloat<T>(v[j * V + i]);
      *reinterpret_cast<uint4*>(y + idx) = raw;
    } else {
#pragma unroll
      for (int i = 0; i < V; ++i)
        if (idx + i < a.count) y[idx + i] = fromFloat<T>(v[j * V + i]);
    }
  }
}

// Codes of chunk j: V bytes (or V/2 for 4-bit formats) at a V-aligned offset.
template <int V, int FMT>
__device__ __forceinline__ void loadCodes(const uint8_t* codes, size_t block, int t, const Args& a, int j,
                                          uint8_t (&c)[V]) {
  constexpr bool nib = FMT == kFmtInt4;
  const size_t e0 = block * a.k.B + (size_t)(t + a.k.tpb * j) * V;
  const uint8_t* p = codes + (nib ? e0 / 2 : e0);
  if (!nib) {
    if (a.vec) {
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

// Decoded sum of the k inputs for this thread's elements of `block`: R = W_0 + W_1 + ...
// (W_q = code * d_q), then the rotation; `bad` if any input header was wrong.
template <typename T, int FMT>
__device__ __forceinline__ void accumulateTile(const Args& a, size_t block, int t, bool active,
                                               float (&v)[kPerThread]) {
  constexpr int V = Vec<T>::V;
#pragma unroll
  for (int r = 0; r < kPerThread; ++r) v[r] = 0.0f;
  for (int q = 0; q < a.in.n; ++q) {
    const uint8_t* w = static_cast<const uint8_t*>(a.in.ptr[q]);
    float d = 0.0f;
    uint8_t c[kPerThread];
    if (active) {
      const float* sc = reinterpret_cast<const float*>(w + a.scalesOffset);
      d = a.k.adaptive ? decodeScale(sc[2 * block + 1], sc[2 * block], a.k.c) : decodeScale(sc[block], 1.0f, a.k.c);
#pragma unroll
      for (int j = 0; j < Vec<T>::NCH; ++j) {
        uint8_t cj[V];
        loadCodes<V, FMT>(w + TACO_HEADER_BYTES, block, t, a, j, cj);
#pragma unroll
        for (int i = 0; i < V; ++i) c[j * V + i] = cj[i];
      }
    } else {
#pragma unroll
      for (int r = 0; r < kPerThread; ++r) c[r] = 0;
    }
#pragma unroll
    for (int r = 0; r < kPerThread; ++r) {
      const float x = decode(c[r], (CodeFormat)FMT) * d;
      v[r] = q == 0 ? x : v[r] + x;
    }
  }
  if (a.k.rotate) fwht<V>(v, t, a.k.tpb);
}

// Compresses this thread's part of a block held in v (destroyed).
template <typename T, int FMT, int MODE>
__device__ __forceinline__ void compressTile(const Args& a, size_t block, int t, bool active,
                                             float (&v)[kPerThread], uint8_t* outWire, float (&dOut)) {
  constexpr int V = Vec<T>::V;
  // max|x| ignoring NaN, and a NaN/Inf detector (x * 0 is NaN exactly for non-finite x):
  // two instructions per element instead of a NaN test and select.
  float m0 = 0.0f, probe = 0.0f;
#pragma unroll
  for (int r = 0; r < kPerThread; ++r) {
    m0 = fmaxf(m0, fabsf(v[r]));
    probe = __fmaf_rn(v[r], 0.0f, probe);
  }
  m0 = groupMax(m0, a.k.tpb);
  const bool bad = __any_sync(0xffffffffu, probe != probe) ? groupAny(probe != probe, a.k.tpb) : false;
  float alpha = 1.0f;
  if (a.k.adaptive) {
    const EnergyScale ks = energyScale(bad ? 1.0f : m0);
    uint32_t S = 0;
    if (energySingleScale(ks)) {
      const float k = ks.k1 * ks.k2;
#pragma unroll
      for (int r = 0; r < kPerThread; ++r) S += energyTermSingle(v[r], k);
    } else {
#pragma unroll
      for (int r = 0; r < kPerThread; ++r) S += energyTerm(v[r], ks);
    }
    S = groupSum(S, a.k.tpb);
    alpha = adaptiveAlpha(S, ks.e, a.k.log2B);
#pragma unroll
    for (int r = 0; r < kPerThread; ++r) v[r] *= alpha;
  }
  const float lift = tinyLift(bad ? 1.0f : m0, a.k.adaptive);
  if (lift != 1.0f)
#pragma unroll
    for (int r = 0; r < kPerThread; ++r) v[r] *= lift;
  float m = m0 * lift;
  if (a.k.rotate) {
    fwht<V>(v, t, a.k.tpb);
    m = 0.0f;
#pragma unroll
    for (int r = 0; r < kPerThread; ++r) m = fmaxf(m, fabsf(v[r]));  // no NaN in a good block
    m = groupMax(m, a.k.tpb);
  }
  QuantScales qs = quantScales(m, a.k.c, (CodeFormat)FMT);
  qs.s = qs.s / lift;
  if (bad) {
    // NaN scales; and inv = NaN makes every code the format's NaN code: the FP8
    // conversion writes 0x7f for NaN, the integer one 0 (= formatNaNCode).
    qs.s = canonicalNaN();
    qs.inv = canonicalNaN();
    alpha = canonicalNaN();
  }
  dOut = decodeScale(qs.s, alpha, a.k.c);
  uint8_t* codes = outWire + TACO_HEADER_BYTES;
#pragma unroll
  for (int j = 0; j < Vec<T>::NCH; ++j) {
    uint8_t c[V];
#pragma unroll
    for (int i = 0; i < V; ++i) {
      c[i] = encode(v[j * V + i] * qs.inv, (CodeFormat)FMT);
      if (MODE == kReduceCompress) v[j * V + i] = decode(c[i], (CodeFormat)FMT);  // for the optional y
    }
    if (active) storeCodes<V, FMT>(codes, block, t, a, j, c);
  }
  if (active && t == 0) {
    float* sc = reinterpret_cast<float*>(outWire + a.scalesOffset);
    if (a.k.adaptive) {
      sc[2 * block] = alpha;
      sc[2 * block + 1] = qs.s;
    } else {
      sc[block] = qs.s;
    }
  }
}

template <typename T, int MODE, int FMT>
__global__ void __launch_bounds__(kThreads, MODE == kAccumulate ? 3 : 2) blockCodecKernel(const Args a) {
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

  for (size_t tile = warp; tile < nTiles; tile += nWarps) {
    const size_t block = tile * groupsPerWarp + groupInWarp;
    const bool active = block < a.nBlocks;
    float v[kPerThread];
    if (MODE == kCompress) {
      if (active) {
        loadValues<T>(static_cast<const T*>(a.x), block, t, a, v);
      } else {
#pragma unroll
        for (int r = 0; r < kPerThread; ++r) v[r] = 0.0f;
      }
      float d;
      compressTile<T, FMT, MODE>(a, block, t, active, v, a.out, d);
      continue;
    }
    accumulateTile<T, FMT>(a, block, t, active, v);
    if (a.x != nullptr && active) {
      float e[kPerThread];
      loadValues<T>(static_cast<const T*>(a.x), block, t, a, e);
#pragma unroll
      for (int r = 0; r < kPerThread; ++r) v[r] = v[r] + e[r];
    }
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
    float d;
    compressTile<T, FMT, MODE>(a, block, t, active, v, a.out, d);
    if (a.y != nullptr) {
#pragma unroll
      for (int r = 0; r < kPerThread; ++r) v[r] = v[r] * d;
      if (a.k.rotate) fwht<Vec<T>::V>(v, t, a.k.tpb);
      if (active) storeValues<T>(static_cast<T*>(a.y), block, t, a, v);
    }
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

int smCount() {
  static int count[64] = {0};
  int dev = 0;
  cudaGetDevice(&dev);
  if (dev < 0 || dev >= 64) return 132;
  if (count[dev] == 0) {
    int c = 0;
    cudaDeviceGetAttribute(&c, cudaDevAttrMultiProcessorCount, dev);
    count[dev] = c > 0 ? c : 132;
  }
  return count[dev];
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

template <typename T, int MODE>
cudaError_t launchTyped(const Args& a, cudaStream_t stream) {
  const CodecDesc* d = codecById(a.k.id);
  const int sms = smCount();
  size_t work;
  if (d->blocked) {
    const int groupsPerWarp = 32 / a.k.tpb;
    work = (a.nBlocks + groupsPerWarp - 1) / groupsPerWarp * 32;  // threads wanted
  } else {
    work = (a.count + Vec<T>::V - 1) / Vec<T>::V;
  }
  size_t grid = (work + kThreads - 1) / kThreads;
  const size_t maxGrid = (size_t)sms * 8;
  if (grid > maxGrid) grid = maxGrid;
  if (grid == 0) grid = 1;
  if (d->blocked) {
    switch (d->format) {  // the format is compiled in: no per-element switch
      case kFmtE4M3: blockCodecKernel<T, MODE, kFmtE4M3><<<(unsigned)grid, kThreads, 0, stream>>>(a); break;
      case kFmtE5M2: blockCodecKernel<T, MODE, kFmtE5M2><<<(unsigned)grid, kThreads, 0, stream>>>(a); break;
      case kFmtInt8: blockCodecKernel<T, MODE, kFmtInt8><<<(unsigned)grid, kThreads, 0, stream>>>(a); break;
      default: blockCodecKernel<T, MODE, kFmtInt4><<<(unsigned)grid, kThreads, 0, stream>>>(a); break;
    }
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

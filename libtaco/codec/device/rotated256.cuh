// The rotated codecs at B = 256 (compress and plain decompress), with a thread
// mapping of their own: eight lanes per block (fp32 compress, decompress; a warp's
// tile is 4 blocks) or four (16-bit compress, namespace fourLane; 8 blocks), the
// FWHT's cross-lane strides through shared-memory transpositions instead of
// shuffles. The tile loops take their warp's place in a partition (warp of nWarps)
// and assume kThreads threads per CTA and the dynamic shared memory of
// codec/launch.h's rotated256*SmemBytes. Tiles not wholly inside `count` fall back to
// the generic path (block_generic.cuh). Code formats: a byte per code, and INT6 (the
// same math; only the packed stores and loads differ).
#pragma once
#include <type_traits>

#include "codec/device/block_generic.cuh"

namespace taco {
namespace dev {

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
namespace rotated256 {

constexpr int kLanes = 8;                 // lanes per block
constexpr int kWarps = kThreads / 32;
constexpr int kXposeGroup = 72;           // 16-byte units of a block's transposition buffer (8 rows of 9)
constexpr int kCompressDepth = 2;         // tiles in flight per warp (compress)
constexpr int kDecompressDepth = 3;       // (decompress)
constexpr int kCodesGroup = 16;           // a block's codes, in 16-byte units
constexpr int kInt6CodesGroup = 12;       // (INT6: 192 bytes, within the same slot)
// a decompress slot: every warp's codes (row-aligned), then (alpha, s) per block
constexpr int kDecompressSlot = kWarps * 4 * kCodesGroup + kWarps * 4 * 8 / 16;

// fp32 compress: a slot holds each block's 64 staged units padded to 72, the
// transposition buffer it shares (a block transposes in the slot it has just read).
// (16-bit inputs have a compress of their own, namespace fourLane.)
constexpr int kCompressSlotUnits = kWarps * 4 * kXposeGroup;
constexpr int kCompressUnits = kCompressDepth * kCompressSlotUnits;
constexpr int kDecompressUnits = kDecompressDepth * kDecompressSlot + kWarps * 4 * kXposeGroup;

// The whole FWHT of a block held as positions 32t + r; leaves positions 32a + 4t + b
// in v[4a + b]. row = buf + 9t, col = buf + t (this lane's bases in the block's buffer).
__device__ __forceinline__ void transposedFwht(float (&v)[kPerThread], float4* row, const float4* col) {
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

// The codes of a block held in transposedFwht's layout (positions 32q + 4t + b in
// v[4q + b]), stored as the wire has them; words[q] keeps the four codes of positions
// 32q + 4t .. + 3, a byte each. buf: the block's transposition buffer (INT6 packs
// through it).
template <int FMT>
__device__ __forceinline__ void encodeRotatedCodes(const Args& a, size_t block, int t, const float (&v)[kPerThread],
                                                   float inv, float4* buf, uint32_t (&words)[8]) {
#pragma unroll
  for (int q = 0; q < 8; ++q) words[q] = encodeWord<FMT>(&v[4 * q], inv);
  if constexpr (FMT == kFmtInt6) {
    // Four codes per q are 3 bytes at 24q + 3t: too narrow to store. The packed words go
    // back through the buffer (word 12q + t, the block's run offset by 8g words so that
    // the warp's four blocks hit different banks), and lane t stores positions
    // 32t .. 32t + 31, 24 bytes at an 8-byte aligned offset (a block's codes are 192).
    uint32_t* packed = reinterpret_cast<uint32_t*>(buf) + 8 * ((threadIdx.x >> 3) & 3);
    __syncwarp();  // every lane has read its transposed values
#pragma unroll
    for (int q = 0; q < 8; ++q) packed[12 * q + t] = int6Word(words[q]);
    __syncwarp();
    const uint4* mine = reinterpret_cast<const uint4*>(packed + 12 * t);
    const uint4 lo = mine[0], hi = mine[1];
    const uint32_t w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    uint32_t o[6];
    packInt6Quad(w, o);
    packInt6Quad(w + 4, o + 3);
    uint2* codes = reinterpret_cast<uint2*>(a.out + TACO_HEADER_BYTES + block * 192 + 24 * t);
#pragma unroll
    for (int k = 0; k < 3; ++k) codes[k] = make_uint2(o[2 * k], o[2 * k + 1]);
  } else {
    uint8_t* codes = a.out + TACO_HEADER_BYTES + block * 256 + 4 * t;
#pragma unroll
    for (int q = 0; q < 8; ++q) *reinterpret_cast<uint32_t*>(codes + 32 * q) = words[q];
  }
}

// Compress of one staged fp32 block (eight lanes); buf is the block's transposition
// buffer.
template <typename T, int FMT>
__device__ __forceinline__ void rotated256CompressBlock(const Args& a, size_t block, int t, const char* area, uint32_t in,
                                              float4* buf) {
  float v[kPerThread];
  bool bad;
  float lift;
  float alpha = readStagedPrescaled<T, kLanes>(a, area, in, v, bad, lift);
  transposedFwht(v, buf + 9 * t, buf + t);
  float m = 0.0f;
#pragma unroll
  for (int r = 0; r < kPerThread; ++r) m = fmaxf(m, fabsf(v[r]));  // no NaN in a good block
  m = groupMax(m, kLanes);
  const QuantScales qs = blockScales<FMT>(a, m, lift, bad, alpha);
  uint32_t words[8];
  encodeRotatedCodes<FMT>(a, block, t, v, qs.inv, buf, words);
  if (t == 0) storeScales(a, a.out, block, alpha, qs.s);
}

// The fp32 compress loop: this warp's tiles in the order `tiles` gives them (tile_queue.cuh),
// the next one copied in (cp.async) while this one is compressed; tiles not wholly inside
// `count` take the general path.
template <typename T, int FMT, class Tiles>
__device__ __forceinline__ void rotated256CompressTiles(const Args& a, Tiles& tiles, size_t nTiles, int g, int t) {
  static_assert(sizeof(T) == 4, "16-bit inputs take fourLane::fourLaneCompressTiles");
  constexpr int V = Vec<T>::V, NCH = Vec<T>::NCH;
  extern __shared__ uint4 stagingArea[];
  uint4* group = stagingArea + ((threadIdx.x >> 5) * 4 + g) * kXposeGroup;  // this block's region in slot 0
  // chunk c at unit (c & ~7) | ((c & 7) ^ (c / NCH & 7)): lane t reads chunks NCH t + k
  // at (NCH t ^ t) ^ k (k does not reach the bits of NCH t), writes chunks t + 8j.
  const uint32_t readOffset = (uint32_t)((group - stagingArea) + ((NCH * t) ^ t)) * 16u;
  const size_t nFull = a.count / 1024;  // tiles wholly inside count
  const T* x = static_cast<const T*>(a.x) + g * 256 + t * V;  // this lane's first chunk of tile 0
  const T* next = x + tiles.front() * 1024;                     // ... of the tile to stage next
  auto stage = [&](int slot) {  // the tile at `next`: lane t copies chunks t + 8j
    uint4* dst = group + slot * kCompressSlotUnits;
#pragma unroll
    for (int j = 0; j < NCH; ++j) cpAsync(dst + 8 * j + (t ^ ((t + 8 * j) / NCH & 7)), next + 8 * j * V, 16);
  };
  if (tiles.front() < nFull) stage(0);
  cpAsyncCommit();
  int s = 0;
  for (; tiles.front() < nFull; tiles.pop()) {  // whole tiles, staged: one straight path
    const size_t tile = tiles.front();
    __syncwarp();  // every lane is done with the slot about to be refilled
    // (in the static order a stride from the last, which costs fewer instructions)
    if constexpr (Tiles::kClaimed) next = x + tiles.ahead(1) * 1024;
    else next += tiles.step * 1024;
    if (tiles.ahead(1) < nFull) stage(s ^ 1);
    cpAsyncCommit();
    cpAsyncWait<1>();
    __syncwarp();  // the other lanes' copies have landed too
    float4* buf = reinterpret_cast<float4*>(group + s * kCompressSlotUnits);
    rotated256CompressBlock<T, FMT>(a, tile * 4 + g, t, reinterpret_cast<const char*>(stagingArea),
                          readOffset + (uint32_t)(s * kCompressSlotUnits * 16), buf);
    s ^= 1;
  }
  cpAsyncWait<0>();
  for (; tiles.front() < nTiles; tiles.pop()) compressBlockTile<T, FMT, false>(a, tiles.front() * 4 + g, t, nullptr);  // the rest
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
// (Named for its mapping, four lanes per block, against the eight of the rest of
// namespace rotated256; only the 16-bit compress uses it.)
namespace fourLane {

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
__device__ __forceinline__ void fourLaneCompressBlock(const Args& a, size_t block, int t, const char* area, uint32_t in,
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
  if constexpr (FMT == kFmtInt6) {
    // 16 consecutive codes per r: 12 bytes at 48r + 12t of the block's 192. encodeInt6Run
    // needs |v * inv| < 31.5: m is max|v| exactly (the last stage above) and inv is 31 / m
    // to a few ulps, so encode()'s clamp would never act (test_int6_run checks the scales).
    // A bad block (inv NaN) gets its NaN code 0 via keep.
    uint32_t keep = bad ? 0u : ~0u;
    asm("" : "+r"(keep));  // opaque: else each AND with it becomes a select, one more instruction
    // Stored as they are, 4-byte stores at a 12-byte stride wrote every 32-byte sector in
    // pieces (12 stores, each touching 16 sectors per warp). The words go through the block's
    // transposition buffer instead, and lane t stores 16-byte units t, t + 4, t + 8: whole
    // sectors, 3 stores. The block's 48 words sit at word 4(g >> 1) + 12(g & 1) of its
    // buffer (buffers are 164 words apart): word 12r + 3t + k writes and 16-byte reads of
    // two blocks per quarter warp are then conflict-free.
    const int g = (threadIdx.x >> 2) & 7;
    uint32_t* words = reinterpret_cast<uint32_t*>(buf) + 4 * (g >> 1) + 12 * (g & 1);
    __syncwarp();  // every lane has read its transposed values
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      uint32_t o[3];
      encodeInt6Run(&v[16 * r], qs.inv, keep, o);
#pragma unroll
      for (int k = 0; k < 3; ++k) words[12 * r + 3 * t + k] = o[k];
    }
    __syncwarp();
    const uint4* mine = reinterpret_cast<const uint4*>(words) + t;
    uint4* codes = reinterpret_cast<uint4*>(a.out + TACO_HEADER_BYTES + block * 192) + t;
#pragma unroll
    for (int k = 0; k < 3; ++k) codes[4 * k] = mine[4 * k];
  } else {
    uint8_t* codes = a.out + TACO_HEADER_BYTES + block * 256 + 16 * t;
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const float* w = &v[16 * r];
      *reinterpret_cast<uint4*>(codes + 64 * r) =
          make_uint4(encodeWord<FMT>(w, qs.inv), encodeWord<FMT>(w + 4, qs.inv), encodeWord<FMT>(w + 8, qs.inv),
                     encodeWord<FMT>(w + 12, qs.inv));
    }
  }
  if (t == 0) storeScales(a, a.out, block, alpha, qs.s);
}

// This warp's tiles in the order `tiles` gives them (tile_queue.cuh; a tile is 8 blocks), the
// next one copied in while this one is compressed. Lane l
// copies chunks l + 32j of the tile (whole 128-byte lines into one shared-memory row:
// chunk c at unit (c & ~7) | ((c & 7) ^ (c >> 3 & 7))) and reads chunks 8l + k of
// it, at unit (8l | (l & 7)) ^ k. Tiles not wholly inside `count` take the general
// path, as two tiles of the eight-lane mapping.
template <typename T, int FMT, class Tiles>
__device__ __forceinline__ void fourLaneCompressTiles(const Args& a, Tiles& tiles, int lane) {
  static_assert(sizeof(T) == 2, "the four-lane path is for 16-bit inputs");
  extern __shared__ uint4 stagingArea[];
  // 32-bit tile indices (the launcher sends counts >= 2^40 to the general kernel): the
  // loop state must fit beside the 64 values per lane in 128 registers without a spill
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
  if (tiles.front() < nFull) stage((uint32_t)tiles.front(), 0);
  cpAsyncCommit();
  for (uint32_t s = 0; tiles.front() < nFull; tiles.pop(), s ^= 1) {  // whole tiles, staged: one straight path
    __syncwarp();  // every lane is done with the slot about to be refilled
    const uint32_t tile = (uint32_t)tiles.front(), next = (uint32_t)tiles.ahead(1);
    if (next < nFull) stage(next, s ^ 1);
    cpAsyncCommit();
    cpAsyncWait<1>();
    __syncwarp();  // the other lanes' copies have landed too
    fourLaneCompressBlock<T, FMT>(a, (size_t)tile * kBlocks + g, t, reinterpret_cast<const char*>(stagingArea),
                          readOffset + s * (kSlotUnits * 16), buf);
  }
  cpAsyncWait<0>();
  for (; tiles.front() < nTiles; tiles.pop()) {  // the rest, eight lanes a block through the general load
    const uint32_t tile = (uint32_t)tiles.front();
#pragma unroll 1
    for (int h = 0; h < 2; ++h)
      compressBlockTile<T, FMT, false>(a, (size_t)tile * kBlocks + 4 * h + (lane >> 3), lane & 7, nullptr);
  }
}

}  // namespace fourLane

// Plain decompress (one input, no exact input, aligned pointers): each lane stages its
// own 32 codes (units 2t and 2t + 1 of its block's 16, the pair swapped on lanes 4..7 so
// that reads are conflict-free; INT6: 24 bytes) and lane 0 its block's scales, D - 1
// tiles ahead. The next tile's codes and scales are read into registers while this
// tile is rotated, so
// that the shared-memory latency is not on the path of every tile (4 warps per
// scheduler cannot hide it). Tiles of 4 blocks, in the order `tiles` gives them (tile_queue.cuh).
template <typename T, int FMT, class Tiles>
__device__ __forceinline__ void rotated256DecompressTiles(const Args& a, Tiles& tiles, int g, int t) {
  constexpr int D = kDecompressDepth;
  extern __shared__ uint4 stagingArea[];
  // 32-bit tile indices: counts >= 2^40 take the general kernel
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
  // INT6: lane t's 32 codes are 24 bytes at 24t of the block's 192, staged at 24t of a
  // 12-unit region (LDS.64 reads conflict-free); 16 + 24t is 16-byte aligned for even t,
  // so one 16-byte and one 8-byte copy each
  auto int6CodesAt = [&](int slot) {
    return reinterpret_cast<char*>(stagingArea + slot * kDecompressSlot + b * kInt6CodesGroup) + 24 * t;
  };
  auto stage = [&](uint32_t tile, int slot) {
    const size_t block = (size_t)tile * 4 + g;
    if constexpr (FMT == kFmtInt6) {
      const uint8_t* src = in + TACO_HEADER_BYTES + block * 192 + 24 * t;
      char* dst = int6CodesAt(slot);
      const int wide = 8 * (t & 1), narrow = (t & 1) ? 0 : 16;
      cpAsync(dst + wide, src + wide, 16);
      cpAsync(dst + narrow, src + narrow, 8);
    } else {
      const uint8_t* src = in + TACO_HEADER_BYTES + block * 256 + 32 * t;
      cpAsync(codesAt(slot) + swap, src, 16);
      cpAsync(codesAt(slot) + (swap ^ 1), src + 16, 16);
    }
    if (t == 0) cpAsync(scalesAt(slot), sc + perBlock * block, 4 * perBlock);
  };
  // this lane's codes and its block's scales of the tile in `slot` (landed: waited for);
  // INT6: the 24 bytes in cw[0] and cw[1].x, .y
  uint4 cw[2];
  float2 sp;
  auto fetch = [&](int slot) {
    __syncwarp();  // lane 0's copy of the scales has landed too
    sp = *scalesAt(slot);
    if constexpr (FMT == kFmtInt6) {
      const uint2* p = reinterpret_cast<const uint2*>(int6CodesAt(slot));
      const uint2 p0 = p[0], p1 = p[1], p2 = p[2];
      cw[0] = make_uint4(p0.x, p0.y, p1.x, p1.y);
      cw[1] = make_uint4(p2.x, p2.y, 0u, 0u);
    } else {
      cw[0] = codesAt(slot)[swap];
      cw[1] = codesAt(slot)[swap ^ 1];
    }
  };
#pragma unroll
  for (int i = 0; i < D - 1; ++i) {
    const uint32_t early = (uint32_t)tiles.ahead(i);
    if (early < nFull) stage(early, i);
    cpAsyncCommit();
  }
  if (tiles.front() < nFull) {
    cpAsyncWait<D - 2>();
    fetch(0);
  }
  int s = 0;
  T* y = static_cast<T*>(a.y);
  for (; tiles.front() < nFull; tiles.pop()) {  // whole tiles, staged: one straight path
    const uint32_t tile = (uint32_t)tiles.front();
    // refills the slot of the tile before this one, read (fetched) one iteration ago,
    // before this iteration's first __syncwarp
    const int ahead = s == 0 ? D - 1 : s - 1;
    const uint32_t far = (uint32_t)tiles.ahead(D - 1);
    if (far < nFull) stage(far, ahead);
    cpAsyncCommit();
    const size_t block = (size_t)tile * 4 + g;
    float v[kPerThread];
    const float alpha = a.k.adaptive ? sp.x : 1.0f, sc = a.k.adaptive ? sp.y : sp.x;
    const int K = decodeShift(sc, alpha, a.k.c);  // block_math.h: K != 0 only at the extremes
    const float d = decodeScaleShifted(sc, alpha, a.k.c, K);
    const uint32_t packed[6] = {cw[0].x, cw[0].y, cw[0].z, cw[0].w, cw[1].x, cw[1].y};  // INT6
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      float f[16];
      if constexpr (FMT == kFmtInt6) {
        decodeInt6Run(packed + 3 * k, f);  // decode() of each code, no conversion
      } else {
        uint8_t c[16];
        memcpy(c, &cw[k], 16);
        decodeChunk<16, FMT>(c, f);
      }
#pragma unroll
      for (int i = 0; i < 16; ++i) v[16 * k + i] = f[i] * d;
    }
    const int nextSlot = s + 1 == D ? 0 : s + 1;
    if ((uint32_t)tiles.ahead(1) < nFull) {
      cpAsyncWait<D - 2>();  // the next tile's copies (this thread's)
      fetch(nextSlot);
    }
    transposedFwht(v, buf + 9 * t, buf + t);
    if (K != 0) unshiftAll(v, K, !wideScale(sc));
    T* out = y + block * 256 + 4 * t;
#pragma unroll
    for (int q = 0; q < 8; ++q) store4<T>(out + 32 * q, &v[4 * q], a.streamOut);
    s = s + 1 == D ? 0 : s + 1;
  }
  cpAsyncWait<0>();
  for (; tiles.front() < nTiles; tiles.pop()) {  // the rest, through the general loads
    const size_t block = (size_t)tiles.front() * 4 + g;
    const bool active = block < a.nBlocks;
    float v[kPerThread];
    accumulateTile<T, FMT>(a, block, t, active, v);
    if (active) storeValues<T>(y, block, t, a, v);
  }
}

}  // namespace rotated256

}  // namespace dev
}  // namespace taco

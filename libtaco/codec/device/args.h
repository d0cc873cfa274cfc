// The arguments of the codec kernels (Args, filled on the host and passed by value),
// their wire fields (PieceWire), and the host-side helpers that a launcher of codec
// device code needs: the kernel arguments for a codec, count and dtype, the alignment
// test, the device's SM count and L2 size, and the opt-in to large dynamic shared
// memory. Plain C++, usable from .cc and .cu files; the functions not inline here are
// defined once, in codec/launch.cu.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "codec/codec.h"

namespace taco {
namespace dev {

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

// The wire layout of `count` elements as the kernels' arguments hold it: the fields
// of Args that wireLayout() determines. The peer kernels get one per piece.
struct PieceWire {
  size_t count, nBlocks, scalesOffset, codesEnd, scalesEnd, totalBytes;
};

// The one mapping from a codec's WireLayout of `count` elements to the kernels' view.
inline PieceWire pieceWireOf(const WireLayout& l, size_t count) {
  PieceWire w;
  w.count = count;
  w.nBlocks = l.nBlocks;
  w.scalesOffset = l.scalesOffset;
  w.codesEnd = l.codesOffset + l.codesBytes;
  w.scalesEnd = l.scalesOffset + l.scalesBytes;
  w.totalBytes = l.totalBytes;
  return w;
}

// Sets the wire fields of `a` (the codec launchers on the host, the peer kernels per
// piece on the device).
__host__ __device__ __forceinline__ void setWire(Args& a, const PieceWire& w) {
  a.count = w.count;
  a.nBlocks = w.nBlocks;
  a.scalesOffset = w.scalesOffset;
  a.codesEnd = w.codesEnd;
  a.scalesEnd = w.scalesEnd;
  a.totalBytes = w.totalBytes;
}

// Whether compress (mode kCompress) or plain decompress (kAccumulate with one input
// and no exact input) of `a` takes the rotated codecs' B = 256 kernel
// (rotated256Kernel, device/rotated256.cuh): aligned pointers and a format it is built
// for (FormatInfo::rotated256: a byte per code or INT6; INT4's nibbles take the generic
// kernel's loads and stores). A kernel
// of its own (its own registers and launch bounds, and the general kernel keeps its
// allocation). Its loops count tiles in 32 bits: counts of 2^40 and more (beyond any
// GPU's memory today) take the general kernel.
inline bool takesRotated256Kernel(const Args& a, int mode) {
  return a.k.rotate && a.k.B == 256 && formatInfo(a.k.fmt).rotated256 && a.vec &&
         a.count < ((size_t)1 << 40) &&
         (mode == kCompress || (mode == kAccumulate && a.in.n == 1 && a.x == nullptr));
}

// The arguments for `count` elements of `dtype` under `codec`: the codec's kernel
// parameters and the wire layout. Pointers, vec and streamOut are left zero for the
// launcher to fill.
Args makeArgs(tacoCodec_t codec, size_t count, tacoDataType_t dtype);

// p is null or 16-byte aligned (every pointer of a launch must be for Args::vec).
bool aligned16(const void* p);

// Of the current device, queried once per device.
int smCount();
size_t l2Bytes();

// Dynamic shared memory per CTA (kThreads threads) of the staged pipelines for
// inputs / outputs of `dtype`: genericCompressTiles, genericDecompressTiles,
// genericSumTiles (device/block_generic.cuh); rotated256CompressTiles (fp32) or
// fourLaneCompressTiles (16-bit), rotated256DecompressTiles (device/rotated256.cuh).
size_t genericCompressSmemBytes(tacoDataType_t dtype);
size_t genericDecompressSmemBytes(tacoDataType_t dtype);
size_t genericSumSmemBytes(tacoDataType_t dtype);
size_t rotated256CompressSmemBytes(tacoDataType_t dtype);
size_t rotated256DecompressSmemBytes(tacoDataType_t dtype);

// Opts a kernel in to more than the default 48 KB of dynamic shared memory, once
// per kernel and device (a host-side attribute: safe during stream capture).
cudaError_t allowSharedMemory(const void* kernel, size_t bytes);

}  // namespace dev
}  // namespace taco

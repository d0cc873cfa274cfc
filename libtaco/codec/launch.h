// The host side of a launch of codec device code (the codec kernels, codec/launch.cu,
// and the peer kernels, coll/allreduce_peer.cu): the kernel arguments for a codec,
// count and dtype, which kernel a codec takes, the alignment test, the device's SM count
// and L2 size, the dynamic shared memory of the staged pipelines and the opt-in to more
// than 48 KB of it. Host code, plain C++; the functions not inline here are defined once,
// in codec/launch.cu.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>

#include "codec/codec.h"
#include "codec/device/args.h"

namespace taco {

// The one mapping from a codec's WireLayout of `count` elements to the kernels' view.
inline dev::PieceWire pieceWireOf(const WireLayout& l, size_t count) {
  dev::PieceWire w;
  w.count = count;
  w.nBlocks = l.nBlocks;
  w.scalesOffset = l.scalesOffset;
  w.codesEnd = l.codesOffset + l.codesBytes;
  w.scalesEnd = l.scalesOffset + l.scalesBytes;
  w.totalBytes = l.totalBytes;
  return w;
}

// Whether `a` in `mode` takes a kernel of the rotated codecs at B = 256 (aligned
// pointers; loops that count tiles in 32 bits: counts of 2^40 and more, beyond any GPU's
// memory today, take the general kernel):
//  - compress and plain decompress (kAccumulate, one input, no exact input):
//    rotated256Kernel (device/rotated256.cuh), for the formats of FormatInfo::rotated256
//    (a byte per code or INT6; INT4's nibbles take the generic kernel's loads and stores);
//  - the other sums (kAccumulate, kReduceCompress; one input or more): rotated256SumKernel
//    (device/rotated256_sum.cuh), for the same formats.
// Kernels of their own: their own registers and launch bounds, and the general kernel
// keeps its allocation.
inline bool takesRotated256Layout(const dev::Args& a) {
  return a.k.rotate && a.k.B == 256 && a.vec && a.count < ((size_t)1 << 40);
}
inline bool plainDecompress(const dev::Args& a, int mode) {
  return mode == dev::kAccumulate && a.in.n == 1 && a.x == nullptr;
}
inline bool takesRotated256Kernel(const dev::Args& a, int mode) {
  return takesRotated256Layout(a) && formatInfo(a.k.fmt).rotated256 &&
         (mode == dev::kCompress || plainDecompress(a, mode));
}
inline bool takesRotated256SumKernel(const dev::Args& a, int mode) {
  return takesRotated256Layout(a) && formatInfo(a.k.fmt).rotated256 && mode != dev::kCompress &&
         a.in.n >= 1 && !plainDecompress(a, mode);
}

// The arguments for `count` elements of `dtype` under `codec`: the codec's kernel
// parameters and the wire layout. Pointers, vec and streamOut are left zero for the
// launcher to fill.
dev::Args makeArgs(tacoCodec_t codec, size_t count, tacoDataType_t dtype);

// p is null or 16-byte aligned (every pointer of a launch must be for Args::vec).
bool aligned16(const void* p);

// Of the current device, queried once per device.
int smCount();
size_t l2Bytes();
int computeCapabilityMajor();

// Dynamic shared memory per CTA (kThreads threads) of the staged pipelines for
// inputs / outputs of `dtype`: genericCompressTiles (device/block_compress.cuh),
// genericDecompressTiles (block_decompress.cuh), genericSumTiles (block_sum.cuh);
// rotated256CompressTiles (fp32) or fourLaneCompressTiles (16-bit),
// rotated256DecompressTiles (device/rotated256.cuh), rotated256SumTiles (rotated256_sum.cuh).
size_t genericCompressSmemBytes(tacoDataType_t dtype);
size_t genericDecompressSmemBytes(tacoDataType_t dtype);
size_t genericSumSmemBytes(tacoDataType_t dtype);
size_t rotated256CompressSmemBytes(tacoDataType_t dtype);
size_t rotated256DecompressSmemBytes(tacoDataType_t dtype);
size_t rotated256SumSmemBytes(tacoDataType_t dtype);

// Opts a kernel in to more than the default 48 KB of dynamic shared memory, once
// per kernel and device (a host-side attribute: safe during stream capture).
cudaError_t allowSharedMemory(const void* kernel, size_t bytes);

}  // namespace taco

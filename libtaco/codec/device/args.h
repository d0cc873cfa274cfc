// The arguments of the codec kernels (Args, filled on the host and passed by value) and
// their wire fields (PieceWire), shared by the host that fills them and the device code
// that reads them. Plain C++, usable from .cc and .cu files. The host side of a launch
// (making the arguments, the device's limits) is codec/launch.h.
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

// The wire fields of `a`.
__host__ __device__ __forceinline__ PieceWire wireOf(const Args& a) {
  return PieceWire{a.count, a.nBlocks, a.scalesOffset, a.codesEnd, a.scalesEnd, a.totalBytes};
}

// a's fields but the input pointers, as a value the compiler may keep in registers. The peer
// kernels hold a piece's Args in shared memory, and a store through a pointer or a cp.async
// might change them as far as the compiler knows: a tile loop reading them there reloads them,
// and redoes the address arithmetic that depends on them, after each one. (The codec's own
// kernels take Args as a kernel parameter, which the compiler reads from the constant bank
// where it needs it: a copy there only costs registers.)
__host__ __device__ __forceinline__ Args scalarsOf(const Args& a) {
  Args r{};  // in.ptr null: a read of it faults rather than taking garbage
  r.k = a.k;
  setWire(r, wireOf(a));
  r.x = a.x;
  r.y = a.y;
  r.out = a.out;
  r.in.n = a.in.n;
  r.vec = a.vec;
  r.streamOut = a.streamOut;
  r.dtype = a.dtype;
  return r;
}

}  // namespace dev
}  // namespace taco

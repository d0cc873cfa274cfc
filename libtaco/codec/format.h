// The code formats and what the library needs to know about each: one row per format, read
// by the API (code bits), the wire layout (packing), the block math (Qmax, the NaN code) and
// the launchers and kernels (which tile paths a format takes). constexpr and free of CUDA
// headers, so host code, device code and plain C++ read the same rows; a kernel's format is a
// template parameter, so its row folds to constants and a kernel compiles as if written out.
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace taco {

enum CodeFormat { kFmtRaw = 0, kFmtBf16 = 1, kFmtE4M3 = 2, kFmtE5M2 = 3, kFmtInt8 = 4, kFmtInt4 = 5, kFmtInt6 = 6 };
constexpr int kNumCodeFormats = 7;

struct FormatInfo {
  int bits;             // per code on the wire; 0: the input's own elements (raw)
  float qmax;           // largest code magnitude (block formats; 1 for the others)
  int packCodes;        // packing: packCodes codes fill packBytes bytes (docs/format.md)
  int packBytes;
  uint8_t nanCode;      // written for every element of a block that held NaN or Inf
  bool rotated256;      // the rotated codecs' B = 256 layout (codec/device/rotated256*.cuh): the codec
                        // kernels (compress, decompress, the sums) and the peer kernels; byte codes and
                        // INT6 (INT4's nibbles: no)
};

// The FP8 NaN code is 0x7f (the conversion's, with saturation); the integer formats' is 0, two's
// complement zero, so a NaN block's codes are zero bytes.
constexpr FormatInfo formatInfo(int fmt) {
  // bits, qmax, packCodes, packBytes, nanCode, rotated256
  switch (fmt) {
    case kFmtE4M3: return FormatInfo{8,  448.0f,   1, 1, 0x7f, true};
    case kFmtE5M2: return FormatInfo{8,  57344.0f, 1, 1, 0x7f, true};
    case kFmtInt8: return FormatInfo{8,  127.0f,   1, 1, 0,    true};
    case kFmtInt6: return FormatInfo{6,  31.0f,    4, 3, 0,    true};
    case kFmtInt4: return FormatInfo{4,  7.0f,     2, 1, 0,    false};
    case kFmtBf16: return FormatInfo{16, 1.0f,     1, 2, 0,    false};
    default:       return FormatInfo{0,  1.0f,     1, 1, 0,    false};  // kFmtRaw
  }
}

// Bytes of n codes of a block format (n a multiple of 4, as every block is).
constexpr size_t codeBytes(CodeFormat f, size_t n) {
  return n / (size_t)formatInfo(f).packCodes * (size_t)formatInfo(f).packBytes;
}

// The rows agree with themselves: a packing unit holds its codes' bits.
constexpr bool formatRowsConsistent() {
  for (int f = 0; f < kNumCodeFormats; ++f) {
    const FormatInfo r = formatInfo(f);
    if (r.bits != 0 && r.packCodes * r.bits != 8 * r.packBytes) return false;
  }
  return true;
}

// Bytes of one 16-byte chunk's codes (16 / elemBytes elements) that the staged (cp.async)
// decompress and sum pipelines of the generic block path copy in one piece, or 0 where they do
// not take the format: cp.async copies 4, 8 or 16 bytes, so byte codes in every type and INT4's
// nibbles in 16-bit types (4 bytes a chunk); not INT4 in fp32 (2 bytes), INT6 (6 or 3 bytes), nor
// the formats that are not block codes.
constexpr int stagedChunkBytes(int fmt, int elemBytes) {
  const int bits = formatInfo(fmt).bits;
  if (bits == 0 || bits > 8) return 0;
  const int bytes = 16 / elemBytes * bits / 8;
  return bytes == 4 || bytes == 8 || bytes == 16 ? bytes : 0;
}
constexpr bool stagedCodes(int fmt, int elemBytes) { return stagedChunkBytes(fmt, elemBytes) != 0; }
// The staged sums (genericSumTiles) take those and INT4 in every type, in fp32 only where a lane
// holds a whole block (B = 32: its 16 code bytes in one copy; the device side tests that, wholeCodes).
constexpr bool stagedSumCodes(int fmt, int elemBytes) { return stagedCodes(fmt, elemBytes) || fmt == kFmtInt4; }
static_assert(formatRowsConsistent(), "format rows");

// fn(std::integral_constant<int, FMT>{}) for the block format fmt, a run-time value (`none` for
// any other): the one list of the formats that the block kernels are instantiated for.
template <typename R, typename Fn>
constexpr R visitBlockFormat(int fmt, R none, Fn&& fn) {
  switch (fmt) {
    case kFmtE4M3: return fn(std::integral_constant<int, kFmtE4M3>{});
    case kFmtE5M2: return fn(std::integral_constant<int, kFmtE5M2>{});
    case kFmtInt8: return fn(std::integral_constant<int, kFmtInt8>{});
    case kFmtInt6: return fn(std::integral_constant<int, kFmtInt6>{});
    case kFmtInt4: return fn(std::integral_constant<int, kFmtInt4>{});
    default: return none;
  }
}

// Qmax of a format for the block math, whose functions take the format as an argument (host and
// device alike): a switch of constants, each read from the table at compile time. Reading a row
// built at run time (formatInfo(f).qmax) gives the same values but not the same kernels: once the
// kernels' constant format is inlined it folds later, and their instruction schedule moves.
constexpr float formatQmax(int fmt) {
  return visitBlockFormat(fmt, formatInfo(kFmtRaw).qmax, [](auto f) {
    constexpr float q = formatInfo(decltype(f)::value).qmax;
    return q;
  });
}

}  // namespace taco

// The codec kernels (codec/kernels.cu.in) as pointers to launch: for a dtype T, a mode
// and a code format, the kernel compiled for them (the format is a template
// parameter of the kernels: no per-element switch). Host code, plain C++; each
// kernel is instantiated once, in the translation unit that the build makes of
// codec/kernels.cu.in for its element type, which is why the launchers get pointers
// rather than the kernel templates (a __global__ template instantiated in another
// translation unit cannot be launched without -rdc).
#pragma once
#include "codec/device/args.h"

namespace taco {

using KernelFn = void (*)(const dev::Args);

// rotated256Kernel (B = 256, rotated codecs, compress and plain decompress): a block
// format with FormatInfo::rotated256 (codec/format.h); nullptr for any other.
template <typename T, int MODE>
KernelFn rotated256KernelFor(int fmt);

// rotated256SumKernel (B = 256, rotated codecs, decompress-accumulate of several inputs or
// with an exact input, and decompress-reduce-compress): a block format with
// FormatInfo::rotated256; nullptr for any other.
template <typename T, int MODE>
KernelFn rotated256SumKernelFor(int fmt);

// blockCodecKernel: a block format (codec/format.h, visitBlockFormat); nullptr for any other.
template <typename T, int MODE>
KernelFn blockCodecKernelFor(int fmt);

// elementCodecKernel: fmt kFmtBf16 (bf16 on the wire) or anything else (raw T).
template <typename T, int MODE>
KernelFn elementCodecKernelFor(int fmt);

}  // namespace taco

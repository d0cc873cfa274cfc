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

// rotated256Kernel (B = 256, rotated codecs, compress and plain decompress): fmt
// kFmtE4M3, kFmtE5M2, kFmtInt6 or kFmtInt8 (anything else takes the INT8 kernel).
template <typename T, int MODE>
KernelFn rotated256KernelFor(int fmt);

// blockCodecKernel: fmt kFmtE4M3, kFmtE5M2, kFmtInt8, kFmtInt6 or kFmtInt4 (the default).
template <typename T, int MODE>
KernelFn blockCodecKernelFor(int fmt);

// elementCodecKernel: fmt kFmtBf16 (bf16 on the wire) or anything else (raw T).
template <typename T, int MODE>
KernelFn elementCodecKernelFor(int fmt);

}  // namespace taco

// The codec layer's interface to the rest of the library: the registry, sizes,
// and the fused kernels (device) and their CPU twins (host). A codec knows
// nothing about ranks. Launchers do no argument checking: libtaco/api does it.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "codec/format.h"
#include "core/dtype.h"
#include "taco.h"

namespace taco {

// A registry entry (codec/registry.cc).
struct CodecDesc {
  int id;                  // tacoCodecId_t
  const char* name;        // "taco"
  const char* description;
  CodeFormat format;
  bool blocked;            // per-block scales (false for none, bf16)
  bool rotate;             // Walsh-Hadamard rotation
  bool adaptive;           // ASH pre-rotation scale alpha (second scale on the wire)
  int defaultBlock;        // 0 when !blocked
  int formatVersion;
};

const CodecDesc* codecById(int id);           // nullptr if unknown
const CodecDesc* codecByName(const char* n);  // nullptr if unknown

// Parses "name[:block=N]"; on failure records a message naming `what` and the
// argument `arg` (e.g. "tacoCodecFind: spec argument 'tako': unknown codec ...").
tacoResult_t codecParse(const char* spec, tacoCodec_t* codec, const char* what, const char* arg);

// Checks id and block size; on failure records a message naming `what`.
tacoResult_t codecCheck(tacoCodec_t codec, const char* what);

// Wire layout of one compressed buffer (docs/format.md):
//   [16-byte header][codes: nBlocks*B codes, or count elements][scales: nBlocks*nScales fp32][pad to 16]
struct WireLayout {
  size_t nBlocks;       // 0 for codecs without blocks
  size_t codesOffset;   // = TACO_HEADER_BYTES
  size_t codesBytes;
  size_t scalesOffset;
  size_t scalesBytes;
  size_t totalBytes;    // multiple of 16
};
WireLayout wireLayout(tacoCodec_t codec, size_t count, tacoDataType_t dtype);

struct WireHeader {      // little-endian, 16 bytes
  uint32_t magic;        // kWireMagic
  uint8_t codecId;       // tacoCodecId_t
  uint8_t formatVersion;
  uint8_t log2Block;     // 0 for codecs without blocks
  uint8_t dtype;         // tacoDataType_t compressed from (the payload's type for none)
  uint64_t count;        // elements
};
static_assert(sizeof(WireHeader) == TACO_HEADER_BYTES, "header is 16 bytes");
constexpr uint32_t kWireMagic = 0x4f434154u;  // "TACO"

// Up to TACO_MAX_ACCUM_INPUTS compressed inputs, passed to kernels by value.
struct AccumInputs {
  const void* ptr[TACO_MAX_ACCUM_INPUTS];
  int n;
};

// ---- device: one fused kernel each, enqueued on `stream`
cudaError_t launchCompress(tacoCodec_t codec, const void* x, size_t count, tacoDataType_t dtype,
                           void* out, cudaStream_t stream);
cudaError_t launchDecompress(tacoCodec_t codec, const void* in, void* y, size_t count,
                             tacoDataType_t dtype, cudaStream_t stream);
// y = FINISH(sum_j dec_j) + exact   (exact may be nullptr; may alias y)
cudaError_t launchDecompressAccumulate(tacoCodec_t codec, const AccumInputs& in, const void* exact,
                                       void* y, size_t count, tacoDataType_t dtype,
                                       cudaStream_t stream);
// out = compress(that sum); y (optional) = decompress(out)
cudaError_t launchDecompressReduceCompress(tacoCodec_t codec, const AccumInputs& in,
                                           const void* exact, void* out, void* y, size_t count,
                                           tacoDataType_t dtype, cudaStream_t stream);

// ---- host twins: the same math on the CPU, bit-identical. They validate the
// headers of their inputs (tacoInvalidArgument on mismatch).
tacoResult_t hostCompress(tacoCodec_t codec, const void* x, size_t count, tacoDataType_t dtype,
                          void* out);
tacoResult_t hostDecompress(tacoCodec_t codec, const void* in, void* y, size_t count,
                            tacoDataType_t dtype);
tacoResult_t hostDecompressAccumulate(tacoCodec_t codec, const AccumInputs& in, const void* exact,
                                      void* y, size_t count, tacoDataType_t dtype);
tacoResult_t hostDecompressReduceCompress(tacoCodec_t codec, const AccumInputs& in,
                                          const void* exact, void* out, void* y, size_t count,
                                          tacoDataType_t dtype);

}  // namespace taco

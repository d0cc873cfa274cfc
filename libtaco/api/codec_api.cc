// Exported codec entry points: argument checks, then dispatch to libtaco/codec.
#include <cuda_runtime_api.h>

#include <cstdio>

#include "api/argcheck.h"
#include "codec/codec.h"
#include "core/check.h"
#include "core/export.h"

using namespace taco;

namespace {

// The largest element count the codec functions take: up to it, every byte size
// (count * 4 data bytes, wireLayout's sums) fits in size_t without wrapping.
constexpr size_t kMaxCount = SIZE_MAX / 8;

struct Call {
  const char* op;
  bool device;
};

// Device calls take memory a kernel can access (device, managed or mapped host).
tacoResult_t checkData(const Call& c, const void* p, tacoDataType_t dt, const char* arg) {
  TACO_CHECK(checkNotNull(p, c.op, arg));
  TACO_CHECK(checkAligned(p, dtypeBytes(dt), c.op, arg));
  if (c.device) TACO_CHECK(checkDevicePointer(p, kAnyDevice, c.op, arg));
  return tacoSuccess;
}

tacoResult_t checkWire(const Call& c, const void* p, size_t have, size_t need, const char* arg, const char* sizeArg) {
  TACO_CHECK(checkNotNull(p, c.op, arg));
  TACO_CHECK(checkAligned(p, 4, c.op, arg));
  TACO_ARG(have >= need, "%s: %s argument is %zu, but %s needs %zu bytes (tacoCompressedSize)", c.op, sizeArg, have,
           arg, need);
  if (c.device) TACO_CHECK(checkDevicePointer(p, kAnyDevice, c.op, arg));
  return tacoSuccess;
}

// count <= kMaxCount, the largest count whose byte sizes fit in size_t.
tacoResult_t checkCountFits(size_t count, const char* op) {
  TACO_ARG(count <= kMaxCount, "%s: count argument %zu is larger than %zu (the largest count whose sizes in bytes fit "
           "in size_t)", op, count, kMaxCount);
  return tacoSuccess;
}

tacoResult_t checkCommon(const Call& c, tacoCodec_t codec, size_t count, tacoDataType_t dt) {
  TACO_CHECK(codecCheck(codec, c.op));
  TACO_CHECK(checkDatatype(dt, c.op));
  TACO_CHECK(checkCount(count, c.op));
  TACO_CHECK(checkCountFits(count, c.op));
  return tacoSuccess;
}

tacoResult_t checkInputs(const Call& c, const void* const* inputs, int nInputs, size_t inBytes, size_t need,
                         AccumInputs* acc) {
  TACO_ARG(nInputs >= 0 && nInputs <= TACO_MAX_ACCUM_INPUTS, "%s: nInputs argument %d is not in [0, %d]", c.op,
           nInputs, TACO_MAX_ACCUM_INPUTS);
  if (nInputs > 0) TACO_CHECK(checkNotNull(inputs, c.op, "inputs"));
  acc->n = nInputs;
  for (int q = 0; q < nInputs; ++q) {
    char name[32];
    snprintf(name, sizeof(name), "inputs[%d]", q);
    TACO_CHECK(checkWire(c, inputs[q], inBytes, need, name, "inBytes"));
    acc->ptr[q] = inputs[q];
  }
  return tacoSuccess;
}

tacoResult_t cudaResult(cudaError_t e, const char* op) {
  if (e == cudaSuccess) return tacoSuccess;
  return setError(tacoUnhandledCudaError, "%s: kernel launch failed: %s", op, cudaGetErrorString(e));
}

size_t wireBytes(tacoCodec_t codec, size_t count, tacoDataType_t dt) { return wireLayout(codec, count, dt).totalBytes; }

tacoResult_t compressImpl(const Call& c, tacoCodec_t codec, const void* x, size_t count, tacoDataType_t dt,
                          void* out, size_t outBytes, tacoStream_t stream) {
  TACO_CHECK(checkCommon(c, codec, count, dt));
  TACO_CHECK(checkData(c, x, dt, "x"));
  const size_t need = wireBytes(codec, count, dt);
  TACO_CHECK(checkWire(c, out, outBytes, need, "out", "outBytes"));
  TACO_CHECK(checkOverlap(c.op, "out", out, need, "x", x, count * dtypeBytes(dt)));
  if (!c.device) return hostCompress(codec, x, count, dt, out);
  return cudaResult(launchCompress(codec, x, count, dt, out, stream), c.op);
}

tacoResult_t decompressImpl(const Call& c, tacoCodec_t codec, const void* in, size_t inBytes, void* y, size_t count,
                            tacoDataType_t dt, tacoStream_t stream) {
  TACO_CHECK(checkCommon(c, codec, count, dt));
  const size_t need = wireBytes(codec, count, dt);
  TACO_CHECK(checkWire(c, in, inBytes, need, "in", "inBytes"));
  TACO_CHECK(checkData(c, y, dt, "y"));
  TACO_CHECK(checkOverlap(c.op, "y", y, count * dtypeBytes(dt), "in", in, need));
  if (!c.device) return hostDecompress(codec, in, y, count, dt);
  return cudaResult(launchDecompress(codec, in, y, count, dt, stream), c.op);
}

tacoResult_t accumulateImpl(const Call& c, tacoCodec_t codec, const void* const* inputs, int nInputs, size_t inBytes,
                            const void* exact, void* out, size_t outBytes, void* y, size_t count, tacoDataType_t dt,
                            tacoStream_t stream, bool reduceCompress) {
  TACO_CHECK(checkCommon(c, codec, count, dt));
  const size_t need = wireBytes(codec, count, dt);
  AccumInputs acc;
  TACO_CHECK(checkInputs(c, inputs, nInputs, inBytes, need, &acc));
  if (exact != nullptr) TACO_CHECK(checkData(c, exact, dt, "exact"));
  const size_t dataBytes = count * dtypeBytes(dt);
  if (reduceCompress) {
    TACO_CHECK(checkWire(c, out, outBytes, need, "out", "outBytes"));
    if (y != nullptr) TACO_CHECK(checkData(c, y, dt, "y"));
    TACO_CHECK(checkOverlap(c.op, "out", out, need, "exact", exact, dataBytes));
    TACO_CHECK(checkOverlap(c.op, "out", out, need, "y", y, dataBytes));
  } else {
    TACO_CHECK(checkData(c, y, dt, "y"));
  }
  // y == exact is the in-place accumulation (each element of exact is read before the same
  // element of y is written); any other overlap is not.
  TACO_CHECK(checkOverlap(c.op, "y", y, dataBytes, "exact", exact, dataBytes, "y == exact"));
  for (int q = 0; q < nInputs; ++q) {
    char name[32];
    snprintf(name, sizeof(name), "inputs[%d]", q);
    if (reduceCompress) TACO_CHECK(checkOverlap(c.op, "out", out, need, name, inputs[q], need));
    TACO_CHECK(checkOverlap(c.op, "y", y, dataBytes, name, inputs[q], need));
  }
  if (!c.device) {
    return reduceCompress ? hostDecompressReduceCompress(codec, acc, exact, out, y, count, dt)
                          : hostDecompressAccumulate(codec, acc, exact, y, count, dt);
  }
  cudaError_t e = reduceCompress ? launchDecompressReduceCompress(codec, acc, exact, out, y, count, dt, stream)
                                 : launchDecompressAccumulate(codec, acc, exact, y, count, dt, stream);
  return cudaResult(e, c.op);
}

}  // namespace

extern "C" {

TACO_API tacoResult_t tacoCodecFromId(int id, int blockSize, tacoCodec_t* codec) {
  TACO_CHECK(checkNotNull(codec, "tacoCodecFromId", "codec"));
  const CodecDesc* d = codecById(id);
  TACO_ARG(d != nullptr, "tacoCodecFromId: id argument %d is not a known codec (0..%d)", id, tacoNumCodecs - 1);
  tacoCodec_t c;
  c.id = id;
  c.blockSize = (blockSize == 0) ? d->defaultBlock : blockSize;
  TACO_ARG(d->blocked || blockSize == 0, "tacoCodecFromId: blockSize argument %d: codec '%s' has no blocks (pass 0)",
           blockSize, d->name);
  TACO_ARG(!d->blocked || (c.blockSize >= TACO_MIN_BLOCK && c.blockSize <= TACO_MAX_BLOCK &&
                           (c.blockSize & (c.blockSize - 1)) == 0),
           "tacoCodecFromId: blockSize argument %d is not a power of two in [%d, %d] (0 selects the default of "
           "codec '%s', %d)",
           blockSize, TACO_MIN_BLOCK, TACO_MAX_BLOCK, d->name, d->defaultBlock);
  TACO_CHECK(codecCheck(c, "tacoCodecFromId"));
  *codec = c;
  return tacoSuccess;
}

TACO_API tacoResult_t tacoCodecFind(const char* spec, tacoCodec_t* codec) {
  TACO_CHECK(checkNotNull(codec, "tacoCodecFind", "codec"));
  return codecParse(spec, codec, "tacoCodecFind", "spec");
}

TACO_API tacoResult_t tacoCodecGetInfo(tacoCodec_t codec, tacoCodecInfo_t* info) {
  TACO_CHECK(checkNotNull(info, "tacoCodecGetInfo", "info"));
  TACO_CHECK(codecCheck(codec, "tacoCodecGetInfo"));
  const CodecDesc* d = codecById(codec.id);
  info->name = d->name;
  info->description = d->description;
  info->id = d->id;
  info->blockSize = codec.blockSize;
  info->codeBits = formatInfo(d->format).bits;
  info->scalesPerBlock = d->blocked ? (d->adaptive ? 2 : 1) : 0;
  info->rotated = d->rotate ? 1 : 0;
  info->formatVersion = d->formatVersion;
  return tacoSuccess;
}

TACO_API tacoResult_t tacoCompressedSize(tacoCodec_t codec, size_t count, tacoDataType_t datatype, size_t* bytes) {
  TACO_CHECK(checkNotNull(bytes, "tacoCompressedSize", "bytes"));
  TACO_CHECK(codecCheck(codec, "tacoCompressedSize"));
  TACO_CHECK(checkDatatype(datatype, "tacoCompressedSize"));
  TACO_CHECK(checkCount(count, "tacoCompressedSize"));  // one rule for 0 elements: every codec function refuses it
  TACO_CHECK(checkCountFits(count, "tacoCompressedSize"));
  *bytes = wireBytes(codec, count, datatype);
  return tacoSuccess;
}

TACO_API tacoResult_t tacoCompress(tacoCodec_t codec, const void* x, size_t count, tacoDataType_t datatype, void* out,
                                   size_t outBytes, tacoStream_t stream) {
  return compressImpl({"tacoCompress", true}, codec, x, count, datatype, out, outBytes, stream);
}

TACO_API tacoResult_t tacoDecompress(tacoCodec_t codec, const void* in, size_t inBytes, void* y, size_t count,
                                     tacoDataType_t datatype, tacoStream_t stream) {
  return decompressImpl({"tacoDecompress", true}, codec, in, inBytes, y, count, datatype, stream);
}

TACO_API tacoResult_t tacoDecompressAccumulate(tacoCodec_t codec, const void* const* inputs, int nInputs,
                                               size_t inBytes, const void* exact, void* y, size_t count,
                                               tacoDataType_t datatype, tacoStream_t stream) {
  return accumulateImpl({"tacoDecompressAccumulate", true}, codec, inputs, nInputs, inBytes, exact, nullptr, 0, y, count,
                        datatype, stream, false);
}

TACO_API tacoResult_t tacoDecompressReduceCompress(tacoCodec_t codec, const void* const* inputs, int nInputs,
                                                   size_t inBytes, const void* exact, void* out, size_t outBytes,
                                                   void* y, size_t count, tacoDataType_t datatype,
                                                   tacoStream_t stream) {
  return accumulateImpl({"tacoDecompressReduceCompress", true}, codec, inputs, nInputs, inBytes, exact, out, outBytes, y,
                        count, datatype, stream, true);
}

TACO_API tacoResult_t tacoHostCompress(tacoCodec_t codec, const void* x, size_t count, tacoDataType_t datatype,
                                       void* out, size_t outBytes) {
  return compressImpl({"tacoHostCompress", false}, codec, x, count, datatype, out, outBytes, nullptr);
}

TACO_API tacoResult_t tacoHostDecompress(tacoCodec_t codec, const void* in, size_t inBytes, void* y, size_t count,
                                         tacoDataType_t datatype) {
  return decompressImpl({"tacoHostDecompress", false}, codec, in, inBytes, y, count, datatype, nullptr);
}

TACO_API tacoResult_t tacoHostDecompressAccumulate(tacoCodec_t codec, const void* const* inputs, int nInputs,
                                                   size_t inBytes, const void* exact, void* y, size_t count,
                                                   tacoDataType_t datatype) {
  return accumulateImpl({"tacoHostDecompressAccumulate", false}, codec, inputs, nInputs, inBytes, exact, nullptr, 0, y,
                        count, datatype, nullptr, false);
}

TACO_API tacoResult_t tacoHostDecompressReduceCompress(tacoCodec_t codec, const void* const* inputs, int nInputs,
                                                       size_t inBytes, const void* exact, void* out, size_t outBytes,
                                                       void* y, size_t count, tacoDataType_t datatype) {
  return accumulateImpl({"tacoHostDecompressReduceCompress", false}, codec, inputs, nInputs, inBytes, exact, out, outBytes,
                        y, count, datatype, nullptr, true);
}

}  // extern "C"

// The codec registry: names, stable ids, parameters and the wire layout.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "codec/codec.h"
#include "core/check.h"

namespace taco {

static const CodecDesc kCodecs[] = {
    {tacoCodecNone, "none", "raw input bytes (collectives: plain NCCL)", kFmtRaw, false, false, false, 0, 1},
    {tacoCodecBf16, "bf16", "round to bfloat16", kFmtBf16, false, false, false, 0, 1},
    {tacoCodecTaco, "taco", "ASH (adaptive scale + Walsh-Hadamard) + dual scale, FP8 E4M3", kFmtE4M3, true,
     true, true, 256, 1},
    {tacoCodecTacoE5M2, "taco-e5m2", "ASH + dual scale, FP8 E5M2", kFmtE5M2, true, true, true, 256, 1},
    {tacoCodecFp8Block, "fp8-block", "per-block absmax FP8 E4M3 (dual scale alone, no rotation)", kFmtE4M3,
     true, false, false, 256, 1},
    {tacoCodecInt8Hadamard, "int8-hadamard", "Walsh-Hadamard rotation + per-block absmax INT8", kFmtInt8, true,
     true, false, 256, 1},
    {tacoCodecInt8Block, "int8-block", "per-block absmax INT8", kFmtInt8, true, false, false, 256, 1},
    {tacoCodecInt4Block, "int4-block", "per-block absmax INT4 (a deliberately lossy control)", kFmtInt4, true,
     false, false, 32, 1},
    {tacoCodecInt6Hadamard, "int6-hadamard", "Walsh-Hadamard rotation + per-block absmax INT6, 3/4 byte per element",
     kFmtInt6, true, true, false, 256, 1},
};
static_assert(sizeof(kCodecs) / sizeof(kCodecs[0]) == tacoNumCodecs, "one registry entry per codec id");

const CodecDesc* codecById(int id) {
  if (id < 0 || id >= tacoNumCodecs) return nullptr;
  return &kCodecs[id];
}

const CodecDesc* codecByName(const char* n) {
  if (n == nullptr) return nullptr;
  for (const CodecDesc& c : kCodecs)
    if (strcmp(c.name, n) == 0) return &c;
  return nullptr;
}

// The registry's names in id order, ", "-separated (for error messages).
static void knownNames(char* out, size_t size) {
  size_t len = 0;
  out[0] = '\0';
  for (const CodecDesc& c : kCodecs) {
    const int n = snprintf(out + len, size - len, "%s%s", len > 0 ? ", " : "", c.name);
    if (n < 0 || (size_t)n >= size - len) break;  // truncated: `out` stays terminated
    len += (size_t)n;
  }
}

tacoResult_t codecCheck(tacoCodec_t codec, const char* what) {
  const CodecDesc* d = codecById(codec.id);
  TACO_ARG(d != nullptr, "%s: codec argument has id %d, which is not a known codec (0..%d)", what, codec.id,
           tacoNumCodecs - 1);
  if (!d->blocked) {
    TACO_ARG(codec.blockSize == 0, "%s: codec argument: codec '%s' has no blocks, but its blockSize is %d", what,
             d->name, codec.blockSize);
    return tacoSuccess;
  }
  const int b = codec.blockSize;
  TACO_ARG(b >= TACO_MIN_BLOCK && b <= TACO_MAX_BLOCK && (b & (b - 1)) == 0,
           "%s: codec argument: block size %d of codec '%s' is not a power of two in [%d, %d]", what, b, d->name,
           TACO_MIN_BLOCK, TACO_MAX_BLOCK);
  return tacoSuccess;
}

tacoResult_t codecParse(const char* spec, tacoCodec_t* codec, const char* what, const char* arg) {
  TACO_ARG(spec != nullptr, "%s: %s argument is NULL", what, arg);
  char name[64];
  const char* colon = strchr(spec, ':');
  const size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
  TACO_ARG(len > 0, "%s: %s argument '%s' has no codec name (name[:block=N])", what, arg, spec);
  TACO_ARG(len < sizeof(name), "%s: %s argument '%s': unknown codec (the name is %zu characters long)", what, arg,
           spec, len);
  memcpy(name, spec, len);
  name[len] = '\0';
  const CodecDesc* d = codecByName(name);
  if (d == nullptr) {
    char known[256];
    knownNames(known, sizeof(known));
    return setError(tacoInvalidArgument, "%s: %s argument '%s': unknown codec '%s' (known: %s)", what, arg, spec,
                    name, known);
  }
  tacoCodec_t c = {d->id, d->defaultBlock};
  if (colon != nullptr) {
    const char* opt = colon + 1;
    TACO_ARG(strncmp(opt, "block=", 6) == 0, "%s: %s argument '%s': expected ':block=N' after the name", what,
             arg, spec);
    TACO_ARG(d->blocked, "%s: %s argument '%s': codec '%s' has no block size", what, arg, spec, d->name);
    // Digits only: no sign, no space, no base prefix (strtol would take "+256" and " 256").
    const char* digits = opt + 6;
    const char* end = digits;
    long b = 0;
    for (; *end >= '0' && *end <= '9'; ++end)
      if (b <= TACO_MAX_BLOCK) b = b * 10 + (*end - '0');
    if (end != digits && *end == ':') {
      TACO_ARG(strncmp(end + 1, "block=", 6) != 0, "%s: %s argument '%s': the block option is given twice", what,
               arg, spec);
      return setError(tacoInvalidArgument, "%s: %s argument '%s': unknown option '%s' (the one option is block=N)",
                      what, arg, spec, end + 1);
    }
    TACO_ARG(end != digits && *end == '\0', "%s: %s argument '%s': block size is not a decimal number", what,
             arg, spec);
    TACO_ARG(b >= TACO_MIN_BLOCK && b <= TACO_MAX_BLOCK && (b & (b - 1)) == 0,
             "%s: %s argument '%s': block size %s is not a power of two in [%d, %d]", what, arg, spec, digits,
             TACO_MIN_BLOCK, TACO_MAX_BLOCK);
    c.blockSize = (int)b;
  }
  TACO_CHECK(codecCheck(c, what));
  *codec = c;
  return tacoSuccess;
}

static size_t roundUp16(size_t x) { return (x + 15) & ~(size_t)15; }

WireLayout wireLayout(tacoCodec_t codec, size_t count, tacoDataType_t dtype) {
  const CodecDesc* d = codecById(codec.id);
  WireLayout w{};
  w.codesOffset = TACO_HEADER_BYTES;
  if (!d->blocked) {
    const int bits = formatInfo(d->format).bits;  // 0: the input's own elements
    w.codesBytes = count * (bits != 0 ? (size_t)bits / 8 : dtypeBytes(dtype));
  } else {
    const size_t B = (size_t)codec.blockSize;
    w.nBlocks = (count + B - 1) / B;
    w.codesBytes = codeBytes(d->format, w.nBlocks * B);
  }
  w.scalesOffset = w.codesOffset + roundUp16(w.codesBytes);
  w.scalesBytes = w.nBlocks * (d->adaptive ? 8 : 4);
  w.totalBytes = w.scalesOffset + roundUp16(w.scalesBytes);
  return w;
}

}  // namespace taco

// The CPU twin of the codec kernels (kernels.cu.in, device/): the same per-block math
// (block_math.h), one block at a time, in plain loops. Bit-identical to the GPU because every
// reduction in the math is order-free and the butterflies run in the same order.
#include <cstdio>
#include <cstring>
#include <vector>

#include "codec/block_math.h"
#include "codec/codec.h"
#include "core/check.h"

namespace taco {
namespace {

using namespace blockmath;

struct HostCodec {
  const CodecDesc* d;
  int B, log2B;
  float c;
};

HostCodec hostCodec(tacoCodec_t codec) {
  HostCodec h;
  h.d = codecById(codec.id);
  h.B = h.d->blocked ? codec.blockSize : 1;
  h.log2B = 0;
  while ((1 << h.log2B) < h.B) ++h.log2B;
  h.c = h.d->rotate ? (float)(1.0 / sqrt((double)codec.blockSize)) : 1.0f;
  return h;
}

float loadElem(const void* p, tacoDataType_t dt, size_t i) {
  switch (dt) {
    case tacoFloat32: return static_cast<const float*>(p)[i];
    case tacoFloat16: return toFloat<__half>(static_cast<const __half*>(p)[i]);
    default: return toFloat<__nv_bfloat16>(static_cast<const __nv_bfloat16*>(p)[i]);
  }
}

void storeElem(void* p, tacoDataType_t dt, size_t i, float v) {
  switch (dt) {
    case tacoFloat32: static_cast<float*>(p)[i] = v; break;
    case tacoFloat16: static_cast<__half*>(p)[i] = fromFloat<__half>(v); break;
    default: static_cast<__nv_bfloat16*>(p)[i] = fromFloat<__nv_bfloat16>(v); break;
  }
}

void fwhtHost(float* v, int B) {
  for (int h = 1; h < B; h <<= 1)
    for (int i = 0; i < B; ++i)
      if (!(i & h)) {
        float a = v[i], b = v[i + h];
        v[i] = a + b;
        v[i + h] = a - b;
      }
}

void writeHeader(uint8_t* out, tacoCodec_t codec, const HostCodec& h, size_t count, tacoDataType_t dt) {
  WireHeader hd;
  hd.magic = kWireMagic;
  hd.codecId = (uint8_t)codec.id;
  hd.formatVersion = (uint8_t)h.d->formatVersion;
  hd.log2Block = (uint8_t)(h.d->blocked ? h.log2B : 0);
  hd.dtype = (uint8_t)dt;
  hd.count = count;
  memcpy(out, &hd, sizeof(hd));
}

// The header of input q (the argument `in` of tacoHostDecompress, else `inputs[q]`) against
// the call's codec, count and datatype.
tacoResult_t checkHeader(const uint8_t* in, int q, tacoCodec_t codec, const HostCodec& h, size_t count,
                         tacoDataType_t dt, const char* op) {
  WireHeader hd;
  memcpy(&hd, in, sizeof(hd));
  char arg[32];
  if (strcmp(op, "tacoHostDecompress") == 0)
    snprintf(arg, sizeof(arg), "in");
  else
    snprintf(arg, sizeof(arg), "inputs[%d]", q);
  TACO_ARG(hd.magic == kWireMagic, "%s: %s argument is not a libtaco buffer (bad magic 0x%08x)", op, arg, hd.magic);
  TACO_ARG(hd.codecId == codec.id, "%s: %s argument was compressed with codec id %d, but the codec argument is %d",
           op, arg, hd.codecId, codec.id);
  TACO_ARG(hd.formatVersion == h.d->formatVersion, "%s: %s argument has wire format version %d, expected %d", op,
           arg, hd.formatVersion, h.d->formatVersion);
  // The header's log2 of the block size (0 for a codec without blocks), printed as it is: a
  // damaged one may be 31 or more, which no shift can turn into a size.
  if (h.d->blocked)
    TACO_ARG(hd.log2Block == h.log2B,
             "%s: %s argument's header has log2 block size %d, but the codec argument's block size %d has log2 %d",
             op, arg, (int)hd.log2Block, h.B, h.log2B);
  else
    TACO_ARG(hd.log2Block == 0, "%s: %s argument's header has log2 block size %d, but codec '%s' has no blocks (0)",
             op, arg, (int)hd.log2Block, h.d->name);
  TACO_ARG(hd.dtype < tacoNumDataTypes, "%s: %s argument has datatype byte %d, which is not a tacoDataType_t", op,
           arg, hd.dtype);
  TACO_ARG(hd.count == count, "%s: %s argument holds %llu elements, but the count argument is %zu", op, arg,
           (unsigned long long)hd.count, count);
  TACO_ARG(h.d->format != kFmtRaw || hd.dtype == dt,
           "%s: %s argument of codec 'none' holds datatype %d, but the datatype argument is %d", op, arg, hd.dtype,
           (int)dt);
  return tacoSuccess;
}

// Codes i .. i+3 of a block (i a multiple of 4) to and from the block's wire bytes bc.
void storeCodes4(uint8_t* bc, int i, const uint8_t (&c)[4], CodeFormat f) {
  switch (f) {
    case kFmtInt4:
      bc[i / 2] = (uint8_t)((c[0] & 0xf) | (c[1] << 4));
      bc[i / 2 + 1] = (uint8_t)((c[2] & 0xf) | (c[3] << 4));
      break;
    case kFmtInt6: {
      const uint32_t w = packInt6(c);
      uint8_t* p = bc + i / 4 * 3;
      p[0] = (uint8_t)w;
      p[1] = (uint8_t)(w >> 8);
      p[2] = (uint8_t)(w >> 16);
      break;
    }
    default: memcpy(bc + i, c, 4);
  }
}
void loadCodes4(const uint8_t* bc, int i, uint8_t (&c)[4], CodeFormat f) {
  switch (f) {
    case kFmtInt4:
      for (int k = 0; k < 4; ++k) c[k] = (uint8_t)((bc[(i + k) / 2] >> (4 * (k & 1))) & 0xf);
      break;
    case kFmtInt6: {
      const uint8_t* p = bc + i / 4 * 3;
      unpackInt6((uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16), c);
      break;
    }
    default: memcpy(c, bc + i, 4);
  }
}

// Compresses one block v[0..B) (destroyed) into codes/scales of block `blk` (wide: the
// block is a sum scaled by 2^-64, its stored s negated: block_math.h, wideScale);
// leaves the decoded codes in v and returns the decode multiplier, and in K the
// decode's exponent shift (block_math.h, decodeShift).
float compressBlock(const HostCodec& h, float* v, uint8_t* codes, float* scales, size_t blk, bool wide, int& K) {
  const int B = h.B;
  const CodeFormat f = h.d->format;
  float m0 = 0.0f;
  for (int i = 0; i < B; ++i) m0 = fmax2(m0, magnitude(v[i]));
  const bool bad = !isFiniteMag(m0);
  float alpha = 1.0f;
  QuantScales qs{0.0f, 0.0f};
  if (!bad) {
    if (h.d->adaptive) {
      const EnergyScale ks = energyScale(m0);
      uint32_t S = 0;
      for (int i = 0; i < B; ++i) S += energyTerm(v[i], ks);
      alpha = adaptiveAlpha(S, ks.e, h.log2B);
      for (int i = 0; i < B; ++i) v[i] *= alpha;
    }
    const float lift = blockLift(m0, h.d->adaptive);
    if (lift != 1.0f)
      for (int i = 0; i < B; ++i) v[i] *= lift;
    float m = m0 * lift;
    if (h.d->rotate) {
      fwhtHost(v, B);
      m = 0.0f;
      for (int i = 0; i < B; ++i) m = fmax2(m, magnitude(v[i]));
    }
    qs = quantScales(m, h.c, f);
    qs.s = unliftScale(qs, lift, h.c);
  } else {
    qs.s = canonicalNaN();
    alpha = canonicalNaN();
  }
  uint8_t* bc = codes + codeBytes(f, blk * (size_t)B);
  for (int i = 0; i < B; i += 4) {
    uint8_t c[4];
    for (int k = 0; k < 4; ++k) {
      c[k] = bad ? formatInfo(f).nanCode : encode(v[i + k] * qs.inv, f);
      v[i + k] = decode(c[k], f);
    }
    storeCodes4(bc, i, c, f);
  }
  const float s = wide ? -qs.s : qs.s;
  if (h.d->adaptive) {
    scales[2 * blk] = alpha;
    scales[2 * blk + 1] = s;
  } else {
    scales[blk] = s;
  }
  K = decodeShift(s, alpha, h.c);
  return decodeScaleShifted(s, alpha, h.c, K);
}

// Block blk's scales (alpha, s) of input q (alpha = 1 without the adaptive scale).
void inputScales(const HostCodec& h, const AccumInputs& in, const WireLayout& w, int q, size_t blk, float& alpha,
                 float& s) {
  const float* sc = reinterpret_cast<const float*>(static_cast<const uint8_t*>(in.ptr[q]) + w.scalesOffset);
  alpha = h.d->adaptive ? sc[2 * blk] : 1.0f;
  s = h.d->adaptive ? sc[2 * blk + 1] : sc[blk];
}

// v[0..B) = sum over inputs of code * d (in input order), then the rotation: the sum still
// scaled by 2^-K, with K the decode's exponent shift (block_math.h, decodeShift) and sat
// whether its unshift saturates (one input that is not wide).
void accumulateBlock(const HostCodec& h, const AccumInputs& in, const WireLayout& w, size_t blk, float* v, int& K,
                     bool& sat) {
  const int B = h.B;
  const CodeFormat f = h.d->format;
  for (int i = 0; i < B; ++i) v[i] = 0.0f;
  K = -64;  // the largest shift of the inputs (0 without inputs)
  sat = false;
  for (int q = 0; q < in.n; ++q) {
    float alpha, s;
    inputScales(h, in, w, q, blk, alpha, s);
    const int k = decodeShift(s, alpha, h.c);
    K = k > K ? k : K;
    if (q == 0) sat = in.n == 1 && !wideScale(s);
  }
  if (in.n == 0) K = 0;
  for (int q = 0; q < in.n; ++q) {
    const uint8_t* base = static_cast<const uint8_t*>(in.ptr[q]);
    float alpha, s;
    inputScales(h, in, w, q, blk, alpha, s);
    const float d = decodeScaleShifted(s, alpha, h.c, K);
    const uint8_t* bc = base + w.codesOffset + codeBytes(f, blk * (size_t)B);
    for (int i = 0; i < B; i += 4) {
      uint8_t c[4];
      loadCodes4(bc, i, c, f);
      for (int k = 0; k < 4; ++k) {
        const float x = decode(c[k], f) * d;
        v[i + k] = q == 0 ? x : v[i + k] + x;
      }
    }
  }
  if (h.d->rotate) fwhtHost(v, B);
}

// Elementwise codecs: the wire element is bf16 (codec bf16) or the dtype itself (none).
float loadWireElem(const HostCodec& h, const uint8_t* payload, tacoDataType_t dt, size_t i) {
  return loadElem(payload, h.d->format == kFmtBf16 ? tacoBfloat16 : dt, i);
}
float storeWireElem(const HostCodec& h, uint8_t* payload, tacoDataType_t dt, size_t i, float v) {
  if (h.d->format != kFmtBf16) {
    storeElem(payload, dt, i, v);
    return loadElem(payload, dt, i);
  }
  __nv_bfloat16* p = reinterpret_cast<__nv_bfloat16*>(payload) + i;
  // fp32 data saturates; a 16-bit sum past bf16's range is Inf, as in the dtype itself
  *p = dt == tacoFloat32 ? toBf16Saturating(v) : fromFloat<__nv_bfloat16>(v);
  return toFloat<__nv_bfloat16>(*p);
}

// The one routine behind all four host entry points: optional accumulation of
// inputs (+ exact), then optional compression into `out`, then optional output y.
tacoResult_t run(tacoCodec_t codec, const AccumInputs* in, const void* x, void* out, void* y, size_t count,
                 tacoDataType_t dt, const char* op) {
  const HostCodec h = hostCodec(codec);
  const WireLayout w = wireLayout(codec, count, dt);
  if (in != nullptr)
    for (int q = 0; q < in->n; ++q)
      TACO_CHECK(checkHeader(static_cast<const uint8_t*>(in->ptr[q]), q, codec, h, count, dt, op));
  uint8_t* o = static_cast<uint8_t*>(out);
  if (o != nullptr) {
    memset(o, 0, w.totalBytes);
    writeHeader(o, codec, h, count, dt);
  }
  if (!h.d->blocked) {
    for (size_t i = 0; i < count; ++i) {
      float v;
      if (in == nullptr) {
        v = loadElem(x, dt, i);
      } else {
        v = 0.0f;
        for (int q = 0; q < in->n; ++q) {
          float d = loadWireElem(h, static_cast<const uint8_t*>(in->ptr[q]) + w.codesOffset, dt, i);
          v = q == 0 ? d : v + d;
        }
        if (x != nullptr) v = v + loadElem(x, dt, i);
      }
      if (o != nullptr) v = storeWireElem(h, o + w.codesOffset, dt, i, v);
      if (y != nullptr) storeElem(y, dt, i, v);
    }
    return tacoSuccess;
  }
  const int B = h.B;
  std::vector<float> v((size_t)B), f((size_t)B), e((size_t)B);
  for (size_t blk = 0; blk < w.nBlocks; ++blk) {
    const size_t b0 = blk * (size_t)B;
    const int n = (int)(count - b0 < (size_t)B ? count - b0 : (size_t)B);
    int K = 0;
    bool sat = false;
    if (in == nullptr) {
      for (int i = 0; i < B; ++i) v[i] = i < n ? loadElem(x, dt, b0 + i) : 0.0f;
    } else {
      accumulateBlock(h, *in, w, blk, v.data(), K, sat);
      f = v;
      // The padding of the last block gets + 0.0f too, as on the GPU (signed zeros).
      if (x != nullptr)
        for (int i = 0; i < B; ++i) e[i] = i < n ? loadElem(x, dt, b0 + i) : 0.0f;
      for (int i = 0; i < B; ++i) {
        if (x != nullptr && K > 0)
          v[i] = unshiftAddTop(v[i], e[i], sat);
        else if (x != nullptr)
          v[i] = (K != 0 ? unshift(v[i], K, sat) : v[i]) + e[i];
        else if (K != 0)
          v[i] = unshift(v[i], K, sat);
      }
    }
    if (o != nullptr) {
      for (int i = n; i < B; ++i) v[i] = 0.0f;  // compress the sum as compress() would: zero padding
      bool wide = false;
      if (in != nullptr) {
        // A sum that overflowed is written wide: scaled by 2^-64, where that is finite.
        bool finite = true;
        for (int i = 0; i < B; ++i) finite = finite && isFiniteMag(magnitude(v[i]));
        if (!finite) {
          bool wideFinite = true;
          for (int i = 0; i < B; ++i) {
            float u = wideValue(f[i], K, sat);
            if (x != nullptr) u = u + e[i] * 0x1p-64f;
            f[i] = i < n ? u : 0.0f;
            wideFinite = wideFinite && isFiniteMag(magnitude(f[i]));
          }
          if (wideFinite) {
            v = f;
            wide = true;
          }
        }
      }
      float d = compressBlock(h, v.data(), o + w.codesOffset, reinterpret_cast<float*>(o + w.scalesOffset), blk,
                              wide, K);
      if (y == nullptr) continue;
      for (int i = 0; i < B; ++i) v[i] = v[i] * d;
      if (h.d->rotate) fwhtHost(v.data(), B);
      if (K != 0)
        for (int i = 0; i < B; ++i) v[i] = unshift(v[i], K, !wide);
    }
    if (y != nullptr)
      for (int i = 0; i < n; ++i) storeElem(y, dt, b0 + i, v[i]);
  }
  return tacoSuccess;
}

}  // namespace

tacoResult_t hostCompress(tacoCodec_t codec, const void* x, size_t count, tacoDataType_t dtype, void* out) {
  return run(codec, nullptr, x, out, nullptr, count, dtype, "tacoHostCompress");
}

tacoResult_t hostDecompress(tacoCodec_t codec, const void* in, void* y, size_t count, tacoDataType_t dtype) {
  AccumInputs a;
  a.n = 1;
  a.ptr[0] = in;
  return run(codec, &a, nullptr, nullptr, y, count, dtype, "tacoHostDecompress");
}

tacoResult_t hostDecompressAccumulate(tacoCodec_t codec, const AccumInputs& in, const void* exact, void* y,
                                      size_t count, tacoDataType_t dtype) {
  return run(codec, &in, exact, nullptr, y, count, dtype, "tacoHostDecompressAccumulate");
}

tacoResult_t hostDecompressReduceCompress(tacoCodec_t codec, const AccumInputs& in, const void* exact, void* out,
                                          void* y, size_t count, tacoDataType_t dtype) {
  return run(codec, &in, exact, out, y, count, dtype, "tacoHostDecompressReduceCompress");
}

}  // namespace taco

// Per-block codec math shared by the GPU kernels and the CPU twin
// (__host__ __device__), and mirrored line by line by python/taco/reference.py.
//
// Bit-exactness between GPU, CPU and numpy rests on three rules:
//  1. every operation is a single IEEE-rounded fp32/fp64 operation (no FMA
//     contraction: nvcc -fmad=false, host -ffp-contract=off);
//  2. every reduction is order-free: max is exact, and the block energy is an
//     int64 sum of truncated fixed-point squares, so any thread mapping gives the
//     same bits;
//  3. the Walsh-Hadamard butterflies run in one fixed order (stride 1, 2, 4, ...),
//     and an order of butterflies is all the FWHT's rounding depends on.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "codec/codec.h"
#include "core/dtype_convert.cuh"

#define TACO_HD __host__ __device__ __forceinline__

namespace taco {
namespace blockmath {

// ASH target RMS (the paper's tau) and the energy floor (its epsilon). With
// sigma >= sqrt(kEps) = 1e-30 the pre-rotation scale alpha stays below 1e30, so
// alpha*x neither overflows nor flushes (docs/codecs.md).
constexpr double kTau = 1.0;
constexpr double kEps = 1e-60;
constexpr uint32_t kCanonicalNaN = 0x7fc00000u;

TACO_HD float canonicalNaN() {
#ifdef __CUDA_ARCH__
  return __uint_as_float(kCanonicalNaN);
#else
  union { uint32_t u; float f; } c{kCanonicalNaN};
  return c.f;
#endif
}

// v is already scaled into the format's range (and finite).
TACO_HD uint8_t encode(float v, CodeFormat f) {
  switch (f) {
    case kFmtE4M3: return (uint8_t)__nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3);
    case kFmtE5M2: return (uint8_t)__nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E5M2);
    case kFmtInt8:
    case kFmtInt6:
    case kFmtInt4: {
      const float lim = formatQmax(f);
      float r = rintf(v);  // round half to even
      r = r > lim ? lim : (r < -lim ? -lim : r);
      return (uint8_t)(int8_t)(int)r;  // int6 / int4: the packing keeps the low 6 / 4 bits
    }
    default: return 0;
  }
}

TACO_HD float decode(uint8_t c, CodeFormat f) {
  switch (f) {
    case kFmtE4M3: return __half2float(__half(__nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)c, __NV_E4M3)));
    case kFmtE5M2: return __half2float(__half(__nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)c, __NV_E5M2)));
    case kFmtInt8: return (float)(int8_t)c;
    case kFmtInt6: return (float)(int8_t)(uint8_t)(c << 2) / 4.0f;  // sign-extend the low 6 bits
    case kFmtInt4: return (float)(int8_t)(uint8_t)(c << 4) / 16.0f;  // sign-extend the low nibble
    default: return 0.0f;
  }
}

// encode() and decode() of the integer formats without a conversion, for the kernels: on sm_90 a
// conversion (F2I, I2F, FRND) issues at an eighth of an FADD's rate, and the integer codes took
// two a code to encode and one to decode. INT8 encodes and INT6 encodes and decodes with them;
// INT8 decodes and INT4 encodes and decodes a word of codes at once (below). The same bytes and
// floats as encode() and decode(), bit for bit (tests/host/test_int_codes.cc):
//  - encode: y = x + 1.5 * 2^23 rounds x to r = rintf(x) (half to even) for |x| < 2^22, and y's
//    bits are 0x4b400000 + r. A float's bits read as an int32 are ordered as its value (every
//    negative below every positive), so clamping them to 0x4b400000 +- lim clamps as encode()
//    does for every x but NaN, the huge and the infinite included; their low byte is then r's
//    two's complement byte, as encode() returns it. NaN is the caller's to mask: encode() gives
//    code 0 there (the conversion's result), a bad block's codes (its inv is NaN).
//  - decode: ((c & mask) ^ half) | 0x4b000000 are the bits of 2^23 + c + half for the code c
//    (two's complement in the byte's low bits), and subtracting 2^23 + half leaves c exactly
//    (+0 for c = 0).
TACO_HD constexpr int intCodeBits(CodeFormat f) { return f == kFmtInt8 ? 8 : (f == kFmtInt6 ? 6 : 4); }
TACO_HD uint8_t encodeIntNoCvt(float x, CodeFormat f) {
  const int32_t lim = (int32_t)formatQmax(f);
  const float y = x + 12582912.0f;  // 1.5 * 2^23
  int32_t b;
  memcpy(&b, &y, 4);
  const int32_t lo = 0x4b400000 - lim, hi = 0x4b400000 + lim;
  b = b < lo ? lo : (b > hi ? hi : b);
  return (uint8_t)(b & 0xff);
}
TACO_HD float decodeIntNoCvt(uint8_t c, CodeFormat f) {
  const uint32_t half = 1u << (intCodeBits(f) - 1), mask = 2 * half - 1;
  const uint32_t bits = (((uint32_t)c & mask) ^ half) | 0x4b000000u;
  float v;
  memcpy(&v, &bits, 4);
  return v - (8388608.0f + (float)half);
}

// The same for a word of codes at once, for the kernels (tests/host/test_int_codes.cc compares
// them with decode() and encode() + the nibble packing, bit for bit):
//  - decode: one XOR flips the sign bit of every code in the word (c + half in each field),
//    the fields go one per byte (INT4's even and odd nibbles by two masks and a shift), and one
//    byte permute a code puts its byte under 2^23's exponent: 2^23 + c + half, less 2^23 + half,
//    is c exactly. Per code about half the integer work of decodeIntNoCvt, and no conversion.
//  - INT4 encode of N = 4 or 8 values v[i] * inv with |v[i] * inv| < 7.5, which holds for every
//    block compress quantises (|v| <= m and inv = 7 / m within two roundings; unliftScale only
//    lowers inv), so that encode()'s clamp never acts: x + 2^23 + k rounds x to c = rintf(x)
//    (k even and >= 8: half to even, and within [2^23, 2^24)), whose bits are 0x4b000000 + k +
//    c. The N bits shifted by 4i and summed are the nibbles c_i + 8 (in [1, 15]: no carries
//    between them) plus a constant that k_i = 8 (k_5 = 88 at N = 8) makes 0 mod 2^(4N); one
//    XOR turns c + 8 into c's two's complement nibble. keep = 0 for a NaN block (inv NaN):
//    code 0, as encode() gives it. About three instructions a code instead of seven with two
//    conversions.

// __byte_perm(x, y, s) (PRMT, without the sign modes), on the host too.
TACO_HD uint32_t bytePerm(uint32_t x, uint32_t y, uint32_t s) {
#ifdef __CUDA_ARCH__
  return __byte_perm(x, y, s);
#else
  const uint64_t xy = ((uint64_t)y << 32) | x;
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) r |= (uint32_t)((xy >> (8 * ((s >> (4 * i)) & 7))) & 0xff) << (8 * i);
  return r;
#endif
}

// Byte i of the flipped word x under 2^23's exponent, less 2^23 + half.
TACO_HD float intWordField(uint32_t x, int i, float half) {
  const uint32_t bits = bytePerm(x, 0x4b000000u, 0x7540u | (uint32_t)i);
  float v;
  memcpy(&v, &bits, 4);
  return v - (8388608.0f + half);
}

// Four INT8 codes (code i in byte i) as decode() gives them.
TACO_HD void decodeInt8Word(uint32_t w, float* out) {
  const uint32_t x = w ^ 0x80808080u;
  for (int i = 0; i < 4; ++i) out[i] = intWordField(x, i, 128.0f);
}

// N = 4 or 8 INT4 codes, code 2i in the low nibble of byte i and 2i + 1 in its high nibble.
template <int N>
TACO_HD void decodeInt4Word(uint32_t w, float* out) {
  const uint32_t x = w ^ 0x88888888u, lo = x & 0x0f0f0f0fu, hi = (x >> 4) & 0x0f0f0f0fu;
  for (int i = 0; i < N / 2; ++i) {
    out[2 * i] = intWordField(lo, i, 8.0f);
    out[2 * i + 1] = intWordField(hi, i, 8.0f);
  }
}

template <int N>
TACO_HD uint32_t encodeInt4Word(const float* v, float inv) {
  static_assert(N == 4 || N == 8, "a word of 4 or 8 INT4 codes");
  uint32_t w = 0;
  for (int i = 0; i < N; ++i) {
    const float y = v[i] * inv + (N == 8 && i == 5 ? 8388696.0f : 8388616.0f);  // 2^23 + k_i
    uint32_t b;
    memcpy(&b, &y, 4);
    w += b << (4 * i);
  }
  w ^= 0x88888888u;
  if (N == 4) w &= 0xffffu;
  return inv == inv ? w : 0u;
}
static_assert(((0x4b000000u + 0u) + ((0x4b000000u + 0u) << 4) + (80u << 20)) == 0u,
              "encodeInt4Word's constants cancel in a word of eight codes");

// INT6 on the wire: codes c0..c3 (6-bit two's complement, the low bits of encode()'s
// bytes) as the little-endian 24-bit word c0 | c1 << 6 | c2 << 12 | c3 << 18, three
// bytes (docs/format.md). Two's complement, as INT8 and INT4: code 0 is zero bits, so
// zero and NaN blocks (NaN code 0) are zero bytes, and decoding is a sign extension.
TACO_HD uint32_t packInt6(const uint8_t* c) {
  return (uint32_t)(c[0] & 0x3f) | ((uint32_t)(c[1] & 0x3f) << 6) | ((uint32_t)(c[2] & 0x3f) << 12) |
         ((uint32_t)(c[3] & 0x3f) << 18);
}
TACO_HD void unpackInt6(uint32_t w, uint8_t* c) {
  c[0] = (uint8_t)(w & 0x3f);
  c[1] = (uint8_t)((w >> 6) & 0x3f);
  c[2] = (uint8_t)((w >> 12) & 0x3f);
  c[3] = (uint8_t)((w >> 18) & 0x3f);
}

// encode() and packInt6 of 16 consecutive values v[i] * inv in one go (the B = 256 16-bit
// compress; reference.py mirrors the two it replaces): their 12 wire bytes as three
// little-endian words o[0..2], ANDed with keep (0 for a NaN block, whose codes are all 0;
// else ~0). Requires |v[i] * inv| < 31.5, where encode()'s clamp never
// acts (a block's |v| <= m and inv = 31 / m up to a few ulps). About three instructions
// per code instead of ten (rounding, clamp, conversion, then byte-wise packing):
//  - x + (2^23 + k_i), k_i even and >= 32, rounds x to the integer c = rintf(x) (half to
//    even: the constant is even), and its bits are 0x4b000000 + k_i + c: the code, offset
//    by k_i, in the low bits, without a conversion;
//  - with offset codes c + 32 in [1, 63] the fields of a word do not borrow from each
//    other, so a word is the sum of its fields' bits shifted into place (one multiply-add
//    each) and one XOR of every field's bit 5 turns c + 32 into c's two's complement;
//  - the rest of the bits (0x4b000000 + k_i - 32, shifted) cancel mod 2^32: k_i = 32 but
//    at positions 3, 8 and 13, chosen so (static_assert below).
TACO_HD constexpr uint32_t int6RunOffset(int i) { return i == 3 || i == 8 ? 15712u : (i == 13 ? 212320u : 32u); }
TACO_HD constexpr uint32_t int6RunSignBits(int w) {  // bit 5 of each field of word w
  return w == 0 ? 0x20820820u : (w == 1 ? 0x08208208u : 0x82082082u);
}

// Word w's share of field i of a run: its bits at shift 6i - 32w (a right shift for the
// field that starts in word w - 1); false when the field lies outside the word.
TACO_HD constexpr bool int6RunField(int i, int w, uint32_t bits, uint32_t& share) {
  const int sh = 6 * i - 32 * w;
  if (sh <= -6 || sh >= 32) return false;
  share = sh >= 0 ? bits << sh : bits >> -sh;
  return true;
}
// The constants of encodeInt6Run: even offsets >= 32, bits besides the offset codes that
// cancel in every word (and that a right shift splits from them without a carry), sign bits.
constexpr bool int6RunConstantsCancel() {
  for (int w = 0; w < 3; ++w) {
    uint32_t sum = 0, signs = 0, share = 0;
    for (int i = 0; i < 16; ++i) {
      const uint32_t rest = 0x4b000000u + int6RunOffset(i) - 32u;
      if (int6RunOffset(i) % 2 != 0 || int6RunOffset(i) < 32) return false;
      if (!int6RunField(i, w, rest, share)) continue;
      if (6 * i < 32 * w && (rest & ((1u << (32 * w - 6 * i)) - 1)) != 0) return false;
      sum += share;
      int6RunField(i, w, 32u, share);
      signs |= share;
    }
    if (sum != 0 || signs != int6RunSignBits(w)) return false;
  }
  return true;
}
static_assert(int6RunConstantsCancel(), "INT6 run offsets");

TACO_HD void encodeInt6Run(const float* v, float inv, uint32_t keep, uint32_t (&o)[3]) {
  uint32_t b[16];
  for (int i = 0; i < 16; ++i) {
    const float x = v[i] * inv;
    const float y = x + (float)(0x800000u + int6RunOffset(i));
    memcpy(&b[i], &y, 4);
  }
  for (int w = 0; w < 3; ++w) {
    uint32_t sum = 0, share = 0;
    for (int i = 0; i < 16; ++i)
      if (int6RunField(i, w, b[i], share)) sum += share;
    o[w] = (sum ^ int6RunSignBits(w)) & keep;
  }
}

// The inverse: decode() of the 16 codes of a run (three little-endian words o[0..2], as
// encodeInt6Run writes them) into f[i], without a conversion. Field u (6 bits, u ^ 32 =
// c + 32 for the two's complement code c) at bit p <= 17 of a word w:
// (w & 0x3f << p) ^ (32 << p) | (150 - p) << 23 are the bits of 2^(23-p) + (c + 32)
// (exponent 23 - p, the field at mantissa bit p), and subtracting 2^(23-p) + 32 leaves c
// exactly (both lie in [2^(23-p), 2^(24-p)); c = 0 gives +0, as decode()).
// Field i starts at bit 6i of the 96; fields 3j..3j+2 are read at p = 0, 6, 12 of the 32
// bits from bit 18j (three masks for the whole run).
TACO_HD float int6FieldValue(uint32_t w, int p) {
  const uint32_t bits = (w & (0x3fu << p)) ^ ((0x20u << p) | ((150u - (uint32_t)p) << 23));
  float f;
  memcpy(&f, &bits, 4);
  return f - ((float)(1u << (23 - p)) + 32.0f);
}
TACO_HD void decodeInt6Run(const uint32_t* o, float* f) {
  const uint32_t w[6] = {o[0], (o[0] >> 18) | (o[1] << 14), o[1] >> 4, (o[1] >> 22) | (o[2] << 10), o[2] >> 8,
                         o[2] >> 26};
  for (int i = 0; i < 16; ++i) f[i] = int6FieldValue(w[i / 3], 6 * (i % 3));
}

// |x| with NaN mapped to +inf, so that max() is exact and NaN-safe.
TACO_HD float magnitude(float x) {
  float a = fabsf(x);
  return (a != a) ? INFINITY : a;
}
TACO_HD float fmax2(float a, float b) { return fmaxf(a, b); }  // exact; inputs are never NaN
TACO_HD bool isFiniteMag(float m) { return m <= FLT_MAX; }

// Block energy in 10-bit fixed point, exact and order-free: with
// m0 = max|x| = f * 2^E (f in [0.5, 1)), r = round(|x| * 2^(10-E)) lies in
// [0, 1024] (the multiply split in two power-of-two steps so each factor is a
// normal float; the rounding is the 2^23 trick, all single fp32 ops), and
// S = sum r^2 <= 2^30 is an int32. alpha only normalises the range (it cancels
// in exact arithmetic), so 10 bits of magnitude are plenty for sigma.
struct EnergyScale {
  float k1, k2;
  int e;
};
TACO_HD EnergyScale energyScale(float m0) {
  EnergyScale k;
  frexpf(m0, &k.e);
  const int sh = 10 - k.e;
  const int a = sh / 2, b = sh - a;
  k.k1 = ldexpf(1.0f, a);
  k.k2 = ldexpf(1.0f, b);
  return k;
}
// r^2 for one element; unsigned so that a non-finite x (whose block is then
// marked bad and its energy ignored) wraps instead of overflowing.
TACO_HD uint32_t energyTerm(float x, const EnergyScale& k) {
  const float u = (fabsf(x) * k.k1) * k.k2 + 8388608.0f;  // 2^23: rounds u to an integer in the mantissa
  uint32_t bits;
  memcpy(&bits, &u, 4);
  const uint32_t r = bits - 0x4b000000u;
  return r * r;
}
// The same with one multiply, valid when 2^(10-E) is a normal float: scaling by a
// power of two is exact, and where (|x|*k1)*k2 would have lost bits to underflow
// both forms round to r = 0.
TACO_HD bool energySingleScale(const EnergyScale& k) { return 10 - k.e >= -126 && 10 - k.e <= 127; }
TACO_HD uint32_t energyTermSingle(float x, float k) {
  const float u = fabsf(x) * k + 8388608.0f;
  uint32_t bits;
  memcpy(&bits, &u, 4);
  const uint32_t r = bits - 0x4b000000u;
  return r * r;
}

// alpha = tau / sqrt(mean(x^2) + eps), from the fixed-point energy.
TACO_HD float adaptiveAlpha(uint32_t energy, int e, int log2B) {
  double meanSq = ldexp((double)energy, 2 * e - 20 - log2B);
  double sigma = sqrt(meanSq + kEps);
  return (float)(kTau / sigma);
}

// Scales of one block from m = max|Z'| (Z' the unnormalised rotation, or the
// input itself without rotation). c = 1/sqrt(B) with rotation, else 1.
struct QuantScales {
  float s;    // stored post-rotation scale: max|Z| / Qmax
  float inv;  // multiplier taking Z' into code range
};
TACO_HD QuantScales quantScales(float m, float c, CodeFormat f) {
  const float q = formatQmax(f);
  QuantScales r;
  r.s = (m * c) / q;
  r.inv = m > 0.0f ? q / m : 0.0f;
  return r;
}

// Blocks without the adaptive scale are quantised after an exact power-of-two lift
// when their max is below 2^-64 (2^64, so that Qmax / m cannot overflow) or at least
// 2^64 (2^-64, so that the rotation cannot); the stored scale is divided back. The
// scaling is exact: a lifted block gets the codes and scale it would get without it
// wherever that arithmetic neither overflows nor underflows.
TACO_HD float blockLift(float m0, bool adaptive) {
  if (adaptive) return 1.0f;
  return m0 < 0x1p-64f ? 0x1p64f : (m0 >= 0x1p64f ? 0x1p-64f : 1.0f);
}

TACO_HD float nextUp(float s) {  // the next float above s >= 0 (finite)
  uint32_t b;
  memcpy(&b, &s, 4);
  ++b;
  memcpy(&s, &b, 4);
  return s;
}

// qs from quantScales of the lifted block; returns the stored scale s = qs.s / lift.
// That division is exact unless s falls into the subnormal range or overflows: then
// s is rounded up (saturated at FLT_MAX), so that the codes stay within Qmax, and the
// codes are taken from that s (inv = c / (s * lift)), so that they match the scale the
// decoder sees rather than one the wire cannot hold (docs/codecs.md, "Range").
TACO_HD float unliftScale(QuantScales& qs, float lift, float c) {
  const float sl = qs.s;
  float s = sl / lift;
  if (s * lift != sl) {
    if (s > FLT_MAX) {
      s = FLT_MAX;
    } else if (s * lift < sl) {
      s = nextUp(s);
    }
    qs.inv = c / (s * lift);
  }
  return s;
}

// Per-element decode multiplier: code * d, then (with rotation) FWHT.
TACO_HD float decodeScale(float s, float alpha, float c) { return (s * c) / alpha; }

// The decode of a block runs scaled by an exact 2^-K when its multiplier d = (s*c)/alpha
// is outside [2^-100, 2^100]: K = 64 above, where the rotation back could overflow,
// K = -64 below, where code * d would lose bits to underflow, 0 (the plain decode)
// elsewhere. decodeShift() tells from t = s*c and alpha without the division; a block of
// several inputs takes the largest K of its inputs (a NaN input gives 0, and makes the
// whole block NaN whatever K is). With K != 0, d is decodeScaleShifted(), and every
// decoded value goes through unshift() after the rotation. Wherever the plain decode is
// finite and free of subnormals the two agree bit for bit (scaling by a power of two is
// exact): only the extremes change.
//
// A wide block (s < 0, its sign bit set; compress never writes one) holds a sum past
// FLT_MAX, written by decompress-reduce-compress scaled by 2^-64: its true scale is
// |s| 2^64, so it takes K = 64 and d = (|s| c) / alpha, and it is not saturated
// (docs/codecs.md, "Overflow").
TACO_HD bool wideScale(float s) { return s < 0.0f; }
TACO_HD int decodeShift(float s, float alpha, float c) {
  if (wideScale(s)) return 64;
  const float t = fabsf(s * c), a = fabsf(alpha);
  return t > a * 0x1p100f ? 64 : (t < a * 0x1p-100f ? -64 : 0);
}
TACO_HD float decodeScaleShifted(float s, float alpha, float c, int K) {
  if (wideScale(s)) return decodeScale(-s, alpha, c);  // K = 64
  return K == 0 ? decodeScale(s, alpha, c) : decodeScale(s * (K > 0 ? 0x1p-64f : 0x1p64f), alpha, c);
}

// FLT_MAX * 2^-64: the largest value a decode at K = 64 takes back to a finite float.
constexpr float kTopScaled = 0x1.fffffep63f;
TACO_HD float saturateTop(float v) { return fabsf(v) > kTopScaled ? copysignf(kTopScaled, v) : v; }

// Back from 2^-K (K != 0): rounded once into the subnormal range (K < 0); with K > 0
// saturated at +-FLT_MAX when `sat` (one input that is not wide: a lone finite input never
// decodes to Inf), else +-Inf past it, as a sum past FLT_MAX is in IEEE arithmetic. NaN
// stays NaN.
TACO_HD float unshift(float v, int K, bool sat) {
  if (K < 0) return v * 0x1p-64f;
  return (sat ? saturateTop(v) : v) * 0x1p64f;
}

// The decoded sum f of a block at K = 64 (before unshift) plus the exact input e: the
// saturated f * 2^64 + e, except where f alone is past FLT_MAX, where e joins the sum
// scaled, (f + e * 2^-64) * 2^64, so that a sum the exact input brings back below
// FLT_MAX is finite and one it does not is +-Inf. With sat, f is within range and this is
// unshift(f, 64, true) + e, bit for bit.
TACO_HD float unshiftAddTop(float f, float e, bool sat) {
  if (sat) f = saturateTop(f);
  return fabsf(f) > kTopScaled ? (f + e * 0x1p-64f) * 0x1p64f : f * 0x1p64f + e;
}

// The block's sum f (before unshift) scaled by 2^-64, for the wide block that
// decompress-reduce-compress writes where the sum overflowed; the exact input is added
// to it as e * 2^-64.
TACO_HD float wideValue(float f, int K, bool sat) {
  if (K > 0) return sat ? saturateTop(f) : f;
  return (K < 0 ? f * 0x1p-64f : f) * 0x1p-64f;  // unshift(f, K) * 2^-64
}

// Element conversions (core/dtype_convert.cuh).
using taco::fromFloat;
using taco::toFloat;

// The bf16 codec's rounding of an fp32 value: to nearest even, saturating, as the FP8
// codes do: a finite value beyond bf16's largest finite (one that would round to Inf,
// magnitude bits 0x7f7f8000 ... 0x7f7fffff) becomes +-0x7f7f; NaN and Inf stay.
TACO_HD __nv_bfloat16 toBf16Saturating(float v) {
  uint32_t u;
  memcpy(&u, &v, 4);
  if ((u & 0x7fffffffu) - 0x7f7f8000u < 0x8000u) u -= 0x8000u;  // now rounds down to 0x7f7f
  memcpy(&v, &u, 4);
  return fromFloat<__nv_bfloat16>(v);
}

}  // namespace blockmath
}  // namespace taco

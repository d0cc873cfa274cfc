// encodeInt6Run (codec/block_math.h), the INT6 encode and packing of the B = 256 16-bit
// compress, against encode() and packInt6, the CPU twin's path: the same wire bytes for
// every value a block's scale allows (|x| < 31.5), at every position of a run, and all
// zeros for a NaN block. Also checks that bound for the scales the kernel computes, and
// decodeInt6Run (the B = 256 decompress) against unpackInt6 and decode(): the same float
// bits for every code at every position.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "check.h"
#include "float_bits.h"
#include "codec/block_math.h"

using namespace taco::blockmath;
using taco::kFmtInt6;

namespace {

// The wire's 12 bytes of 16 codes through encode() and packInt6, as three little-endian words.
void reference(const float* v, float inv, uint32_t (&o)[3]) {
  uint8_t bytes[12];
  for (int k = 0; k < 4; ++k) {
    uint8_t c[4];
    for (int i = 0; i < 4; ++i) c[i] = encode(v[4 * k + i] * inv, kFmtInt6);
    const uint32_t w = packInt6(c);
    for (int j = 0; j < 3; ++j) bytes[3 * k + j] = (uint8_t)(w >> (8 * j));
  }
  for (int w = 0; w < 3; ++w)
    o[w] = (uint32_t)bytes[4 * w] | (uint32_t)bytes[4 * w + 1] << 8 | (uint32_t)bytes[4 * w + 2] << 16 |
           (uint32_t)bytes[4 * w + 3] << 24;
}

int failures = 0;
void check(const float* v, float inv, const char* what) {
  uint32_t want[3], got[3];
  reference(v, inv, want);
  encodeInt6Run(v, inv, ~0u, got);
  const bool same = memcmp(want, got, sizeof want) == 0;
  if (!same && failures++ < 5)
    TEST_ASSERT_MSG(same, "%s: %08x %08x %08x, want %08x %08x %08x (v[0] = %a, inv = %a)", what, got[0], got[1],
                    got[2], want[0], want[1], want[2], v[0], inv);
}

}  // namespace

int main() {
  std::mt19937 rng(20240611);
  // Values near every integer and half-integer below 31.5 in magnitude (ties, and a few
  // ulps to either side), both signs, zero and subnormals: each one at each position.
  std::vector<float> edge = {0.0f, -0.0f, 0x1p-149f, -0x1p-149f, 0x1p-126f, 0.49999997f, -0.49999997f};
  for (int n = 0; n <= 63; ++n) {
    const float h = 0.5f * (float)n;
    if (h >= 31.5f) break;
    for (int d = -4; d <= 4; ++d) {
      const uint32_t u = floatToBits(h);
      const float x = h == 0.0f ? bitsToFloat((uint32_t)(d < 0 ? -d : d)) : bitsToFloat(u + (uint32_t)d);
      if (!(fabsf(x) < 31.5f)) continue;
      edge.push_back(x);
      edge.push_back(-x);
    }
  }
  std::uniform_int_distribution<size_t> pick(0, edge.size() - 1);
  size_t cases = 0;
  for (int pos = 0; pos < 16; ++pos)
    for (float x : edge) {
      float v[16];
      for (int i = 0; i < 16; ++i) v[i] = edge[pick(rng)];
      v[pos] = x;
      check(v, 1.0f, "edge values");
      ++cases;
    }
  // Every code at every position: v = code * inv^-1 with inv = 1.
  for (int pos = 0; pos < 16; ++pos)
    for (int c = -31; c <= 31; ++c) {
      float v[16];
      for (int i = 0; i < 16; ++i) v[i] = (float)((int)(rng() % 63) - 31);
      v[pos] = (float)c;
      check(v, 1.0f, "codes");
      ++cases;
    }
  // Blocks as the kernel scales them (c = 1/16, B = 256): input max m0 of any magnitude,
  // blockLift's lift, m = max|Z'| anywhere from m0 * lift to 256 m0 * lift, inv from
  // quantScales and unliftScale (blockScales), values up to m in magnitude, one of them
  // +-m. Every |v * inv| stays below 31.5, so encode()'s clamp never acts.
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f), growth(0.0f, 8.0f);
  std::uniform_int_distribution<int> expo(-149, 127);
  for (int n = 0; n < 200000; ++n) {
    const float m0 = ldexpf(1.0f + (float)(rng() % 8388608) * 0x1p-23f, expo(rng));
    if (!(m0 <= FLT_MAX)) continue;
    const float c = 1.0f / 16.0f, lift = blockLift(m0, false);
    const float log2Growth = n % 4 == 0 ? (n % 8 == 0 ? 8.0f : 0.0f) : growth(rng);  // the extremes, else random
    const float m = (m0 * lift) * exp2f(log2Growth);
    QuantScales qs = quantScales(m, c, kFmtInt6);
    if (lift != 1.0f) unliftScale(qs, lift, c);
    float v[16];
    for (int i = 0; i < 16; ++i) v[i] = unit(rng) * m;
    v[rng() % 16] = (rng() & 1) ? m : -m;
    TEST_ASSERT_MSG(fabsf(m * qs.inv) < 31.5f, "m0 = %a, m = %a: m * inv = %a", m0, m, m * qs.inv);
    check(v, qs.inv, "scaled blocks");
    ++cases;
  }
  // A NaN block: inv NaN, keep 0, every code 0 (encode's NaN code).
  {
    float v[16];
    for (int i = 0; i < 16; ++i) v[i] = (i & 1) ? INFINITY : -1.0f;
    uint32_t want[3], got[3];
    reference(v, canonicalNaN(), want);
    encodeInt6Run(v, canonicalNaN(), 0u, got);
    TEST_ASSERT(want[0] == 0 && want[1] == 0 && want[2] == 0);
    TEST_ASSERT(memcmp(want, got, sizeof want) == 0);
  }
  TEST_ASSERT_MSG(failures == 0, "%d of %zu runs differ", failures, cases);

  // decodeInt6Run: every 6-bit value at every position of a run, over random other fields,
  // then random runs; compared bit for bit (so +0 against -0 counts).
  int decodeFailures = 0;
  auto checkDecode = [&](const uint32_t (&o)[3]) {
    float got[16];
    decodeInt6Run(o, got);
    for (int k = 0; k < 4; ++k) {
      uint8_t bytes[3], c[4];
      for (int j = 0; j < 3; ++j) {
        const int byte = 3 * k + j;
        bytes[j] = (uint8_t)(o[byte / 4] >> (8 * (byte % 4)));
      }
      unpackInt6((uint32_t)bytes[0] | (uint32_t)bytes[1] << 8 | (uint32_t)bytes[2] << 16, c);
      for (int i = 0; i < 4; ++i) {
        const float want = decode(c[i], kFmtInt6);
        if (floatToBits(want) != floatToBits(got[4 * k + i]) && decodeFailures++ < 5)
          TEST_ASSERT_MSG(false, "decodeInt6Run field %d of %08x %08x %08x: %a, want %a", 4 * k + i, o[0], o[1],
                          o[2], got[4 * k + i], want);
      }
    }
  };
  size_t decodeRuns = 0;
  for (int field = 0; field < 16; ++field)
    for (uint32_t u = 0; u < 64; ++u)
      for (int background = 0; background < 8; ++background) {
        uint32_t o[3] = {(uint32_t)rng(), (uint32_t)rng(), (uint32_t)rng()};
        for (int b = 0; b < 6; ++b) {  // clear the field's 6 bits, then set u
          const int bit = 6 * field + b;
          o[bit / 32] = (o[bit / 32] & ~(1u << (bit % 32))) | ((u >> b) & 1u) << (bit % 32);
        }
        checkDecode(o);
        ++decodeRuns;
      }
  for (int n = 0; n < 200000; ++n, ++decodeRuns) {
    const uint32_t o[3] = {(uint32_t)rng(), (uint32_t)rng(), (uint32_t)rng()};
    checkDecode(o);
  }
  TEST_ASSERT_MSG(decodeFailures == 0, "%d decode mismatches in %zu runs", decodeFailures, decodeRuns);
  return TEST_REPORT();
}

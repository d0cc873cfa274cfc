// encodeIntNoCvt and decodeIntNoCvt (codec/block_math.h), the integer formats' encode and
// decode without a conversion instruction that the kernels take, against encode() and
// decode(), the CPU twin's: the same code byte for every non-NaN value (near every integer
// and half-integer of the range, a few ulps to either side; beyond the clamp; huge, infinite,
// subnormal; and random bit patterns), and the same float bits for every byte. And the word
// forms (decodeInt8Word, decodeInt4Word, encodeInt4Word) against decode() and encode() code by
// code, every code value at every position of a word, and random words and values.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "check.h"
#include "float_bits.h"
#include "codec/block_math.h"

using namespace taco;
using namespace taco::blockmath;

namespace {

int failures = 0;
size_t cases = 0;
void checkEncode(float x, CodeFormat f) {
  ++cases;
  const uint8_t want = encode(x, f), got = encodeIntNoCvt(x, f);
  if (want != got && failures++ < 8)
    TEST_ASSERT_MSG(want == got, "format %d, x = %a: code 0x%02x, want 0x%02x", (int)f, x, got, want);
}

// A word's codes decoded one by one with decode(): byte i (INT8), or nibble i (INT4).
float byteCode(uint32_t w, int i) { return decode((uint8_t)(w >> (8 * i)), kFmtInt8); }
float nibbleCode(uint32_t w, int i) { return decode((uint8_t)((w >> (4 * i)) & 0xf), kFmtInt4); }

template <int N>
void checkInt4Decode(uint32_t w) {
  float got[N];
  decodeInt4Word<N>(w, got);
  for (int i = 0; i < N; ++i)
    TEST_ASSERT_MSG(floatToBits(got[i]) == floatToBits(nibbleCode(w, i)), "INT4 word 0x%08x, code %d: %a, want %a",
                    w, i, got[i], nibbleCode(w, i));
}

// encodeInt4Word against encode() of each v[i] * inv, packed a nibble a code.
template <int N>
void checkInt4Encode(const float* v, float inv) {
  ++cases;
  uint32_t want = 0;
  for (int i = 0; i < N; ++i) want |= (uint32_t)(encode(v[i] * inv, kFmtInt4) & 0xf) << (4 * i);
  const uint32_t got = encodeInt4Word<N>(v, inv);
  if (want != got && failures++ < 8)
    TEST_ASSERT_MSG(want == got, "INT4 encode of %d codes, v[0] = %a, inv = %a: 0x%08x, want 0x%08x", N, v[0], inv,
                    got, want);
}

void checkWords(std::mt19937& rng) {
  // Every code at every position, the other positions random; then random words.
  std::uniform_int_distribution<uint32_t> anyBits;
  for (int pos = 0; pos < 8; ++pos)
    for (uint32_t c = 0; c < 16; ++c)
      for (int r = 0; r < 16; ++r) {
        const uint32_t w = (anyBits(rng) & ~(0xfu << (4 * pos))) | (c << (4 * pos));
        checkInt4Decode<8>(w);
        checkInt4Decode<4>(w & 0xffffu);
      }
  for (int pos = 0; pos < 4; ++pos)
    for (uint32_t c = 0; c < 256; ++c) {
      const uint32_t w = (anyBits(rng) & ~(0xffu << (8 * pos))) | (c << (8 * pos));
      float got[4];
      decodeInt8Word(w, got);
      for (int i = 0; i < 4; ++i)
        TEST_ASSERT_MSG(floatToBits(got[i]) == floatToBits(byteCode(w, i)), "INT8 word 0x%08x, code %d: %a, want %a",
                        w, i, got[i], byteCode(w, i));
    }
  for (int i = 0; i < 100000; ++i) {
    const uint32_t w = anyBits(rng);
    checkInt4Decode<8>(w);
    float got[4];
    decodeInt8Word(w, got);
    for (int q = 0; q < 4; ++q) TEST_ASSERT(floatToBits(got[q]) == floatToBits(byteCode(w, q)));
  }
  // Encode: values as compress quantises them (|v| <= m, inv = 7 / m), near every
  // half-integer of the range (ties), at the range's ends, signed zeros, a zero block
  // (inv = 0), and a NaN block (inv NaN: every code 0).
  std::vector<float> xs;
  for (int n = -14; n <= 14; ++n)
    for (int d = -3; d <= 3; ++d) xs.push_back(n == 0 ? bitsToFloat((uint32_t)(d < 0 ? -d : d)) * (d < 0 ? -1.0f : 1.0f)
                                                      : bitsToFloat(floatToBits(0.5f * (float)n) + (uint32_t)d));
  xs.push_back(-0.0f);
  for (size_t i = 0; i + 8 <= xs.size(); ++i) {
    checkInt4Encode<8>(&xs[i], 1.0f);
    checkInt4Encode<4>(&xs[i], 1.0f);
  }
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::uniform_int_distribution<int> expo(-60, 60);
  for (int i = 0; i < 200000; ++i) {
    float v[8], m = 0.0f;
    const float scale = std::ldexp(1.0f, expo(rng));
    for (float& x : v) {
      x = unit(rng) * scale;
      m = std::fmax(m, std::fabs(x));
    }
    if (i % 3 == 0) v[i % 8] = (i & 8) ? m : -m;  // the block's max itself
    const float inv = m > 0.0f ? 7.0f / m : 0.0f;  // quantScales
    checkInt4Encode<8>(v, inv);
    checkInt4Encode<4>(v, inv);
    checkInt4Encode<4>(v + 4, inv);
  }
  const float zeros[8] = {0.0f, -0.0f, 0.0f, -0.0f, 0.0f, 0.0f, -0.0f, 0.0f};
  checkInt4Encode<8>(zeros, 0.0f);
  const float some[8] = {1.0f, -2.0f, 3.0f, 7.0f, -7.0f, 0.5f, -0.5f, 2.5f};
  TEST_ASSERT(encodeInt4Word<8>(some, NAN) == 0u && encodeInt4Word<4>(some, NAN) == 0u);
  TEST_ASSERT(encodeInt4Word<8>(some, 1.0f) == 0x200973e1u);  // 1, -2, 3, 7, -7, then ties: 0, -0, 2
}

}  // namespace

int main() {
  const CodeFormat formats[] = {kFmtInt8, kFmtInt6, kFmtInt4};
  std::mt19937 rng(20261204);
  for (CodeFormat f : formats) {
    const float lim = formatQmax(f);
    // Every byte decodes to the same float bits (the low bits are the code; the high bits,
    // which the packing never sets, are ignored by both).
    for (int c = 0; c < 256; ++c) {
      const float want = decode((uint8_t)c, f), got = decodeIntNoCvt((uint8_t)c, f);
      TEST_ASSERT_MSG(floatToBits(want) == floatToBits(got), "format %d, code 0x%02x: %a, want %a", (int)f, c, got,
                      want);
    }
    // Near every half-integer up to the clamp and past it (ties round to even), both signs.
    std::vector<float> xs = {0.0f, -0.0f, 0x1p-149f, -0x1p-149f, 0x1p-126f, -0x1p-126f, 0.49999997f, -0.49999997f};
    for (int n = 0; n <= (int)(4 * lim); ++n) {
      const float h = 0.5f * (float)n;
      for (int d = -4; d <= 4; ++d) {
        const float x = h == 0.0f ? bitsToFloat((uint32_t)(d < 0 ? -d : d)) : bitsToFloat(floatToBits(h) + (uint32_t)d);
        xs.push_back(x);
        xs.push_back(-x);
      }
    }
    // Where the rounding constant stops rounding to integers (|x| >= 2^22), and far beyond.
    const float big[] = {0x1p22f, 0x1.000002p22f, 0x1.fffffep21f, 0x1p23f, 0x1.8p23f, 0x1.8p24f, 0x1p24f,
                         1e30f,   3.4028235e38f, INFINITY};
    for (float b : big) {
      xs.push_back(b);
      xs.push_back(-b);
    }
    for (float x : xs) checkEncode(x, f);
    // Random values in and around the range, and random bit patterns but NaN.
    std::uniform_real_distribution<float> inRange(-2.0f * lim, 2.0f * lim);
    for (int i = 0; i < 200000; ++i) checkEncode(inRange(rng), f);
    std::uniform_int_distribution<uint32_t> anyBits;
    for (int i = 0; i < 200000; ++i) {
      const float x = bitsToFloat(anyBits(rng));
      if (x == x) checkEncode(x, f);
    }
  }
  TEST_ASSERT_MSG(cases > 1000000, "%zu encode cases", cases);
  checkWords(rng);
  return TEST_REPORT();
}

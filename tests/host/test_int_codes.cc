// encodeIntNoCvt and decodeIntNoCvt (codec/block_math.h), the integer formats' encode and
// decode without a conversion instruction that the kernels take, against encode() and
// decode(), the CPU twin's: the same code byte for every non-NaN value (near every integer
// and half-integer of the range, a few ulps to either side; beyond the clamp; huge, infinite,
// subnormal; and random bit patterns), and the same float bits for every byte.
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
  return TEST_REPORT();
}

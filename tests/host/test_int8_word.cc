// encodeInt8Word (codec/block_math.h), the INT8 encode of the B = 256 16-bit compress,
// against encode(), the CPU twin's path: the same code bytes for every value a block's
// scale allows (|x| < 127.5: ties, their neighbours, zeros, subnormals), at every
// position of a word, all zeros for a NaN block, and that bound for the scales the
// kernel computes.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "check.h"
#include "codec/block_math.h"
#include "int_code_cases.h"

using namespace taco::blockmath;
using taco::kFmtInt8;

namespace {

uint32_t reference(const float* v, float inv) {
  uint32_t w = 0;
  for (int i = 0; i < 4; ++i) w |= (uint32_t)encode(v[i] * inv, kFmtInt8) << (8 * i);
  return w;
}

int failures = 0;
void check(const float* v, float inv, const char* what) {
  const uint32_t want = reference(v, inv), got = encodeInt8Word(v, inv, ~0u);
  if (want != got && failures++ < 5)
    TEST_ASSERT_MSG(false, "%s: %08x, want %08x (v = %a %a %a %a, inv = %a)", what, got, want, v[0], v[1], v[2],
                    v[3], inv);
}

}  // namespace

int main() {
  std::mt19937 rng(20261202);
  // Values near every integer and half-integer below 127.5 in magnitude: each one at each position.
  const std::vector<float> edge = int_code_cases::edgeValues(127.5f);
  std::uniform_int_distribution<size_t> pick(0, edge.size() - 1);
  size_t cases = 0;
  for (int pos = 0; pos < 4; ++pos)
    for (float x : edge) {
      float v[4];
      for (int i = 0; i < 4; ++i) v[i] = edge[pick(rng)];
      v[pos] = x;
      check(v, 1.0f, "edge values");
      ++cases;
    }
  // Blocks as the kernel scales them (c = 1/16, B = 256), as in test_int6_run: every
  // |v * inv| stays below 127.5, so encode()'s clamp never acts.
  for (int n = 0; n < 400000; ++n) {
    float v[4], m;
    QuantScales qs;
    if (!int_code_cases::scaledBlock(rng, n, kFmtInt8, v, 4, m, qs)) continue;
    TEST_ASSERT_MSG(fabsf(m * qs.inv) < 127.5f, "case %d, m = %a: m * inv = %a", n, m, m * qs.inv);
    check(v, qs.inv, "scaled blocks");
    ++cases;
  }
  // A NaN block: inv NaN, keep 0, every code 0 (encode's NaN code).
  {
    const float v[4] = {-1.0f, INFINITY, 2.0f, -INFINITY};
    TEST_ASSERT(reference(v, canonicalNaN()) == 0u);
    TEST_ASSERT(encodeInt8Word(v, canonicalNaN(), 0u) == 0u);
  }
  TEST_ASSERT_MSG(failures == 0, "%d of %zu words differ", failures, cases);
  return TEST_REPORT();
}

// Inputs for the host tests of the integer encoders' fast paths (test_int6_run,
// test_int8_word): the values where rounding and the clamp can go wrong, and blocks
// scaled as the kernels scale them.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "codec/block_math.h"

namespace int_code_cases {

inline float bitsToFloat(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
inline uint32_t floatToBits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

// Values near every integer and half-integer below `limit` (a half-integer) in magnitude
// (ties, and a few ulps to either side), both signs, zeros and subnormals.
inline std::vector<float> edgeValues(float limit) {
  std::vector<float> edge = {0.0f, -0.0f, 0x1p-149f, -0x1p-149f, 0x1p-126f, 0.49999997f, -0.49999997f};
  for (int n = 0; 0.5f * (float)n < limit; ++n) {
    const float h = 0.5f * (float)n;
    for (int d = -4; d <= 4; ++d) {
      const float x = h == 0.0f ? bitsToFloat((uint32_t)(d < 0 ? -d : d)) : bitsToFloat(floatToBits(h) + (uint32_t)d);
      if (!(fabsf(x) < limit)) continue;
      edge.push_back(x);
      edge.push_back(-x);
    }
  }
  return edge;
}

// Block n of a random series as a kernel scales it (c = 1/16, B = 256): an input max m0 of
// any magnitude, blockLift's lift, m = max|Z'| anywhere from m0 * lift to 256 m0 * lift, and
// inv from quantScales and unliftScale (as blockScales). Fills v[0..len) with values up to
// m in magnitude, one of them +-m. False when m0 overflowed (skip the case).
inline bool scaledBlock(std::mt19937& rng, int n, taco::CodeFormat fmt, float* v, int len, float& m,
                        taco::blockmath::QuantScales& qs) {
  using namespace taco::blockmath;
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f), growth(0.0f, 8.0f);
  std::uniform_int_distribution<int> expo(-149, 127);
  const float m0 = ldexpf(1.0f + (float)(rng() % 8388608) * 0x1p-23f, expo(rng));
  if (!(m0 <= FLT_MAX)) return false;
  const float c = 1.0f / 16.0f, lift = blockLift(m0, false);
  const float log2Growth = n % 4 == 0 ? (n % 8 == 0 ? 8.0f : 0.0f) : growth(rng);  // the extremes, else random
  m = (m0 * lift) * exp2f(log2Growth);
  qs = quantScales(m, c, fmt);
  if (lift != 1.0f) unliftScale(qs, lift, c);
  for (int i = 0; i < len; ++i) v[i] = unit(rng) * m;
  v[rng() % len] = (rng() & 1) ? m : -m;
  return true;
}

}  // namespace int_code_cases

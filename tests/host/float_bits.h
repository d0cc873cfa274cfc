// A float's bits and back, for the host tests that compare codec results bit for bit.
#pragma once
#include <cstdint>
#include <cstring>

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

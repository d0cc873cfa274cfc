// The code formats' rows (codec/format.h) and what follows from them: the wire bytes of a
// block's codes, and which formats the staged (cp.async) pipelines take per element size
// (stagedCodes: a chunk's codes copied whole, 4, 8 or 16 bytes; stagedSumCodes), against a table written out
// by hand from docs/format.md.
#include <cstddef>

#include "check.h"
#include "codec/format.h"

using namespace taco;

int main() {
  TEST_ASSERT(formatRowsConsistent());

  // codeBytes of a 256-element block: a byte per code, 3 bytes per 4 INT6 codes, a byte per 2 INT4 codes.
  TEST_ASSERT_EQ_INT((int)codeBytes(kFmtE4M3, 256), 256);
  TEST_ASSERT_EQ_INT((int)codeBytes(kFmtE5M2, 256), 256);
  TEST_ASSERT_EQ_INT((int)codeBytes(kFmtInt8, 256), 256);
  TEST_ASSERT_EQ_INT((int)codeBytes(kFmtInt6, 256), 192);
  TEST_ASSERT_EQ_INT((int)codeBytes(kFmtInt4, 256), 128);
  TEST_ASSERT_EQ_INT((int)codeBytes(kFmtBf16, 256), 512);

  // A chunk is 16 bytes of elements: 8 of a 16-bit type, 4 of fp32.
  struct Row {
    CodeFormat fmt;
    int elemBytes, chunkBytes;  // 0: the general loads
  };
  const Row rows[] = {
      {kFmtE4M3, 2, 8}, {kFmtE4M3, 4, 4}, {kFmtE5M2, 2, 8}, {kFmtE5M2, 4, 4},
      {kFmtInt8, 2, 8}, {kFmtInt8, 4, 4}, {kFmtInt4, 2, 4}, {kFmtInt4, 4, 0},  // fp32: 2 bytes, no cp.async
      {kFmtInt6, 2, 0}, {kFmtInt6, 4, 0},                                      // 6 and 3 bytes
      {kFmtBf16, 2, 0}, {kFmtBf16, 4, 0}, {kFmtRaw, 2, 0}, {kFmtRaw, 4, 0},    // not block codes
  };
  for (const Row& r : rows) {
    TEST_ASSERT_MSG(stagedChunkBytes(r.fmt, r.elemBytes) == r.chunkBytes, "format %d, %d-byte elements: %d bytes",
                    (int)r.fmt, r.elemBytes, stagedChunkBytes(r.fmt, r.elemBytes));
    TEST_ASSERT_MSG(stagedCodes(r.fmt, r.elemBytes) == (r.chunkBytes != 0), "format %d, %d-byte elements",
                    (int)r.fmt, r.elemBytes);
    // The staged sums take the same, and INT4 in fp32 too (a block per lane: 16 bytes at once).
    const bool sum = r.chunkBytes != 0 || (r.fmt == kFmtInt4 && r.elemBytes == 4);
    TEST_ASSERT_MSG(stagedSumCodes(r.fmt, r.elemBytes) == sum, "format %d, %d-byte elements: staged sum",
                    (int)r.fmt, r.elemBytes);
  }
  return TEST_REPORT();
}

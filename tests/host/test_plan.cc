// The shard/chunk plan of the compressed collectives (libtaco/coll/plan.h):
// offsets, sizes, alignment, coverage without overlap, chunk-size independence
// of block membership and ownership, for many (count, P, block, chunk, dtype).
// The plan is internal (hidden symbols), so its source is compiled in here.
#include <cstdio>
#include <vector>

#include "../../libtaco/coll/plan.cc"
#include "check.h"

using taco::Range;

namespace {

// Brute force: which shard owns element e (-1 if none), from the plan.
int ownerOf(const std::vector<Range>& sh, size_t e) {
  for (size_t r = 0; r < sh.size(); ++r)
    if (e >= sh[r].off && e < sh[r].off + sh[r].len) return (int)r;
  return -1;
}

void checkCase(size_t count, int P, size_t B, size_t chunkBytes, size_t eb) {
  std::vector<Range> sh(P);
  taco::shardPlan(count, P, B, sh.data());
  // Shards: contiguous in rank order, cover [0, count), block-aligned, balanced.
  bool contiguous = true, aligned = true, balanced = true, shortOnlyLast = true;
  size_t next = 0, minBlocks = (size_t)-1, maxBlocks = 0, maxLen = 0;
  int lastNonEmpty = -1;
  for (int r = 0; r < P; ++r) {
    if (sh[r].off != next) contiguous = false;
    next = sh[r].off + sh[r].len;
    if (sh[r].len && sh[r].off % B != 0) aligned = false;  // empty shards sit at `count`
    const size_t nb = (sh[r].len + B - 1) / B;
    minBlocks = nb < minBlocks ? nb : minBlocks;
    maxBlocks = nb > maxBlocks ? nb : maxBlocks;
    if (sh[r].len) lastNonEmpty = r;
    maxLen = sh[r].len > maxLen ? sh[r].len : maxLen;
  }
  for (int r = 0; r < P; ++r)
    if (sh[r].len % B != 0 && r != lastNonEmpty) shortOnlyLast = false;
  for (int r = 1; r < P; ++r)
    if (sh[r].len > sh[r - 1].len && sh[r].off + sh[r].len != count) balanced = false;
  if (maxBlocks - minBlocks > 1) balanced = false;
  TEST_ASSERT_MSG(contiguous && next == count, "count %zu P %d B %zu: shards do not tile [0,count)", count, P, B);
  TEST_ASSERT_MSG(aligned, "count %zu P %d B %zu: shard offset not block-aligned", count, P, B);
  TEST_ASSERT_MSG(shortOnlyLast, "count %zu P %d B %zu: a short block before the last shard", count, P, B);
  TEST_ASSERT_MSG(balanced, "count %zu P %d B %zu: shards unbalanced (%zu..%zu blocks)", count, P, B, minBlocks,
                  maxBlocks);
  if (count > 0 && count <= (size_t)P * B)  // tiny: one block per nonempty shard
    TEST_ASSERT_MSG(lastNonEmpty == (int)((count - 1) / B), "count %zu P %d B %zu: last nonempty shard %d",
                    count, P, B, lastNonEmpty);

  // Pieces: per shard, consecutive, block-aligned, cover the shard exactly.
  const size_t pe = taco::pieceElems(chunkBytes, P, eb, B);
  TEST_ASSERT_MSG(pe % B == 0 && pe >= B, "pe %zu B %zu", pe, B);
  TEST_ASSERT_MSG(pe == B || pe * eb * P <= chunkBytes, "pe %zu x P %d x %zu bytes exceeds chunk %zu", pe, P, eb,
                  chunkBytes);
  TEST_ASSERT_MSG(pe * eb * P + B * eb * P > chunkBytes || pe == B,
                  "pe %zu is not the largest block multiple in chunk %zu", pe, chunkBytes);
  const size_t nChunks = taco::chunkCount(maxLen, pe);
  bool cover = true, chunkNonEmpty = true, pieceAligned = true;
  for (int r = 0; r < P; ++r) {
    size_t at = sh[r].off;
    for (size_t c = 0; c < nChunks; ++c) {
      const Range p = taco::pieceOf(sh[r], pe, c);
      if (p.len && p.off != at) cover = false;
      if (p.len > pe) cover = false;
      if ((p.off - sh[r].off) % B != 0 && p.len) pieceAligned = false;
      if (p.off % B != 0 && p.len) pieceAligned = false;
      // Elements of one codec block never straddle two pieces: a piece ends on a
      // block boundary unless it ends the buffer.
      if (p.len && (p.off + p.len) % B != 0 && p.off + p.len != count) pieceAligned = false;
      at += p.len;
    }
    if (at != sh[r].off + sh[r].len) cover = false;
    if (taco::pieceOf(sh[r], pe, nChunks).len != 0) cover = false;
  }
  for (size_t c = 0; c < nChunks; ++c) {
    size_t total = 0;
    for (int r = 0; r < P; ++r) total += taco::pieceOf(sh[r], pe, c).len;
    if (total == 0) chunkNonEmpty = false;
  }
  TEST_ASSERT_MSG(cover, "count %zu P %d B %zu chunk %zu: pieces do not tile the shards", count, P, B, chunkBytes);
  TEST_ASSERT_MSG(pieceAligned, "count %zu P %d B %zu chunk %zu: piece not block-aligned", count, P, B, chunkBytes);
  TEST_ASSERT_MSG(chunkNonEmpty, "count %zu P %d B %zu chunk %zu: an empty chunk", count, P, B, chunkBytes);
  TEST_ASSERT_MSG(nChunks == 0 || (nChunks - 1) * pe < maxLen, "count %zu: one chunk too many", count);

  // Ownership does not depend on the chunk size (it is a function of the shard
  // plan alone), and every element is owned exactly once: spot-check elements.
  if (count > 0) {
    const size_t probes[] = {0, count / 3, count / 2, count - 1, (count / B) * B < count ? (count / B) * B : 0};
    bool owned = true;
    for (size_t e : probes) {
      const int o = ownerOf(sh, e);
      if (o < 0) owned = false;
      // The chunk holding e inside its owner's shard starts at a block boundary.
      if (o >= 0) {
        const size_t c = (e - sh[o].off) / pe;
        const Range p = taco::pieceOf(sh[o], pe, c);
        if (!(e >= p.off && e < p.off + p.len) || p.off % B != 0) owned = false;
      }
    }
    TEST_ASSERT_MSG(owned, "count %zu P %d B %zu chunk %zu: an element not owned or misplaced", count, P, B,
                    chunkBytes);
  }
}

}  // namespace

int main() {
  const size_t blocks[] = {32, 64, 128, 256, 1024};
  const int ranks[] = {1, 2, 3, 4, 5, 7, 8, 16, 64};
  const size_t ebs[] = {2, 4};
  const size_t chunks[] = {1, 1000, 1 << 16, 1 << 20, (size_t)64 << 20, (size_t)1 << 40};
  for (size_t B : blocks)
    for (int P : ranks) {
      const size_t counts[] = {0,         1,          B - 1,           B,           B + 1,
                               P * B - 1, P * B,      P * B + 1,       3 * P * B + 17, (size_t)1 << 20,
                               ((size_t)1 << 27) + 5, 1000003};
      for (size_t count : counts)
        for (size_t eb : ebs)
          for (size_t ch : chunks) checkCase(count, P, B, ch, eb);
    }

  // Known values, by hand.
  std::vector<Range> sh(4);
  taco::shardPlan(1000, 4, 256, sh.data());  // 4 blocks: one each, the last short
  TEST_ASSERT_EQ_SIZE(sh[0].off, 0);
  TEST_ASSERT_EQ_SIZE(sh[1].off, 256);
  TEST_ASSERT_EQ_SIZE(sh[3].off, 768);
  TEST_ASSERT_EQ_SIZE(sh[3].len, 232);
  taco::shardPlan(300, 4, 256, sh.data());  // 2 blocks: shards 2 and 3 empty
  TEST_ASSERT_EQ_SIZE(sh[0].len, 256);
  TEST_ASSERT_EQ_SIZE(sh[1].len, 44);
  TEST_ASSERT_EQ_SIZE(sh[2].len, 0);
  TEST_ASSERT_EQ_SIZE(sh[2].off, 300);
  TEST_ASSERT_EQ_SIZE(sh[3].len, 0);
  taco::shardPlan(7 * 256, 3, 256, sh.data());  // 7 blocks -> 3, 2, 2
  TEST_ASSERT_EQ_SIZE(sh[0].len, 3 * 256);
  TEST_ASSERT_EQ_SIZE(sh[1].off, 3 * 256);
  TEST_ASSERT_EQ_SIZE(sh[2].len, 2 * 256);
  // 64 MiB of bf16 over 4 ranks: 8 Mi elements per shard per chunk.
  TEST_ASSERT_EQ_SIZE(taco::pieceElems((size_t)64 << 20, 4, 2, 256), (size_t)8 << 20);
  TEST_ASSERT_EQ_SIZE(taco::pieceElems(1, 8, 4, 256), 256);
  TEST_ASSERT_EQ_SIZE(taco::chunkCount(0, 256), 0);
  TEST_ASSERT_EQ_SIZE(taco::chunkCount(257, 256), 2);
  tacoCodec_t none = {tacoCodecNone, 0}, t128 = {tacoCodecTaco, 128};
  TEST_ASSERT_EQ_SIZE(taco::planGranule(none), taco::kPlainGranule);
  TEST_ASSERT_EQ_SIZE(taco::planGranule(t128), 128);
  return TEST_REPORT();
}

#include "plan.h"  // same folder: tests/host/test_plan.cc compiles this file directly

namespace taco {

size_t planGranule(tacoCodec_t codec) {
  return codec.blockSize > 0 ? (size_t)codec.blockSize : kPlainGranule;
}

void shardPlan(size_t count, int nranks, size_t block, Range* shards) {
  const size_t P = (size_t)nranks;
  const size_t nBlocks = (count + block - 1) / block;
  const size_t base = nBlocks / P, rem = nBlocks % P;
  size_t blk = 0;
  for (size_t r = 0; r < P; ++r) {
    const size_t nb = base + (r < rem ? 1 : 0);
    const size_t off = blk * block;
    const size_t end = (blk + nb) * block;
    shards[r].off = off < count ? off : count;
    shards[r].len = (end < count ? end : count) - shards[r].off;
    blk += nb;
  }
}

size_t pieceElems(size_t chunkBytes, int nranks, size_t elemBytes, size_t block) {
  const size_t perShardBytes = chunkBytes / (size_t)nranks;
  const size_t blocks = perShardBytes / (elemBytes * block);
  return (blocks > 0 ? blocks : 1) * block;
}

size_t chunkCount(size_t maxShardLen, size_t pieceElems) {
  return (maxShardLen + pieceElems - 1) / pieceElems;
}

Range pieceOf(Range shard, size_t pieceElems, size_t c) {
  const size_t start = c * pieceElems;
  if (start >= shard.len) return Range{shard.off + shard.len, 0};
  const size_t left = shard.len - start;
  return Range{shard.off + start, left < pieceElems ? left : pieceElems};
}

}  // namespace taco

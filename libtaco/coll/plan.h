// The shard/chunk plan shared by every compressed collective (docs/collectives.md,
// "The plan: shards, blocks, chunks").
//
// A buffer of `count` elements is cut into codec blocks of B elements counted
// from element 0. Shards are whole runs of blocks (only the last nonempty shard
// may end in a short block). A chunk takes, from every shard, the next
// `pieceElems` elements (a multiple of B): so chunking never changes which
// elements share a block, nor which rank owns an element, and the result of a
// collective is the same bits whatever the chunk size.
#pragma once
#include <cstddef>

#include "taco.h"

namespace taco {

struct Range {
  size_t off;  // first element
  size_t len;  // elements (0: empty)
};

// Block granularity of the plan: the codec's block size, or kPlainGranule for
// codecs without blocks (keeps shard boundaries aligned for vector loads).
constexpr size_t kPlainGranule = 256;
size_t planGranule(tacoCodec_t codec);

// AllReduce shards: ceil(count/B) blocks split as evenly as possible, the first
// (nBlocks % P) shards one block longer. shards[r] for r in [0, P).
void shardPlan(size_t count, int nranks, size_t block, Range* shards);

// Elements each shard contributes to one chunk: chunkBytes of the whole call
// (all P shards together) rounded down to a multiple of B per shard, at least B.
size_t pieceElems(size_t chunkBytes, int nranks, size_t elemBytes, size_t block);

// Chunks needed to cover shards of at most `maxShardLen` elements.
size_t chunkCount(size_t maxShardLen, size_t pieceElems);

// The part of `shard` processed in chunk `c` (len 0 when the shard is exhausted).
Range pieceOf(Range shard, size_t pieceElems, size_t c);

}  // namespace taco

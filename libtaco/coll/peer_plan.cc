#include "coll/peer_plan.h"

#include "codec/codec.h"
#include "codec/launch.h"
#include "coll/peer_launch.h"

namespace taco {

size_t peerScratchBytes(size_t chunkBytes, int nranks, tacoCodec_t codec) {
  size_t half = chunkBytes / 2;
  // A slot holds the codec's wire of the staged plan's piece of 16-bit data (scales and
  // headers included): a call of k chunks is k launches, not k plus a short remainder.
  // (Blocked codecs only: the others have no two-shot here.)
  const CodecDesc* d = codecById(codec.id);
  if (d != nullptr && d->blocked) {
    const size_t piece = pieceElems(chunkBytes, nranks, 2, planGranule(codec));
    const size_t slot = (wireLayout(codec, piece, tacoBfloat16).totalBytes + 255) / 256 * 256;
    if (half < slot * (size_t)nranks) half = slot * (size_t)nranks;
  }
  const size_t minHalf = (size_t)nranks * 64 * 1024;  // room for a few blocks per slot
  if (half < minHalf) half = minHalf;
  half = (half + 255) / 256 * 256;
  return kDataOffset + 2 * half + kTailBytes;
}

namespace {
// The most elements, a multiple of `granule`, whose wire fits in `cap` bytes (at least one granule).
size_t fitElems(tacoCodec_t codec, tacoDataType_t dtype, size_t granule, size_t cap) {
  // In granules; no codec takes less than one bit per element, which bounds the search.
  size_t lo = 1, hi = cap / (granule / 8 > 0 ? granule / 8 : 1) + 1;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo + 1) / 2;
    if (wireLayout(codec, mid * granule, dtype).totalBytes <= cap) lo = mid;
    else hi = mid - 1;
  }
  return lo * granule;
}
}  // namespace

PeerPlan peerPlan(int algo, tacoCodec_t codec, size_t count, tacoDataType_t dtype, int nranks, size_t scratchBytes) {
  PeerPlan p;
  p.algo = algo;
  p.codec = algo == tacoAlgoOneShotRaw ? tacoCodec_t{tacoCodecNone, 0} : codec;
  p.granule = planGranule(p.codec);
  if (algo == tacoAlgoFused) {
    shardPlan(count, nranks, p.granule, p.shard);
    size_t longest = 0;
    for (int j = 0; j < nranks; ++j) longest = p.shard[j].len > longest ? p.shard[j].len : longest;
    p.chunkElems = fitElems(p.codec, dtype, p.granule, peerSlotBytes(scratchBytes, nranks));
    p.nChunks = chunkCount(longest, p.chunkElems);
  } else {
    p.chunkElems = fitElems(p.codec, dtype, p.granule, peerHalfBytes(scratchBytes));
    p.nChunks = chunkCount(count, p.chunkElems);
  }
  return p;
}

dev::PieceWire peerPieceWire(tacoCodec_t codec, size_t n, tacoDataType_t dtype) {
  return n == 0 ? dev::PieceWire{} : pieceWireOf(wireLayout(codec, n, dtype), n);
}

size_t peerLaunchGeometry(PeerLaunch& L, const PeerPlan& plan, size_t count, tacoDataType_t dtype) {
  L.chunkElems = plan.chunkElems;
  const int shards = plan.algo == tacoAlgoFused ? L.P : 1;
  size_t largest = 0;
  for (int j = 0; j < shards; ++j) {
    const Range sh = plan.algo == tacoAlgoFused ? plan.shard[j] : Range{0, count};
    L.shardOff[j] = sh.off;
    L.shardLen[j] = sh.len;
    L.tail[j] = peerPieceWire(plan.codec, sh.len % plan.chunkElems, dtype);
    const size_t n = sh.len < plan.chunkElems ? sh.len : plan.chunkElems;
    largest = n > largest ? n : largest;
  }
  L.full = peerPieceWire(plan.codec, plan.chunkElems, dtype);
  return largest;
}

}  // namespace taco

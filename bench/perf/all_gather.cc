// AllGather: count/P elements in, `count` out (every rank's block, in rank order).
#include "common.h"

namespace perf {
namespace {

Shape getCounts(size_t total, int P) { return {total, total / P, total / P, total}; }

double expected(const std::vector<std::vector<float>>& in, int P, int, size_t i, size_t total) {
  const size_t n = total / P;
  return in[i / n][i % n];
}

tacoResult_t run(const void* send, void* recv, const Shape& sh, tacoDataType_t dt, tacoComm_t comm,
                 cudaStream_t stream) {
  return tacoAllGather(send, recv, sh.callCount, dt, comm, stream);
}

// A piece is one rank's block.
size_t pieceElems(tacoCodec_t, const Shape& sh, int) { return sh.callCount; }

}  // namespace

const CollDesc kAllGatherDesc = {kAllGather, /*perRankBlocks=*/true, /*sameOnEveryRank=*/true, /*exact=*/true,
                                 getCounts,  expected, oneHopBusFactor, run, blockwiseAlgo, pieceElems,
                                 /*iterDiy=*/nullptr};

}  // namespace perf

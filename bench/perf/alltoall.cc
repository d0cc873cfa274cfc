// AlltoAll: `count` elements in and out; block j of rank r's input lands at
// block r of rank j's output (blocks of count/P).
#include "common.h"

namespace perf {
namespace {

Shape getCounts(size_t total, int P) { return {total, total / P, total, total}; }

double expected(const std::vector<std::vector<float>>& in, int P, int rank, size_t i, size_t total) {
  const size_t n = total / P;
  return in[i / n][(size_t)rank * n + i % n];
}

tacoResult_t run(const void* send, void* recv, const Shape& sh, tacoDataType_t dt, tacoComm_t comm,
                 cudaStream_t stream) {
  return tacoAlltoAll(send, recv, sh.callCount, dt, comm, stream);
}

// A piece is one block (what one rank sends to one peer).
size_t pieceElems(tacoCodec_t, const Shape& sh, int) { return sh.callCount; }

}  // namespace

const CollDesc kAlltoAllDesc = {kAlltoAll, /*perRankBlocks=*/true, /*sameOnEveryRank=*/false, /*exact=*/true,
                                getCounts, expected, oneHopBusFactor, run, blockwiseAlgo, pieceElems,
                                /*iterDiy=*/nullptr};

}  // namespace perf

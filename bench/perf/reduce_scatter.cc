// ReduceScatter (sum): `count` elements in, block r of count/P out on rank r.
#include "common.h"

namespace perf {
namespace {

Shape getCounts(size_t total, int P) { return {total, total / P, total, total / P}; }

double expected(const std::vector<std::vector<float>>& in, int P, int rank, size_t i, size_t total) {
  const size_t n = total / P;
  double s = 0;
  for (int q = 0; q < P; ++q) s += in[q][(size_t)rank * n + i];
  return s;
}

tacoResult_t run(const void* send, void* recv, const Shape& sh, tacoDataType_t dt, tacoComm_t comm,
                 cudaStream_t stream) {
  return tacoReduceScatter(send, recv, sh.callCount, dt, tacoSum, comm, stream);
}

// A piece is one rank's block.
size_t pieceElems(tacoCodec_t, const Shape& sh, int) { return sh.callCount; }

}  // namespace

const CollDesc kReduceScatterDesc = {kReduceScatter, /*perRankBlocks=*/true, /*sameOnEveryRank=*/false,
                                     /*exact=*/false, getCounts, expected, oneHopBusFactor, run, blockwiseAlgo,
                                     pieceElems, /*iterDiy=*/nullptr};

}  // namespace perf

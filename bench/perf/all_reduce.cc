// AllReduce (sum): `count` elements in and out on every rank. The one
// collective with a choice of algorithm (--algo, tacoCommAllReduceAlgo) and
// with the do-it-yourself FP8 baseline (diy.cu).
#include <algorithm>

#include "common.h"
#include "kernels.h"

namespace perf {
namespace {

Shape getCounts(size_t total, int) { return {total, total, total, total}; }

double expected(const std::vector<std::vector<float>>& in, int P, int, size_t i, size_t) {
  double s = 0;
  for (int q = 0; q < P; ++q) s += in[q][i];
  return s;
}

double busFactor(int P) { return P > 1 ? 2.0 * (P - 1) / P : 0.0; }

tacoResult_t run(const void* send, void* recv, const Shape& sh, tacoDataType_t dt, tacoComm_t comm,
                 cudaStream_t stream) {
  return tacoAllReduce(send, recv, sh.callCount, dt, tacoSum, comm, stream);
}

tacoResult_t algo(const Ctx& c, int k, const Shape& sh, tacoDataType_t dt, int* a) {
  return tacoCommAllReduceAlgo(c.ranks[0].comms[k], sh.callCount, dt, a);
}

// A piece is one rank's shard: ceil(nblocks/P) codec blocks (the largest
// shard; docs/collectives.md), the whole input when that is smaller.
size_t pieceElems(tacoCodec_t codec, const Shape& sh, int P) {
  const size_t B = codec.blockSize > 0 ? (size_t)codec.blockSize : 256;
  const size_t nblocks = (sh.total + B - 1) / B;
  return std::min(sh.total, (nblocks + P - 1) / P * B);
}

// FP8 quantize -> plain all-gather of the packets -> dequantize-sum, every local rank.
void iterDiy(Ctx& c, const Shape& sh, tacoDataType_t dt) {
  const size_t pb = diyPacketBytes(sh.total);
  for (Local& L : c.ranks) CUDACHECK(launchDiyQuantize(L.send, sh.total, dt, L.diyPacket, L.stream));
  TACOCHECK(tacoGroupStart(), nullptr);
  for (Local& L : c.ranks)
    TACOCHECK(tacoAllGather(L.diyPacket, L.diyGathered, pb / 4, tacoFloat32, L.plain, L.stream), L.plain);
  TACOCHECK(tacoGroupEnd(), nullptr);
  for (Local& L : c.ranks) CUDACHECK(launchDiyDequantSum(L.diyGathered, c.P, sh.total, dt, L.recv, L.stream));
}

}  // namespace

const CollDesc kAllReduceDesc = {kAllReduce, /*perRankBlocks=*/false, /*sameOnEveryRank=*/true, /*exact=*/false,
                                 getCounts,  expected, busFactor, run, algo, pieceElems, iterDiy};

}  // namespace perf

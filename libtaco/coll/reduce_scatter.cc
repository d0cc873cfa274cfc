// Compressed ReduceScatter: phases 1-3 of the two-shot AllReduce.
//
// Rank r receives the sum of elements [r*n, (r+1)*n) of every rank's sendbuff
// (n = recvcount). Shard j is block j of the API, compressed on its own (codec
// blocks counted from the shard start). Chunk c takes the next `pe` elements of
// every shard, on stream/slot c % depth:
//
//   1. Compress   for every peer j != r: A[j] = compress(sendbuff[shard j, piece c])
//   2. AlltoAll   send A[j] to rank j, receive B[j] from rank j
//   3. Reduce     recvbuff[piece c] = fp32 sum of decompress(B[j]), j != r in rank
//                 order, plus the exact own partial, rounded once to the dtype
//
// One quantization per element (the partials on their way to the owner); the
// owner's own partial is exact. In place (recvbuff == sendbuff + r*n) is safe:
// the accumulate kernel reads the exact partial of an element before writing it.
#include "core/check.h"
#include "coll/coll.h"

namespace taco {

tacoResult_t reduceScatter(tacoComm* c, const CollArgs& a) {
  if (a.count == 0) return tacoSuccess;
  const int P = c->nranks, r = c->rank;
  const size_t n = a.count;
  const tacoDataType_t dt = a.dtype;
  const bool plain = usePlain(c, n * P * dtypeBytes(dt));
  return submitBlockwise(c, a, plain, kPlainReduceScatter, "ReduceScatter",
                         [&](std::vector<Step>& st, int slot, Range pc, size_t wb) {
    for (int j = 0; j < P; ++j)
      if (j != r) st.push_back(stepCompress(slot, at(a.sendbuff, j * n + pc.off, dt), pc.len, dt, slotA(c, slot, j)));
    addPeerExchange(st, c, slot, [&](int j) { return WireRef{slotA(c, slot, j), wb}; },
                    [&](int j) { return WireRef{slotB(c, slot, j), wb}; });
    st.push_back(stepSumOfPeers(kStepDecAccum, c, slot, at(a.sendbuff, r * n + pc.off, dt), nullptr,
                                at(a.recvbuff, pc.off, dt), pc.len, dt));
  });
}

}  // namespace taco

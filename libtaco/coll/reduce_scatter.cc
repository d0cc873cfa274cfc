// Compressed ReduceScatter: phases 1-3 of the two-shot AllReduce.
//
// Rank r receives the sum of elements [r*n, (r+1)*n) of every rank's sendbuff
// (n = recvcount). Shard j is block j of the API, compressed on its own (codec
// blocks counted from the shard start). Chunk c takes the next chunkPieceElems()
// elements of every shard, on stream/slot c % depth:
//
//   1. Compress   for every peer j != r: out[j] = compress(sendbuff[shard j, piece c])
//   2. AlltoAll   send out[j] to rank j, receive in[j] from rank j
//   3. Reduce     recvbuff[piece c] = fp32 sum of decompress(in[j]), j != r in rank
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
  return submitBlockwise(c, a, plain, kPlainReduceScatter, "tacoReduceScatter",
                         [&](std::vector<Step>& steps, int slot, Range piece, size_t pieceWireBytes) {
    for (int j = 0; j < P; ++j)
      if (j != r)
        steps.push_back(stepCompress(slot, elemPtr(a.sendbuff, j * n + piece.off, dt), piece.len, dt,
                                     outgoingPiece(c, slot, j)));
    addPeerExchange(steps, c, slot, [&](int j) { return WireRef{outgoingPiece(c, slot, j), pieceWireBytes}; },
                    [&](int j) { return WireRef{incomingPiece(c, slot, j), pieceWireBytes}; });
    steps.push_back(stepSumOfPeers(kStepDecompressAccumulate, c, slot, elemPtr(a.sendbuff, r * n + piece.off, dt),
                                   nullptr, elemPtr(a.recvbuff, piece.off, dt), piece.len, dt));
  });
}

}  // namespace taco

// Compressed AllGather: phases 4-5 of the two-shot AllReduce.
//
// Every rank contributes n = sendcount elements; block j of recvbuff is rank
// j's. Chunk c takes the next chunkPieceElems() elements of the contribution (codec blocks
// counted from its start), on stream/slot c % depth:
//
//   1. Compress   out[r] = compress(sendbuff[piece c])            (once)
//   2. AllGather  send out[r] to every peer, receive out[j] from rank j
//   3. Expand     for every j, r included: recvbuff[block j, piece c] = decompress(out[j])
//
// Every rank decompresses every block from the same bytes, its own included,
// so all ranks end bit-identical. In place (sendbuff == recvbuff + r*n) is
// safe: the own piece is decompressed over itself after it was compressed.
#include "core/check.h"
#include "coll/coll.h"

namespace taco {

tacoResult_t allGather(tacoComm* c, const CollArgs& a) {
  if (a.count == 0) return tacoSuccess;
  const int P = c->nranks, r = c->rank;
  const size_t n = a.count;
  const tacoDataType_t dt = a.dtype;
  const bool plain = usePlain(c, n * P * dtypeBytes(dt));
  return submitBlockwise(c, a, plain, kPlainAllGather, "tacoAllGather",
                         [&](std::vector<Step>& steps, int slot, Range piece, size_t pieceWireBytes) {
    steps.push_back(
        stepCompress(slot, elemPtr(a.sendbuff, piece.off, dt), piece.len, dt, outgoingPiece(c, slot, r)));
    addPeerExchange(steps, c, slot, [&](int) { return WireRef{outgoingPiece(c, slot, r), pieceWireBytes}; },
                    [&](int j) { return WireRef{outgoingPiece(c, slot, j), pieceWireBytes}; });
    for (int j = 0; j < P; ++j)
      steps.push_back(stepDecompress(slot, outgoingPiece(c, slot, j), elemPtr(a.recvbuff, j * n + piece.off, dt),
                                     piece.len, dt));
  });
}

}  // namespace taco

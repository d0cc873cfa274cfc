// Compressed AlltoAll.
//
// sendbuff holds P blocks of n = count elements; block j goes to rank j and
// lands in block r of its recvbuff. Chunk c takes the next chunkPieceElems()
// elements of every block (codec blocks counted from the block start), on stream/slot
// c % depth:
//
//   1. Compress   for every j, r included: out[j] = compress(sendbuff[block j, piece c])
//   2. Exchange   send out[j] to rank j, receive in[j] from rank j
//   3. Expand     recvbuff[block j, piece c] = decompress(in[j]) for j != r,
//                 and recvbuff[block r, piece c] = decompress(out[r])
//
// The own block also goes through the codec (a round trip, not an exact copy):
// every output element then carries exactly one quantization whichever rank it
// came from, and the result is a pure function of the inputs (deterministic).
// In place is safe: a piece is overwritten only after the same chunk compressed it.
#include "core/check.h"
#include "coll/coll.h"
#include "transport/transport.h"

namespace taco {

tacoResult_t alltoAll(tacoComm* c, const CollArgs& a) {
  if (a.count == 0) return tacoSuccess;
  const int P = c->nranks, r = c->rank;
  const size_t n = a.count;
  const tacoDataType_t dt = a.dtype;
  bool plain = usePlain(c, n * P * dtypeBytes(dt));
  if (plain && a.sendbuff == a.recvbuff && !c->transport->alltoAllInPlace()) {
    if (!c->compressed)
      return setError(tacoNotSupported,
                      "tacoAlltoAll: in-place is not supported with codec none on the %s transport; use "
                      "separate buffers",
                      c->transport->name());
    plain = false;  // the compressed schedule stages through the workspace, so it can run in place
  }
  return submitBlockwise(c, a, plain, kPlainAlltoAll, "tacoAlltoAll",
                         [&](std::vector<Step>& steps, int slot, Range piece, size_t pieceWireBytes) {
    for (int j = 0; j < P; ++j)
      steps.push_back(stepCompress(slot, elemPtr(a.sendbuff, j * n + piece.off, dt), piece.len, dt,
                                   outgoingPiece(c, slot, j)));
    addPeerExchange(steps, c, slot, [&](int j) { return WireRef{outgoingPiece(c, slot, j), pieceWireBytes}; },
                    [&](int j) { return WireRef{incomingPiece(c, slot, j), pieceWireBytes}; });
    for (int j = 0; j < P; ++j) {
      const void* src = j == r ? outgoingPiece(c, slot, r) : incomingPiece(c, slot, j);
      steps.push_back(stepDecompress(slot, src, elemPtr(a.recvbuff, j * n + piece.off, dt), piece.len, dt));
    }
  });
}

}  // namespace taco

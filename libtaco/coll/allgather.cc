// Compressed AllGather: phases 4-5 of the two-shot AllReduce.
//
// Every rank contributes n = sendcount elements; block j of recvbuff is rank
// j's. Chunk c takes the next `pe` elements of the contribution (codec blocks
// counted from its start), on stream/slot c % depth:
//
//   1. Compress   A[r] = compress(sendbuff[piece c])            (once)
//   2. AllGather  send A[r] to every peer, receive A[j] from rank j
//   3. Expand     for every j, r included: recvbuff[block j, piece c] = decompress(A[j])
//
// Every rank decompresses every block from the same bytes, its own included,
// so all ranks end bit-identical. In place (sendbuff == recvbuff + r*n) is
// safe: the own piece is decompressed over itself after it was compressed.
#include "core/check.h"
#include "coll/coll.h"

namespace taco {

tacoResult_t allGather(tacoComm* c, const CollArgs& a) {
  if (a.count == 0) return tacoSuccess;
  const tacoDataType_t dt = a.dtype;
  const int P = c->nranks, r = c->rank;
  const size_t n = a.count;
  Schedule sched;
  sched.comm = c;
  if (usePlain(c, n * P * dtypeBytes(dt))) {
    sched.steps.push_back(stepPlain(kPlainAllGather, a.stream, a.sendbuff, a.recvbuff, n, dt));
    return submit(std::move(sched), "AllGather");
  }
  const size_t pe = commPieceElems(c, dt);
  const size_t nChunks = chunkCount(n, pe);
  std::vector<Step>& st = sched.steps;
  st.reserve(2 + nChunks * (P + 2));
  st.push_back(stepFork(a.stream));
  for (size_t ch = 0; ch < nChunks; ++ch) {
    const int slot = (int)(ch % (size_t)c->depth);
    const Range pc = pieceOf(Range{0, n}, pe, ch);
    const size_t wb = wireBytes(c, pc.len, dt);
    st.push_back(stepCompress(slot, at(a.sendbuff, pc.off, dt), pc.len, dt, slotA(c, slot, r)));
    if (P > 1) {
      Step ex = stepExchange(slot);
      for (int j = 0; j < P; ++j) {
        if (j == r) continue;
        ex.xfers.push_back(Xfer{true, j, slotA(c, slot, r), wb});
        ex.xfers.push_back(Xfer{false, j, slotA(c, slot, j), wb});
      }
      st.push_back(std::move(ex));
    }
    for (int j = 0; j < P; ++j)
      st.push_back(stepDecompress(slot, slotA(c, slot, j), at(a.recvbuff, j * n + pc.off, dt), pc.len, dt));
  }
  st.push_back(stepJoin(a.stream));
  return submit(std::move(sched), "AllGather");
}

}  // namespace taco

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
  const int P = c->nranks, r = c->rank;
  const size_t n = a.count;
  const tacoDataType_t dt = a.dtype;
  const bool plain = usePlain(c, n * P * dtypeBytes(dt));
  return submitBlockwise(c, a, plain, kPlainAllGather, "AllGather",
                         [&](std::vector<Step>& st, int slot, Range pc, size_t wb) {
    st.push_back(stepCompress(slot, at(a.sendbuff, pc.off, dt), pc.len, dt, slotA(c, slot, r)));
    addPeerExchange(st, c, slot, [&](int) { return WireRef{slotA(c, slot, r), wb}; },
                    [&](int j) { return WireRef{slotA(c, slot, j), wb}; });
    for (int j = 0; j < P; ++j)
      st.push_back(stepDecompress(slot, slotA(c, slot, j), at(a.recvbuff, j * n + pc.off, dt), pc.len, dt));
  });
}

}  // namespace taco

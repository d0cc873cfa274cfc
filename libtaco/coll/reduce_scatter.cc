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
  const tacoDataType_t dt = a.dtype;
  const int P = c->nranks, r = c->rank;
  const size_t n = a.count;
  Schedule sched;
  sched.comm = c;
  if (usePlain(c, n * P * dtypeBytes(dt))) {
    sched.steps.push_back(stepPlain(kPlainReduceScatter, a.stream, a.sendbuff, a.recvbuff, n, dt));
    return submit(std::move(sched), "ReduceScatter");
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
    for (int j = 0; j < P; ++j)
      if (j != r) st.push_back(stepCompress(slot, at(a.sendbuff, j * n + pc.off, dt), pc.len, dt, slotA(c, slot, j)));
    if (P > 1) {
      Step ex = stepExchange(slot);
      for (int j = 0; j < P; ++j) {
        if (j == r) continue;
        ex.xfers.push_back(Xfer{true, j, slotA(c, slot, j), wb});
        ex.xfers.push_back(Xfer{false, j, slotB(c, slot, j), wb});
      }
      st.push_back(std::move(ex));
    }
    Step s;
    s.kind = kStepDecAccum;
    s.stream = slot;
    s.inputs.n = 0;
    for (int j = 0; j < P; ++j)
      if (j != r) s.inputs.ptr[s.inputs.n++] = slotB(c, slot, j);
    s.exact = at(a.sendbuff, r * n + pc.off, dt);
    s.y = at(a.recvbuff, pc.off, dt);
    s.count = pc.len;
    s.dtype = dt;
    st.push_back(std::move(s));
  }
  st.push_back(stepJoin(a.stream));
  return submit(std::move(sched), "ReduceScatter");
}

}  // namespace taco

// Two-shot compressed AllReduce (DESIGN §3; the TACO paper, Section 4.4.2).
//
// P ranks, rank r. The buffer is cut into P shards on codec-block boundaries
// (coll/plan.h); rank j owns shard j. The shards are processed in chunks: chunk
// c takes the next `pe` elements (a multiple of the block) of every shard, on
// pipeline stream c % depth, using workspace slot c % depth, so that chunk c+1
// is compressed while chunk c is on the wire. Per chunk:
//
//   1. Compress   for every peer j != r: A[j] = compress(sendbuff[piece j])
//   2. AlltoAll   send A[j] to rank j, receive B[j] = rank j's compressed piece r
//   3. Reduce     one fused kernel on the owner:
//                   sum  = fp32 sum of decompress(B[j]) over j != r in rank order,
//                          plus the exact own partial sendbuff[piece r]
//                   A[r] = compress(sum), recvbuff[piece r] = decompress(A[r])
//   4. AllGather  send A[r] to every peer, receive A[j] = rank j's reduced piece
//   5. Expand     for every peer j != r: recvbuff[piece j] = decompress(A[j])
//
// Every output element is therefore decompressed from the same bytes on every
// rank (bit-identical everywhere, the owner included), and carries at most two
// quantizations: each partial once on its way to the owner, the sum once on the
// way back. In place (sendbuff == recvbuff) is safe: step 3 reads the exact
// partial of piece r in the same kernel that writes it, element by element,
// and step 5 overwrites pieces that step 1 of the same chunk already
// compressed; different chunks touch disjoint elements.
//
// coll/allreduce.cc decides when this path runs (the staged path is the one that
// works everywhere NCCL does, across nodes included).
#include "core/check.h"
#include "coll/coll.h"

namespace taco {

tacoResult_t allReduceStaged(tacoComm* c, const CollArgs& a) {
  const tacoDataType_t dt = a.dtype;
  Schedule sched;
  sched.comm = c;
  const int P = c->nranks, r = c->rank;
  std::vector<Range> shard(P);
  shardPlan(a.count, P, planGranule(c->codec), shard.data());
  size_t maxLen = 0;
  for (const Range& s : shard) maxLen = s.len > maxLen ? s.len : maxLen;
  const size_t pe = commPieceElems(c, dt);
  const size_t nChunks = chunkCount(maxLen, pe);

  std::vector<Step>& st = sched.steps;
  st.reserve(2 + nChunks * (2 * P + 3));
  st.push_back(stepFork(a.stream));
  std::vector<Range> piece(P);
  for (size_t ch = 0; ch < nChunks; ++ch) {
    const int slot = (int)(ch % (size_t)c->depth);
    for (int j = 0; j < P; ++j) piece[j] = pieceOf(shard[j], pe, ch);
    const Range mine = piece[r];
    const size_t mineBytes = wireBytes(c, mine.len, dt);

    // 1. Compress the pieces owned by the others.
    for (int j = 0; j < P; ++j)
      if (j != r && piece[j].len > 0)
        st.push_back(stepCompress(slot, at(a.sendbuff, piece[j].off, dt), piece[j].len, dt, slotA(c, slot, j)));

    // 2. AlltoAll of the compressed pieces.
    addPeerExchange(st, c, slot, [&](int j) { return WireRef{slotA(c, slot, j), wireBytes(c, piece[j].len, dt)}; },
                    [&](int j) { return WireRef{slotB(c, slot, j), mineBytes}; });

    // 3. Owner: exact own partial + the others' in rank order, compressed once.
    if (mine.len > 0)
      st.push_back(stepSumOfPeers(kStepDRC, c, slot, at(a.sendbuff, mine.off, dt), slotA(c, slot, r),
                                  at(a.recvbuff, mine.off, dt), mine.len, dt));

    // 4. AllGather of the compressed reduced pieces.
    addPeerExchange(st, c, slot, [&](int) { return WireRef{slotA(c, slot, r), mineBytes}; },
                    [&](int j) { return WireRef{slotA(c, slot, j), wireBytes(c, piece[j].len, dt)}; });

    // 5. Everyone decompresses the others' reduced pieces.
    for (int j = 0; j < P; ++j)
      if (j != r && piece[j].len > 0)
        st.push_back(stepDecompress(slot, slotA(c, slot, j), at(a.recvbuff, piece[j].off, dt), piece[j].len, dt));
  }
  st.push_back(stepJoin(a.stream));
  return submit(std::move(sched), "AllReduce");
}

}  // namespace taco

// Staged two-shot compressed AllReduce (docs/design.md; the TACO paper,
// Section 4.4.2): compress, AlltoAll, reduce on the owner, AllGather, expand,
// each stage a kernel or an exchange of its own. coll/allreduce_select.cc
// picks the algorithm; plain is built in coll/allreduce.cc, and the three on peer
// memory (fused two-shot, one-shot, raw one-shot) share coll/allreduce_peer.{h,cc,cu}
// and coll/device/peer_kernels.cuh.
//
// P ranks, rank r. The buffer is cut into P shards on codec-block boundaries
// (coll/plan.h); rank j owns shard j. The shards are processed in chunks: chunk
// c takes the next chunkPieceElems() elements (a multiple of the block) of
// every shard, on pipeline stream c % depth, using workspace slot c % depth
// (out[j], in[j]: its outgoing and incoming pieces, coll/workspace.h), so that
// chunk c+1 is compressed while chunk c is on the wire. Per chunk:
//
//   1. Compress   for every peer j != r: out[j] = compress(sendbuff[piece j])
//   2. AlltoAll   send out[j] to rank j, receive in[j] = rank j's compressed piece r
//   3. Reduce     one fused kernel on the owner:
//                   sum    = fp32 sum of decompress(in[j]) over j != r in rank order,
//                            plus the exact own partial sendbuff[piece r]
//                   out[r] = compress(sum), recvbuff[piece r] = decompress(out[r])
//   4. AllGather  send out[r] to every peer, receive out[j] = rank j's reduced piece
//   5. Expand     for every peer j != r: recvbuff[piece j] = decompress(out[j])
//
// Every output element is therefore decompressed from the same bytes on every
// rank (bit-identical everywhere, the owner included), and carries at most two
// quantizations: each partial once on its way to the owner, the sum once on the
// way back. In place (sendbuff == recvbuff) is safe: step 3 reads the exact
// partial of piece r in the same kernel that writes it, element by element,
// and step 5 overwrites pieces that step 1 of the same chunk already
// compressed; different chunks touch disjoint elements.
//
// coll/allreduce.cc decides when this path runs: it is the one that works
// everywhere NCCL does, across nodes included.
#include "coll/coll.h"
#include "core/check.h"

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
  const size_t elemsPerPiece = chunkPieceElems(c, dt);
  const size_t nChunks = chunkCount(maxLen, elemsPerPiece);

  std::vector<Step>& steps = sched.steps;
  steps.reserve(2 + nChunks * (2 * P + 3));
  steps.push_back(stepFork(a.stream));
  std::vector<Range> piece(P);
  for (size_t ch = 0; ch < nChunks; ++ch) {
    const int slot = (int)(ch % (size_t)c->depth);
    for (int j = 0; j < P; ++j) piece[j] = pieceOf(shard[j], elemsPerPiece, ch);
    const Range mine = piece[r];
    const size_t mineBytes = wireBytes(c, mine.len, dt);
    auto pieceWire = [&](int j) { return WireRef{outgoingPiece(c, slot, j), wireBytes(c, piece[j].len, dt)}; };

    // 1. Compress the pieces owned by the others.
    for (int j = 0; j < P; ++j)
      if (j != r && piece[j].len > 0)
        steps.push_back(stepCompress(slot, elemPtr(a.sendbuff, piece[j].off, dt), piece[j].len, dt,
                                     outgoingPiece(c, slot, j)));

    // 2. AlltoAll of the compressed pieces.
    addPeerExchange(steps, c, slot, pieceWire, [&](int j) { return WireRef{incomingPiece(c, slot, j), mineBytes}; });

    // 3. Owner: exact own partial + the others' in rank order, compressed once.
    if (mine.len > 0)
      steps.push_back(stepSumOfPeers(kStepDecompressReduceCompress, c, slot, elemPtr(a.sendbuff, mine.off, dt),
                                     outgoingPiece(c, slot, r), elemPtr(a.recvbuff, mine.off, dt), mine.len, dt));

    // 4. AllGather of the compressed reduced pieces.
    addPeerExchange(steps, c, slot, [&](int) { return WireRef{outgoingPiece(c, slot, r), mineBytes}; }, pieceWire);

    // 5. Everyone decompresses the others' reduced pieces.
    for (int j = 0; j < P; ++j)
      if (j != r && piece[j].len > 0)
        steps.push_back(stepDecompress(slot, outgoingPiece(c, slot, j), elemPtr(a.recvbuff, piece[j].off, dt),
                                       piece[j].len, dt));
  }
  steps.push_back(stepJoin(a.stream));
  return submit(std::move(sched), "tacoAllReduce");
}

}  // namespace taco

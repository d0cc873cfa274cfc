// Internal entry points of the collectives (called by libtaco/api/coll_api.cc
// after argument checks) and the helpers the schedule builders share.
#pragma once
#include "coll/plan.h"
#include "coll/schedule.h"
#include "coll/workspace.h"
#include "core/comm.h"

namespace taco {

struct CollArgs {
  const void* sendbuff;
  void* recvbuff;
  size_t count;  // AllReduce: count; ReduceScatter: recvcount; AllGather: sendcount; AlltoAll: per block
  tacoDataType_t dtype;
  cudaStream_t stream;
};

tacoResult_t allReduce(tacoComm* comm, const CollArgs& a);
// The AllReduce algorithms behind allReduce() (coll/allreduce.cc picks one).
tacoResult_t allReduceStaged(tacoComm* comm, const CollArgs& a);
// The algorithm a call runs: config.algo when forced (an error, naming `op`, if it cannot run), else
// the selection.
tacoResult_t allReduceAlgo(const tacoComm* c, size_t count, tacoDataType_t dtype, int* algo, const char* op);
tacoResult_t reduceScatter(tacoComm* comm, const CollArgs& a);
tacoResult_t allGather(tacoComm* comm, const CollArgs& a);
tacoResult_t alltoAll(tacoComm* comm, const CollArgs& a);

// Communicator lifecycle (coll/comm_init.cc).
tacoResult_t commCreate(Transport* t, const tacoConfig_t* config, bool consistencyCheck, tacoComm** out);
tacoResult_t commCreateLoopback(tacoComm** comms, int nranks, const tacoConfig_t* config);
tacoResult_t commDestroy(tacoComm* comm, bool abort);
// The first asynchronous device failure seen (tacoCommGetAsyncError; coll/allreduce_peer.cc).
tacoResult_t commAsyncError(tacoComm* c);
// Validates a config (magic, codec spec, ranges) without creating anything.
tacoResult_t commCheckConfig(const tacoConfig_t* config, const char* op);
// The bytes of a tacoConfig_t whose `size` field says `size`: sizeof(tacoConfig_t) from it on (a
// newer, larger struct), `size` where it ends at a field of an older, smaller struct (with or
// without the padding after it), 0 where it ends inside a field or before `version`.
size_t configBytesOf(size_t size);


// ---- helpers for builders (coll/common.cc)
// Wire bytes of n elements (0 for n == 0).
size_t wireBytes(const tacoComm* c, size_t n, tacoDataType_t dtype);
// True when a call moving `bytes` of uncompressed data takes the plain path.
bool usePlain(const tacoComm* c, size_t bytes);
// Elements per shard per chunk for this dtype: plan.h's pieceElems() with the
// communicator's chunkBytes, rank count and codec block.
size_t chunkPieceElems(const tacoComm* c, tacoDataType_t dtype);

// Address of element `elem` of a buffer of `dtype` elements.
const char* elemPtr(const void* base, size_t elem, tacoDataType_t dtype);
char* elemPtr(void* base, size_t elem, tacoDataType_t dtype);

Step stepFork(cudaStream_t user);
Step stepJoin(cudaStream_t user);
Step stepCompress(int stream, const void* in, size_t count, tacoDataType_t dt, void* out);
Step stepDecompress(int stream, const void* in, void* y, size_t count, tacoDataType_t dt);
Step stepPlain(PlainKind k, cudaStream_t user, const void* in, void* y, size_t count, tacoDataType_t dt);
// kStepDecompressAccumulate or kStepDecompressReduceCompress on the owner of a piece: the
// inputs are the peers' compressed pieces received into incomingPiece(slot, j), j != rank, in
// rank order (the fixed summation order).
Step stepSumOfPeers(StepKind kind, tacoComm* c, int slot, const void* exact, void* out, void* y, size_t count,
                    tacoDataType_t dt);

// A buffer and its size in bytes, as one side of a transfer.
struct WireRef {
  void* buf;
  size_t bytes;
};

// Appends one chunk's grouped send/recv with every peer j != rank (nothing when the world is one
// rank): send sendTo(j) to j, receive recvFrom(j) from j. Empty sides (0 bytes) are left out:
// both ranks of a pair compute the same sizes from the same plan.
template <class SendTo, class RecvFrom>
void addPeerExchange(std::vector<Step>& steps, const tacoComm* c, int slot, SendTo sendTo, RecvFrom recvFrom) {
  if (c->nranks == 1) return;
  Step ex;
  ex.kind = kStepExchange;
  ex.stream = slot;
  for (int j = 0; j < c->nranks; ++j) {
    if (j == c->rank) continue;
    const WireRef s = sendTo(j), v = recvFrom(j);
    if (s.bytes > 0) ex.xfers.push_back(Xfer{true, j, s.buf, s.bytes});
    if (v.bytes > 0) ex.xfers.push_back(Xfer{false, j, v.buf, v.bytes});
  }
  steps.push_back(std::move(ex));
}

// Builds and submits the schedule of a collective over P blocks of n = a.count elements each
// (ReduceScatter, AllGather, AlltoAll). `plain`: one step of the transport's plain collective
// `kind`. Otherwise the chunk loop: fork; for chunk ch, `piece` = the next chunkPieceElems()
// elements of every block, on pipeline stream and workspace slot ch % depth,
// addChunk(steps, slot, piece, wireBytes(piece.len)); join.
template <class AddChunk>
tacoResult_t submitBlockwise(tacoComm* c, const CollArgs& a, bool plain, PlainKind kind, const char* opName,
                             AddChunk addChunk) {
  Schedule sched;
  sched.comm = c;
  if (plain) {
    sched.steps.push_back(stepPlain(kind, a.stream, a.sendbuff, a.recvbuff, a.count, a.dtype));
    return submit(std::move(sched), opName);
  }
  const size_t elemsPerPiece = chunkPieceElems(c, a.dtype);
  const size_t nChunks = chunkCount(a.count, elemsPerPiece);
  sched.steps.reserve(2 + nChunks * (2 * (size_t)c->nranks + 1));
  sched.steps.push_back(stepFork(a.stream));
  for (size_t ch = 0; ch < nChunks; ++ch) {
    const Range piece = pieceOf(Range{0, a.count}, elemsPerPiece, ch);
    addChunk(sched.steps, (int)(ch % (size_t)c->depth), piece, wireBytes(c, piece.len, a.dtype));
  }
  sched.steps.push_back(stepJoin(a.stream));
  return submit(std::move(sched), opName);
}

}  // namespace taco

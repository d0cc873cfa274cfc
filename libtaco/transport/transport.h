// How bytes move between the ranks of a communicator (docs/design.md). A transport
// knows nothing about codecs: it moves bytes (send/recv inside a group) and
// runs the plain, uncompressed collectives used for codec `none` and small
// messages. Implementations: nccl.cc (production), loopback.cc (N ranks in one
// process on one GPU).
//
// Group semantics follow NCCL: operations posted between groupStart and
// groupEnd are issued together at the outermost groupEnd. Groups may span
// several transports of the same kind (several loopback ranks, or several NCCL
// communicators driven from one thread).
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>

#include "taco.h"

namespace taco {

class Transport {
 public:
  virtual ~Transport() {}
  virtual const char* name() const = 0;
  virtual int nranks() const = 0;
  virtual int rank() const = 0;

  virtual tacoResult_t groupStart() = 0;
  virtual tacoResult_t send(const void* buf, size_t bytes, int peer, cudaStream_t stream) = 0;
  virtual tacoResult_t recv(void* buf, size_t bytes, int peer, cudaStream_t stream) = 0;
  virtual tacoResult_t groupEnd() = 0;

  // Plain collectives on raw dtype (sum). Same argument conventions as NCCL;
  // alltoall: `count` elements per peer block. May be posted inside a group.
  virtual tacoResult_t allReduce(const void* sendbuff, void* recvbuff, size_t count,
                                 tacoDataType_t dtype, cudaStream_t stream) = 0;
  virtual tacoResult_t reduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                     tacoDataType_t dtype, cudaStream_t stream) = 0;
  virtual tacoResult_t allGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                 tacoDataType_t dtype, cudaStream_t stream) = 0;
  virtual tacoResult_t alltoAll(const void* sendbuff, void* recvbuff, size_t count,
                                tacoDataType_t dtype, cudaStream_t stream) = 0;
  // True if alltoAll supports sendbuff == recvbuff.
  virtual bool alltoAllInPlace() const = 0;

  // Blocking all-gather of `bytes` host bytes per rank, for creation-time
  // checks only (synchronises; never called inside a collective). Loopback
  // ranks are created together, so loopback implements it on the host.
  virtual tacoResult_t hostAllGather(const void* mine, void* all, size_t bytes) = 0;

  // The ncclComm_t underneath, for the peer-memory route that registers memory with NCCL
  // itself (transport/peer_memory_nccl.cc); nullptr for transports that are not NCCL.
  virtual void* ncclComm() const { return nullptr; }

  // Tear-down. finalize waits for work in flight; abort does not.
  virtual tacoResult_t finalize() = 0;
  virtual tacoResult_t abort() = 0;
};

// Loads NCCL (nccl.cc) and creates a transport of rank `rank` of `nranks`.
tacoResult_t ncclGetUniqueIdBytes(void* id128);
tacoResult_t ncclTransportCreate(const void* id128, int nranks, int rank, Transport** out);
// Wraps a caller-owned ncclComm_t; finalize/abort leave it alone.
tacoResult_t ncclTransportWrap(void* ncclComm, Transport** out);

// Loopback world of `nranks` transports (loopback.cc). out[r] is rank r.
tacoResult_t loopbackCreate(int nranks, Transport** out);
// The loopback world a transport belongs to (nullptr for other transports):
// used to check that a group drives every rank of a world.
const void* loopbackWorldOf(const Transport* t);

// Device reductions for the loopback plain collectives (loopback_kernels.cu).
// One thread handles one output element of every rank: it reads all inputs
// before writing, so in-place use is safe; sums are fp32 in rank order 0..P-1.
constexpr int kMaxLoopbackRanks = 64;
struct RankPtrs {
  const void* in[kMaxLoopbackRanks];
  void* out[kMaxLoopbackRanks];
  int n;
};
cudaError_t launchLoopAllReduce(const RankPtrs& p, size_t count, tacoDataType_t dtype, cudaStream_t s);
cudaError_t launchLoopReduceScatter(const RankPtrs& p, size_t recvcount, tacoDataType_t dtype,
                                    cudaStream_t s);
cudaError_t launchLoopAllGather(const RankPtrs& p, size_t sendcount, size_t elemBytes, cudaStream_t s);
cudaError_t launchLoopAlltoAll(const RankPtrs& p, size_t count, size_t elemBytes, cudaStream_t s);

}  // namespace taco

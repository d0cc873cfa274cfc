// Internal entry points of the collectives (called by libtaco/api/coll_api.cc
// after argument checks) and the helpers the schedule builders share.
#pragma once
#include "coll/plan.h"
#include "coll/schedule.h"

namespace taco {

struct CollArgs {
  const void* sendbuff;
  void* recvbuff;
  size_t count;  // AllReduce: count; ReduceScatter: recvcount; AllGather: sendcount; AlltoAll: per block
  tacoDataType_t dtype;
  cudaStream_t stream;
};

tacoResult_t allReduce(tacoComm* comm, const CollArgs& a);
tacoResult_t reduceScatter(tacoComm* comm, const CollArgs& a);
tacoResult_t allGather(tacoComm* comm, const CollArgs& a);
tacoResult_t alltoAll(tacoComm* comm, const CollArgs& a);

// Communicator lifecycle (coll/comm_init.cc).
tacoResult_t commCreate(Transport* t, const tacoConfig_t* config, bool consistencyCheck, tacoComm** out);
tacoResult_t commCreateLoopback(tacoComm** comms, int nranks, const tacoConfig_t* config);
tacoResult_t commDestroy(tacoComm* comm, bool abort);
// Validates a config (magic, codec spec, ranges) without creating anything.
tacoResult_t commCheckConfig(const tacoConfig_t* config, const char* op);


// ---- helpers for builders (coll/common.cc)
// Wire bytes of n elements (0 for n == 0).
size_t wireBytes(const tacoComm* c, size_t n, tacoDataType_t dtype);
// True when a call moving `bytes` of uncompressed data takes the plain path.
bool usePlain(const tacoComm* c, size_t bytes);
// Elements per shard per chunk for this dtype.
size_t commPieceElems(const tacoComm* c, tacoDataType_t dtype);

const char* at(const void* base, size_t elem, tacoDataType_t dtype);
char* at(void* base, size_t elem, tacoDataType_t dtype);

Step stepFork(cudaStream_t user);
Step stepJoin(cudaStream_t user);
Step stepCompress(int stream, const void* in, size_t count, tacoDataType_t dt, void* out);
Step stepDecompress(int stream, const void* in, void* y, size_t count, tacoDataType_t dt);
Step stepExchange(int stream);
Step stepPlain(PlainKind k, cudaStream_t user, const void* in, void* y, size_t count, tacoDataType_t dt);

}  // namespace taco

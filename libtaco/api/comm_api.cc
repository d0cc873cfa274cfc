// Exported communicator entry points: argument checks, then dispatch to coll/.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "api/argcheck.h"
#include "coll/coll.h"
#include "core/check.h"
#include "core/dtype.h"
#include "core/export.h"
#include "transport/transport.h"

using namespace taco;

extern "C" {

TACO_API tacoResult_t tacoGetUniqueId(tacoUniqueId* uniqueId) {
  TACO_CHECK(checkNotNull(uniqueId, "tacoGetUniqueId", "uniqueId"));
  return ncclGetUniqueIdBytes(uniqueId->internal);
}

TACO_API tacoResult_t tacoCommInitRank(tacoComm_t* comm, int nranks, tacoUniqueId uniqueId, int rank,
                                       const tacoConfig_t* config) {
  TACO_CHECK(checkNotNull(comm, "tacoCommInitRank", "comm"));
  *comm = nullptr;
  TACO_ARG(nranks >= 1, "tacoCommInitRank: nranks %d must be >= 1", nranks);
  TACO_ARG(rank >= 0 && rank < nranks, "tacoCommInitRank: rank %d is outside [0, %d)", rank, nranks);
  // Check the config before touching NCCL, so a bad one fails fast on every rank.
  TACO_CHECK(commCheckConfig(config, "tacoCommInitRank"));
  Transport* t = nullptr;
  TACO_CHECK(ncclTransportCreate(uniqueId.internal, nranks, rank, &t));
  return commCreate(t, config, true, comm);
}

TACO_API tacoResult_t tacoCommFromNccl(tacoComm_t* comm, void* ncclComm, const tacoConfig_t* config) {
  TACO_CHECK(checkNotNull(comm, "tacoCommFromNccl", "comm"));
  *comm = nullptr;
  TACO_CHECK(checkNotNull(ncclComm, "tacoCommFromNccl", "ncclComm"));
  TACO_CHECK(commCheckConfig(config, "tacoCommFromNccl"));
  Transport* t = nullptr;
  TACO_CHECK(ncclTransportWrap(ncclComm, &t));
  return commCreate(t, config, true, comm);
}

TACO_API tacoResult_t tacoCommInitLoopback(tacoComm_t* comms, int nranks, const tacoConfig_t* config) {
  TACO_CHECK(checkNotNull(comms, "tacoCommInitLoopback", "comms"));
  TACO_ARG(nranks >= 1 && nranks <= kMaxLoopbackRanks, "tacoCommInitLoopback: nranks %d is outside [1, %d]",
           nranks, kMaxLoopbackRanks);
  for (int r = 0; r < nranks; ++r) comms[r] = nullptr;
  TACO_CHECK(commCheckConfig(config, "tacoCommInitLoopback"));
  return commCreateLoopback(comms, nranks, config);
}

// Destroy and abort take the communicator like a collective: not while another host thread
// is in a call on it, or has collectives of it queued in its open group (commDestroy frees
// it, or, with collectives queued in this thread's group, keeps it held by the group).
// A refusal because another thread holds the communicator is recorded on it, as a collective's is.
static tacoResult_t acquireOrRecord(tacoComm* comm, const char* op, bool* taken) {
  const tacoResult_t r = commAcquire(comm, op, taken);
  if (r != tacoSuccess) commRecordError(comm);
  return r;
}

TACO_API tacoResult_t tacoCommDestroy(tacoComm_t comm) {
  TACO_CHECK(checkComm(comm, "tacoCommDestroy"));
  bool taken = false;
  TACO_CHECK(acquireOrRecord(comm, "tacoCommDestroy", &taken));
  return commDestroy(comm, false);
}

TACO_API tacoResult_t tacoCommAbort(tacoComm_t comm) {
  TACO_CHECK(checkComm(comm, "tacoCommAbort"));
  bool taken = false;
  TACO_CHECK(acquireOrRecord(comm, "tacoCommAbort", &taken));
  return commDestroy(comm, true);
}

TACO_API tacoResult_t tacoCommCount(tacoComm_t comm, int* count) {
  TACO_CHECK(checkComm(comm, "tacoCommCount"));
  TACO_CHECK(checkNotNull(count, "tacoCommCount", "count"));
  *count = comm->nranks;
  return tacoSuccess;
}

TACO_API tacoResult_t tacoCommUserRank(tacoComm_t comm, int* rank) {
  TACO_CHECK(checkComm(comm, "tacoCommUserRank"));
  TACO_CHECK(checkNotNull(rank, "tacoCommUserRank", "rank"));
  *rank = comm->rank;
  return tacoSuccess;
}

TACO_API tacoResult_t tacoCommGetConfig(tacoComm_t comm, tacoConfig_t* config) {
  TACO_CHECK(checkComm(comm, "tacoCommGetConfig"));
  TACO_CHECK(checkNotNull(config, "tacoCommGetConfig", "config"));
  // A caller built against an older, smaller struct (its size and magic set by its initializer)
  // gets that struct's fields only; a struct not initialised (an output argument may hold
  // anything) the whole struct, as before.
  const bool older = config->magic == TACO_CONFIG_MAGIC && configBytesOf(config->size) != 0;
  const size_t bytes = older ? configBytesOf(config->size) : sizeof(tacoConfig_t);
  tacoConfig_t resolved = comm->config;
  resolved.size = bytes;
  memcpy(config, &resolved, bytes);
  return tacoSuccess;
}

TACO_API tacoResult_t tacoCommWorkspaceBytes(tacoComm_t comm, size_t* bytes) {
  TACO_CHECK(checkComm(comm, "tacoCommWorkspaceBytes"));
  TACO_CHECK(checkNotNull(bytes, "tacoCommWorkspaceBytes", "bytes"));
  *bytes = comm->workspaceBytes;
  return tacoSuccess;
}

TACO_API tacoResult_t tacoCommGetAsyncError(tacoComm_t comm, tacoResult_t* asyncError) {
  TACO_CHECK(checkComm(comm, "tacoCommGetAsyncError"));
  TACO_CHECK(checkNotNull(asyncError, "tacoCommGetAsyncError", "asyncError"));
  *asyncError = commAsyncError(comm);
  return tacoSuccess;
}

TACO_API tacoResult_t tacoCommAllReduceAlgo(tacoComm_t comm, size_t count, tacoDataType_t datatype, int* algo) {
  TACO_CHECK(checkComm(comm, "tacoCommAllReduceAlgo"));
  TACO_CHECK(checkNotNull(algo, "tacoCommAllReduceAlgo", "algo"));
  TACO_CHECK(checkDatatype(datatype, "tacoCommAllReduceAlgo"));
  // As tacoAllReduce's check (checkCollArgs): the byte count must not wrap.
  TACO_ARG(count <= (size_t)PTRDIFF_MAX / dtypeBytes(datatype),
           "tacoCommAllReduceAlgo: count argument %zu is too large: in %zu-byte elements it exceeds %zu bytes", count,
           dtypeBytes(datatype), (size_t)PTRDIFF_MAX);
  bool taken = false;
  TACO_CHECK(acquireOrRecord(comm, "tacoCommAllReduceAlgo", &taken));
  const tacoResult_t r = allReduceAlgo(comm, count, datatype, algo, "tacoCommAllReduceAlgo");
  commRelease(comm, taken);
  return r;
}

TACO_API tacoResult_t tacoGroupStart(void) { return groupStart(); }

TACO_API tacoResult_t tacoGroupEnd(void) { return groupEnd(); }

}  // extern "C"

// Exported communicator entry points: argument checks, then dispatch to coll/.
#include "api/argcheck.h"
#include "coll/coll.h"
#include "core/check.h"
#include "core/export.h"
#include "transport/transport.h"

using namespace taco;

extern "C" {

TACO_API tacoResult_t tacoGetUniqueId(tacoUniqueId* uniqueId) {
  TACO_CHECK(checkNotNull(uniqueId, "GetUniqueId", "uniqueId"));
  return ncclGetUniqueIdBytes(uniqueId->internal);
}

TACO_API tacoResult_t tacoCommInitRank(tacoComm_t* comm, int nranks, tacoUniqueId uniqueId, int rank,
                                       const tacoConfig_t* config) {
  TACO_CHECK(checkNotNull(comm, "CommInitRank", "comm"));
  *comm = nullptr;
  TACO_ARG(nranks >= 1, "CommInitRank : nranks %d must be >= 1", nranks);
  TACO_ARG(rank >= 0 && rank < nranks, "CommInitRank : rank %d is outside [0, %d)", rank, nranks);
  // Check the config before touching NCCL, so a bad one fails fast on every rank.
  TACO_CHECK(commCheckConfig(config, "CommInitRank"));
  Transport* t = nullptr;
  TACO_CHECK(ncclTransportCreate(uniqueId.internal, nranks, rank, &t));
  return commCreate(t, config, true, comm);
}

TACO_API tacoResult_t tacoCommFromNccl(tacoComm_t* comm, void* ncclComm, const tacoConfig_t* config) {
  TACO_CHECK(checkNotNull(comm, "CommFromNccl", "comm"));
  *comm = nullptr;
  TACO_CHECK(checkNotNull(ncclComm, "CommFromNccl", "ncclComm"));
  TACO_CHECK(commCheckConfig(config, "CommFromNccl"));
  Transport* t = nullptr;
  TACO_CHECK(ncclTransportWrap(ncclComm, &t));
  return commCreate(t, config, true, comm);
}

TACO_API tacoResult_t tacoCommInitLoopback(tacoComm_t* comms, int nranks, const tacoConfig_t* config) {
  TACO_CHECK(checkNotNull(comms, "CommInitLoopback", "comms"));
  TACO_ARG(nranks >= 1 && nranks <= kMaxLoopbackRanks, "CommInitLoopback : nranks %d is outside [1, %d]",
           nranks, kMaxLoopbackRanks);
  for (int r = 0; r < nranks; ++r) comms[r] = nullptr;
  TACO_CHECK(commCheckConfig(config, "CommInitLoopback"));
  return commCreateLoopback(comms, nranks, config);
}

TACO_API tacoResult_t tacoCommDestroy(tacoComm_t comm) {
  TACO_CHECK(checkComm(comm, "CommDestroy"));
  return commDestroy(comm, false);
}

TACO_API tacoResult_t tacoCommAbort(tacoComm_t comm) {
  TACO_CHECK(checkComm(comm, "CommAbort"));
  return commDestroy(comm, true);
}

TACO_API tacoResult_t tacoCommCount(tacoComm_t comm, int* count) {
  TACO_CHECK(checkComm(comm, "CommCount"));
  TACO_CHECK(checkNotNull(count, "CommCount", "count"));
  *count = comm->nranks;
  return tacoSuccess;
}

TACO_API tacoResult_t tacoCommUserRank(tacoComm_t comm, int* rank) {
  TACO_CHECK(checkComm(comm, "CommUserRank"));
  TACO_CHECK(checkNotNull(rank, "CommUserRank", "rank"));
  *rank = comm->rank;
  return tacoSuccess;
}

TACO_API tacoResult_t tacoCommGetConfig(tacoComm_t comm, tacoConfig_t* config) {
  TACO_CHECK(checkComm(comm, "CommGetConfig"));
  TACO_CHECK(checkNotNull(config, "CommGetConfig", "config"));
  *config = comm->config;
  return tacoSuccess;
}

TACO_API tacoResult_t tacoCommWorkspaceBytes(tacoComm_t comm, size_t* bytes) {
  TACO_CHECK(checkComm(comm, "CommWorkspaceBytes"));
  TACO_CHECK(checkNotNull(bytes, "CommWorkspaceBytes", "bytes"));
  *bytes = comm->workspaceBytes;
  return tacoSuccess;
}

TACO_API tacoResult_t tacoCommGetAsyncError(tacoComm_t comm, tacoResult_t* asyncError) {
  TACO_CHECK(checkComm(comm, "CommGetAsyncError"));
  TACO_CHECK(checkNotNull(asyncError, "CommGetAsyncError", "asyncError"));
  *asyncError = commAsyncError(comm);
  return tacoSuccess;
}

TACO_API tacoResult_t tacoCommAllReduceAlgo(tacoComm_t comm, size_t count, tacoDataType_t datatype, int* algo) {
  TACO_CHECK(checkComm(comm, "CommAllReduceAlgo"));
  TACO_CHECK(checkNotNull(algo, "CommAllReduceAlgo", "algo"));
  TACO_CHECK(checkDatatype(datatype, "CommAllReduceAlgo"));
  return allReduceAlgo(comm, count, datatype, algo);
}

TACO_API tacoResult_t tacoGroupStart(void) { return groupStart(); }

TACO_API tacoResult_t tacoGroupEnd(void) { return groupEnd(); }

}  // extern "C"

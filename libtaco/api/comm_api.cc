// Exported communicator entry points: argument checks, then dispatch to coll/.
#include "coll/coll.h"
#include "core/check.h"
#include "core/export.h"
#include "transport/transport.h"

using namespace taco;

extern "C" {

TACO_API tacoResult_t tacoGetUniqueId(tacoUniqueId* uniqueId) {
  TACO_ARG(uniqueId != nullptr, "GetUniqueId : uniqueId argument is NULL");
  return ncclGetUniqueIdBytes(uniqueId->internal);
}

TACO_API tacoResult_t tacoCommInitRank(tacoComm_t* comm, int nranks, tacoUniqueId uniqueId, int rank,
                                       const tacoConfig_t* config) {
  TACO_ARG(comm != nullptr, "CommInitRank : comm argument is NULL");
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
  TACO_ARG(comm != nullptr, "CommFromNccl : comm argument is NULL");
  *comm = nullptr;
  TACO_ARG(ncclComm != nullptr, "CommFromNccl : ncclComm argument is NULL");
  TACO_CHECK(commCheckConfig(config, "CommFromNccl"));
  Transport* t = nullptr;
  TACO_CHECK(ncclTransportWrap(ncclComm, &t));
  return commCreate(t, config, true, comm);
}

TACO_API tacoResult_t tacoCommInitLoopback(tacoComm_t* comms, int nranks, const tacoConfig_t* config) {
  TACO_ARG(comms != nullptr, "CommInitLoopback : comms argument is NULL");
  TACO_ARG(nranks >= 1 && nranks <= kMaxLoopbackRanks, "CommInitLoopback : nranks %d is outside [1, %d]",
           nranks, kMaxLoopbackRanks);
  for (int r = 0; r < nranks; ++r) comms[r] = nullptr;
  TACO_CHECK(commCheckConfig(config, "CommInitLoopback"));
  return commCreateLoopback(comms, nranks, config);
}

TACO_API tacoResult_t tacoCommDestroy(tacoComm_t comm) {
  TACO_ARG(comm != nullptr, "CommDestroy : comm argument is NULL");
  return commDestroy(comm, false);
}

TACO_API tacoResult_t tacoCommAbort(tacoComm_t comm) {
  TACO_ARG(comm != nullptr, "CommAbort : comm argument is NULL");
  return commDestroy(comm, true);
}

TACO_API tacoResult_t tacoCommCount(tacoComm_t comm, int* count) {
  TACO_ARG(comm != nullptr, "CommCount : comm argument is NULL");
  TACO_ARG(count != nullptr, "CommCount : count argument is NULL");
  *count = comm->nranks;
  return tacoSuccess;
}

TACO_API tacoResult_t tacoCommUserRank(tacoComm_t comm, int* rank) {
  TACO_ARG(comm != nullptr, "CommUserRank : comm argument is NULL");
  TACO_ARG(rank != nullptr, "CommUserRank : rank argument is NULL");
  *rank = comm->rank;
  return tacoSuccess;
}

TACO_API tacoResult_t tacoCommGetConfig(tacoComm_t comm, tacoConfig_t* config) {
  TACO_ARG(comm != nullptr, "CommGetConfig : comm argument is NULL");
  TACO_ARG(config != nullptr, "CommGetConfig : config argument is NULL");
  *config = comm->config;
  return tacoSuccess;
}

TACO_API tacoResult_t tacoCommWorkspaceBytes(tacoComm_t comm, size_t* bytes) {
  TACO_ARG(comm != nullptr, "CommWorkspaceBytes : comm argument is NULL");
  TACO_ARG(bytes != nullptr, "CommWorkspaceBytes : bytes argument is NULL");
  *bytes = comm->workspaceBytes;
  return tacoSuccess;
}

TACO_API tacoResult_t tacoCommGetAsyncError(tacoComm_t comm, tacoResult_t* asyncError) {
  TACO_ARG(comm != nullptr, "CommGetAsyncError : comm argument is NULL");
  TACO_ARG(asyncError != nullptr, "CommGetAsyncError : asyncError argument is NULL");
  *asyncError = commAsyncError(comm);
  return tacoSuccess;
}

TACO_API tacoResult_t tacoCommAllReduceAlgo(tacoComm_t comm, size_t count, tacoDataType_t datatype, int* algo) {
  TACO_ARG(comm != nullptr, "CommAllReduceAlgo : comm argument is NULL");
  TACO_ARG(algo != nullptr, "CommAllReduceAlgo : algo argument is NULL");
  TACO_ARG((int)datatype >= 0 && datatype < tacoNumDataTypes, "CommAllReduceAlgo : datatype %d is not a tacoDataType_t",
           (int)datatype);
  return allReduceAlgo(comm, count, datatype, algo);
}

TACO_API tacoResult_t tacoGroupStart(void) { return groupStart(); }

TACO_API tacoResult_t tacoGroupEnd(void) { return groupEnd(); }

}  // extern "C"

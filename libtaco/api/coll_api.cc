// Exported collective entry points: argument checks naming the operation and
// argument, then dispatch to coll/. Failures are also recorded on the
// communicator (tacoGetLastError(comm)).
#include "api/argcheck.h"
#include "coll/coll.h"
#include "core/check.h"
#include "core/dtype.h"
#include "core/export.h"

using namespace taco;

namespace {

// Runs the checks and the call; a failure is also recorded on a live communicator.
template <typename F>
tacoResult_t run(tacoComm* comm, F f) {
  tacoResult_t r = f();
  if (r != tacoSuccess) commRecordError(comm);
  return r;
}

}  // namespace

extern "C" {

TACO_API tacoResult_t tacoAllReduce(const void* sendbuff, void* recvbuff, size_t count, tacoDataType_t datatype,
                                    tacoRedOp_t op, tacoComm_t comm, tacoStream_t stream) {
  return run(comm, [&]() -> tacoResult_t {
    TACO_CHECK(checkCollArgs(comm, sendbuff, recvbuff, count, datatype, "AllReduce"));
    TACO_CHECK(checkRedOp(op, "AllReduce"));
    return allReduce(comm, CollArgs{sendbuff, recvbuff, count, datatype, stream});
  });
}

TACO_API tacoResult_t tacoReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                        tacoDataType_t datatype, tacoRedOp_t op, tacoComm_t comm,
                                        tacoStream_t stream) {
  return run(comm, [&]() -> tacoResult_t {
    TACO_CHECK(checkCollArgs(comm, sendbuff, recvbuff, recvcount, datatype, "ReduceScatter"));
    TACO_CHECK(checkRedOp(op, "ReduceScatter"));
    if (recvcount > 0 && sendbuff != recvbuff) {
      // NCCL's in-place convention is recvbuff == sendbuff + rank*recvcount; any
      // other overlap would race.
      const char* s = static_cast<const char*>(sendbuff);
      const char* r = static_cast<const char*>(recvbuff);
      const size_t eb = dtypeBytes(datatype);
      const bool overlap = r < s + recvcount * comm->nranks * eb && s < r + recvcount * eb;
      TACO_ARG(!overlap || r == s + (size_t)comm->rank * recvcount * eb,
               "ReduceScatter : recvbuff overlaps sendbuff but is not sendbuff + rank*recvcount (in place)");
    }
    return reduceScatter(comm, CollArgs{sendbuff, recvbuff, recvcount, datatype, stream});
  });
}

TACO_API tacoResult_t tacoAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                    tacoDataType_t datatype, tacoComm_t comm, tacoStream_t stream) {
  return run(comm, [&]() -> tacoResult_t {
    TACO_CHECK(checkCollArgs(comm, sendbuff, recvbuff, sendcount, datatype, "AllGather"));
    if (sendcount > 0 && sendbuff != recvbuff) {
      const char* s = static_cast<const char*>(sendbuff);
      const char* r = static_cast<const char*>(recvbuff);
      const size_t eb = dtypeBytes(datatype);
      const bool overlap = s < r + sendcount * comm->nranks * eb && r < s + sendcount * eb;
      TACO_ARG(!overlap || s == r + (size_t)comm->rank * sendcount * eb,
               "AllGather : sendbuff overlaps recvbuff but is not recvbuff + rank*sendcount (in place)");
    }
    return allGather(comm, CollArgs{sendbuff, recvbuff, sendcount, datatype, stream});
  });
}

TACO_API tacoResult_t tacoAlltoAll(const void* sendbuff, void* recvbuff, size_t count, tacoDataType_t datatype,
                                   tacoComm_t comm, tacoStream_t stream) {
  return run(comm, [&]() -> tacoResult_t {
    TACO_CHECK(checkCollArgs(comm, sendbuff, recvbuff, count, datatype, "AlltoAll"));
    return alltoAll(comm, CollArgs{sendbuff, recvbuff, count, datatype, stream});
  });
}

}  // extern "C"

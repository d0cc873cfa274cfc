// Exported collective entry points: argument checks naming the operation and
// argument, then dispatch to coll/. Failures are also recorded on the
// communicator (tacoGetLastError(comm)). A call holds its communicator for its
// duration (core/comm.h, commAcquire): a second host thread is refused.
#include <cstddef>

#include "api/argcheck.h"
#include "coll/coll.h"
#include "core/check.h"
#include "core/dtype.h"
#include "core/export.h"

using namespace taco;

namespace {

// Checks the communicator, takes it for the calling thread, runs the checks and the call,
// and gives it back; a failure, a refusal because another thread has it included, is also
// recorded on the communicator (under a lock: core/comm.cc).
template <typename F>
tacoResult_t run(tacoComm* comm, const char* op, F f) {
  TACO_CHECK(checkComm(comm, op));
  bool taken = false;
  tacoResult_t r = commAcquire(comm, op, &taken);
  if (r == tacoSuccess) r = f();
  if (r != tacoSuccess) commRecordError(comm);
  commRelease(comm, taken);
  return r;
}

// The bytes of n elements of a datatype that checkCollArgs accepted.
size_t bytesOf(size_t n, tacoDataType_t dt) { return n * dtypeBytes(dt); }

}  // namespace

extern "C" {

TACO_API tacoResult_t tacoAllReduce(const void* sendbuff, void* recvbuff, size_t count, tacoDataType_t datatype,
                                    tacoRedOp_t op, tacoComm_t comm, tacoStream_t stream) {
  const char* name = "tacoAllReduce";
  return run(comm, name, [&]() -> tacoResult_t {
    TACO_CHECK(checkCollArgs(comm, sendbuff, recvbuff, count, "count", 1, datatype, name));
    TACO_CHECK(checkRedOp(op, name));
    if (count > 0) {
      const size_t n = bytesOf(count, datatype);
      TACO_CHECK(checkOverlap(name, "recvbuff", recvbuff, n, "sendbuff", sendbuff, n, "recvbuff == sendbuff"));
    }
    return allReduce(comm, CollArgs{sendbuff, recvbuff, count, datatype, stream});
  });
}

TACO_API tacoResult_t tacoReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                        tacoDataType_t datatype, tacoRedOp_t op, tacoComm_t comm,
                                        tacoStream_t stream) {
  const char* name = "tacoReduceScatter";
  return run(comm, name, [&]() -> tacoResult_t {
    TACO_CHECK(checkCollArgs(comm, sendbuff, recvbuff, recvcount, "recvcount", comm->nranks, datatype, name));
    TACO_CHECK(checkRedOp(op, name));
    if (recvcount > 0) {
      const size_t n = bytesOf(recvcount, datatype);
      TACO_CHECK(checkOverlap(name, "recvbuff", recvbuff, n, "sendbuff", sendbuff, n * (size_t)comm->nranks,
                              "recvbuff == sendbuff + rank*recvcount", (ptrdiff_t)(n * (size_t)comm->rank)));
    }
    return reduceScatter(comm, CollArgs{sendbuff, recvbuff, recvcount, datatype, stream});
  });
}

TACO_API tacoResult_t tacoAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                    tacoDataType_t datatype, tacoComm_t comm, tacoStream_t stream) {
  const char* name = "tacoAllGather";
  return run(comm, name, [&]() -> tacoResult_t {
    TACO_CHECK(checkCollArgs(comm, sendbuff, recvbuff, sendcount, "sendcount", comm->nranks, datatype, name));
    if (sendcount > 0) {
      const size_t n = bytesOf(sendcount, datatype);
      TACO_CHECK(checkOverlap(name, "recvbuff", recvbuff, n * (size_t)comm->nranks, "sendbuff", sendbuff, n,
                              "sendbuff == recvbuff + rank*sendcount", -(ptrdiff_t)(n * (size_t)comm->rank)));
    }
    return allGather(comm, CollArgs{sendbuff, recvbuff, sendcount, datatype, stream});
  });
}

TACO_API tacoResult_t tacoAlltoAll(const void* sendbuff, void* recvbuff, size_t count, tacoDataType_t datatype,
                                   tacoComm_t comm, tacoStream_t stream) {
  const char* name = "tacoAlltoAll";
  return run(comm, name, [&]() -> tacoResult_t {
    TACO_CHECK(checkCollArgs(comm, sendbuff, recvbuff, count, "count", comm->nranks, datatype, name));
    if (count > 0) {
      const size_t n = bytesOf(count, datatype) * (size_t)comm->nranks;
      TACO_CHECK(checkOverlap(name, "recvbuff", recvbuff, n, "sendbuff", sendbuff, n, "recvbuff == sendbuff"));
    }
    return alltoAll(comm, CollArgs{sendbuff, recvbuff, count, datatype, stream});
  });
}

}  // extern "C"

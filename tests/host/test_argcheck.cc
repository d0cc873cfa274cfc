// The entry points' argument checks (libtaco/api/argcheck.cc) that need no GPU:
// NULL arguments, bad datatype, op and count, and communicator handles that are
// not live (never created, or destroyed: their magic is not kCommMagicLive).
// White-box: a communicator is built by hand from core/comm.h, so that every
// check before the first CUDA call can run on a machine without a GPU.
#include <cstdint>
#include <cstdlib>

#include "check.h"
#include "core/comm.h"
#include "taco.h"

namespace {

// tacoGetLastError(comm) after `call`, which must fail with tacoInvalidArgument.
#define EXPECT_INVALID(call, comm, mention)                              \
  do {                                                                   \
    TEST_ASSERT_EQ_INT((call), tacoInvalidArgument);                     \
    TEST_ASSERT_STR_CONTAINS(tacoGetLastError(comm), (mention));         \
  } while (0)

void testNotLive(tacoComm* comm, const char* what) {
  fprintf(stderr, "communicator that is %s\n", what);
  int n = -1;
  size_t bytes = 0;
  tacoConfig_t cfg = TACO_CONFIG_INITIALIZER;
  tacoResult_t async = tacoSuccess;
  const char* notLive = "comm argument";
  EXPECT_INVALID(tacoCommCount(comm, &n), nullptr, "CommCount : comm argument");
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(nullptr), "is not a live communicator");
  TEST_ASSERT_EQ_INT(n, -1);
  EXPECT_INVALID(tacoCommUserRank(comm, &n), nullptr, notLive);
  EXPECT_INVALID(tacoCommGetConfig(comm, &cfg), nullptr, notLive);
  EXPECT_INVALID(tacoCommWorkspaceBytes(comm, &bytes), nullptr, notLive);
  EXPECT_INVALID(tacoCommGetAsyncError(comm, &async), nullptr, notLive);
  EXPECT_INVALID(tacoCommAllReduceAlgo(comm, 1024, tacoFloat32, &n), nullptr, notLive);
  EXPECT_INVALID(tacoCommDestroy(comm), nullptr, "CommDestroy : comm argument");
  EXPECT_INVALID(tacoCommAbort(comm), nullptr, "CommAbort : comm argument");
  EXPECT_INVALID(tacoAllReduce(nullptr, nullptr, 0, tacoFloat32, tacoSum, comm, nullptr), nullptr,
                 "AllReduce : comm argument");
  EXPECT_INVALID(tacoReduceScatter(nullptr, nullptr, 0, tacoFloat32, tacoSum, comm, nullptr), nullptr,
                 "ReduceScatter : comm argument");
  EXPECT_INVALID(tacoAllGather(nullptr, nullptr, 0, tacoFloat32, comm, nullptr), nullptr,
                 "AllGather : comm argument");
  EXPECT_INVALID(tacoAlltoAll(nullptr, nullptr, 0, tacoFloat32, comm, nullptr), nullptr,
                 "AlltoAll : comm argument");
  // Nothing is recorded on a handle that is not live; its last error is the thread's.
  TEST_ASSERT(comm->lastError.empty());
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(comm), "AlltoAll : comm argument");
}

}  // namespace

int main() {
  // A NULL communicator is named as such.
  EXPECT_INVALID(tacoCommCount(nullptr, nullptr), nullptr, "CommCount : comm argument is NULL");
  EXPECT_INVALID(tacoAllReduce(nullptr, nullptr, 0, tacoFloat32, tacoSum, nullptr, nullptr), nullptr,
                 "AllReduce : comm argument is NULL");

  // Handles that are not live: never created (zero magic, or any other memory),
  // and destroyed (the poisoned magic).
  tacoComm* comm = new tacoComm();
  testNotLive(comm, "not created by libtaco");
  comm->magic = taco::kCommMagicDead;
  testNotLive(comm, "destroyed");
  comm->magic = taco::kCommMagicLive + 1;
  testNotLive(comm, "foreign");

  // A live communicator (a one-rank one built by hand: only the checks before the
  // first CUDA call may run on it).
  comm->magic = taco::kCommMagicLive;
  comm->nranks = 1;
  int n = -1;
  TEST_ASSERT_EQ_INT(tacoCommCount(comm, &n), tacoSuccess);
  TEST_ASSERT_EQ_INT(n, 1);
  EXPECT_INVALID(tacoCommCount(comm, nullptr), nullptr, "CommCount : count argument is NULL");
  EXPECT_INVALID(tacoCommAllReduceAlgo(comm, 16, (tacoDataType_t)7, &n), nullptr,
                 "CommAllReduceAlgo : datatype argument 7 is not a tacoDataType_t");

  // Collectives: failures are recorded on the communicator, and name the argument.
  float x[4] = {0, 0, 0, 0};
  EXPECT_INVALID(tacoAllReduce(x, x, 4, (tacoDataType_t)3, tacoSum, comm, nullptr), comm,
                 "AllReduce : datatype argument 3");
  EXPECT_INVALID(tacoAllReduce(x, x, 4, (tacoDataType_t)-1, tacoSum, comm, nullptr), comm,
                 "AllReduce : datatype argument -1");
  EXPECT_INVALID(tacoAllReduce(nullptr, x, 4, tacoFloat32, tacoSum, comm, nullptr), comm,
                 "AllReduce : sendbuff argument is NULL");
  EXPECT_INVALID(tacoReduceScatter(x, nullptr, 4, tacoBfloat16, tacoSum, comm, nullptr), comm,
                 "ReduceScatter : recvbuff argument is NULL");
  EXPECT_INVALID(tacoAllGather(nullptr, x, 4, tacoFloat16, comm, nullptr), comm,
                 "AllGather : sendbuff argument is NULL");
  EXPECT_INVALID(tacoAlltoAll(x, nullptr, 4, tacoFloat32, comm, nullptr), comm,
                 "AlltoAll : recvbuff argument is NULL");
  // count 0 checks the op but not the buffers (as NCCL), and then does nothing.
  EXPECT_INVALID(tacoAllReduce(nullptr, nullptr, 0, tacoFloat32, (tacoRedOp_t)7, comm, nullptr), comm,
                 "AllReduce : op 7 is not supported");
  EXPECT_INVALID(tacoReduceScatter(nullptr, nullptr, 0, tacoFloat32, (tacoRedOp_t)1, comm, nullptr), comm,
                 "ReduceScatter : op 1");
  TEST_ASSERT_EQ_INT(tacoAllReduce(nullptr, nullptr, 0, tacoFloat32, tacoSum, comm, nullptr), tacoSuccess);
  TEST_ASSERT_EQ_INT(tacoAllGather(nullptr, nullptr, 0, tacoBfloat16, comm, nullptr), tacoSuccess);
  delete comm;

  // Codec calls: the same checks and wording.
  tacoCodec_t codec;
  TEST_ASSERT_EQ_INT(tacoCodecFind("fp8-block", &codec), tacoSuccess);
  size_t bytes = 0;
  EXPECT_INVALID(tacoCompressedSize(codec, 16, (tacoDataType_t)5, &bytes), nullptr,
                 "CompressedSize : datatype argument 5 is not a tacoDataType_t");
  unsigned char wire[1024];
  EXPECT_INVALID(tacoHostCompress(codec, x, 0, tacoFloat32, wire, sizeof(wire)), nullptr,
                 "HostCompress : count argument is 0");
  EXPECT_INVALID(tacoHostCompress(codec, nullptr, 4, tacoFloat32, wire, sizeof(wire)), nullptr,
                 "HostCompress : x argument is NULL");
  EXPECT_INVALID(tacoCompress(codec, nullptr, 4, tacoFloat32, wire, sizeof(wire), nullptr), nullptr,
                 "Compress : x argument is NULL");
  EXPECT_INVALID(tacoHostDecompressAccumulate(codec, nullptr, 2, sizeof(wire), nullptr, x, 4, tacoFloat32),
                 nullptr, "HostDecompressAccumulate : inputs argument is NULL");
  return TEST_REPORT();
}

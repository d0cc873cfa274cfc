// The entry points' argument checks (libtaco/api/argcheck.cc) that need no GPU:
// NULL arguments, bad datatype, op and count, and communicator handles that are
// not live (never created, or destroyed: their magic is not kCommMagicLive).
// White-box: a communicator is built by hand from core/comm.h, so that every
// check before the first CUDA call can run on a machine without a GPU.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

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
  EXPECT_INVALID(tacoCommCount(comm, &n), nullptr, "tacoCommCount: comm argument");
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(nullptr), "is not a live communicator");
  TEST_ASSERT_EQ_INT(n, -1);
  EXPECT_INVALID(tacoCommUserRank(comm, &n), nullptr, notLive);
  EXPECT_INVALID(tacoCommGetConfig(comm, &cfg), nullptr, notLive);
  EXPECT_INVALID(tacoCommWorkspaceBytes(comm, &bytes), nullptr, notLive);
  EXPECT_INVALID(tacoCommGetAsyncError(comm, &async), nullptr, notLive);
  EXPECT_INVALID(tacoCommAllReduceAlgo(comm, 1024, tacoFloat32, &n), nullptr, notLive);
  EXPECT_INVALID(tacoCommDestroy(comm), nullptr, "tacoCommDestroy: comm argument");
  EXPECT_INVALID(tacoCommAbort(comm), nullptr, "tacoCommAbort: comm argument");
  EXPECT_INVALID(tacoAllReduce(nullptr, nullptr, 0, tacoFloat32, tacoSum, comm, nullptr), nullptr,
                 "tacoAllReduce: comm argument");
  EXPECT_INVALID(tacoReduceScatter(nullptr, nullptr, 0, tacoFloat32, tacoSum, comm, nullptr), nullptr,
                 "tacoReduceScatter: comm argument");
  EXPECT_INVALID(tacoAllGather(nullptr, nullptr, 0, tacoFloat32, comm, nullptr), nullptr,
                 "tacoAllGather: comm argument");
  EXPECT_INVALID(tacoAlltoAll(nullptr, nullptr, 0, tacoFloat32, comm, nullptr), nullptr,
                 "tacoAlltoAll: comm argument");
  // Nothing is recorded on a handle that is not live; its last error is the thread's.
  TEST_ASSERT(comm->lastError.empty());
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(comm), "tacoAlltoAll: comm argument");
}

// tacoInvalidUsage from `call`, naming the entry point and the communicator in use.
#define EXPECT_IN_USE(call, op)                                                              \
  do {                                                                                       \
    TEST_ASSERT_EQ_INT((call), tacoInvalidUsage);                                            \
    TEST_ASSERT_STR_CONTAINS(tacoGetLastError(nullptr), op ": comm argument");              \
    TEST_ASSERT_STR_CONTAINS(tacoGetLastError(nullptr), "is in use by another host thread"); \
  } while (0)

void testInUse(tacoComm* comm) {
  fprintf(stderr, "communicator in use by another thread\n");
  const uintptr_t other = 0x1234560;  // no thread's token: commThreadToken() is an address in this thread's TLS
  comm->user.store(other);
  int n = -1;
  EXPECT_IN_USE(tacoAllReduce(nullptr, nullptr, 0, tacoFloat32, tacoSum, comm, nullptr), "tacoAllReduce");
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(comm), "is in use by another host thread");  // recorded on it
  EXPECT_IN_USE(tacoReduceScatter(nullptr, nullptr, 0, tacoFloat32, tacoSum, comm, nullptr), "tacoReduceScatter");
  EXPECT_IN_USE(tacoAllGather(nullptr, nullptr, 0, tacoFloat32, comm, nullptr), "tacoAllGather");
  EXPECT_IN_USE(tacoAlltoAll(nullptr, nullptr, 0, tacoFloat32, comm, nullptr), "tacoAlltoAll");
  // Each refusal is recorded on the communicator too (tacoGetLastError(comm)), as api.md says.
  EXPECT_IN_USE(tacoCommAllReduceAlgo(comm, 16, tacoFloat32, &n), "tacoCommAllReduceAlgo");
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(comm), "tacoCommAllReduceAlgo: comm argument");
  EXPECT_IN_USE(tacoCommDestroy(comm), "tacoCommDestroy");
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(comm), "tacoCommDestroy: comm argument");
  EXPECT_IN_USE(tacoCommAbort(comm), "tacoCommAbort");
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(comm), "tacoCommAbort: comm argument");
  TEST_ASSERT(comm->user.load() == other);  // still the other thread's
  TEST_ASSERT(comm->magic == taco::kCommMagicLive);
  // what reads only fixed fields is not refused
  TEST_ASSERT_EQ_INT(tacoCommCount(comm, &n), tacoSuccess);
  comm->user.store(0);
  TEST_ASSERT_EQ_INT(tacoAllReduce(nullptr, nullptr, 0, tacoFloat32, tacoSum, comm, nullptr), tacoSuccess);
  TEST_ASSERT(comm->user.load() == 0);  // given back at the end of the call

  // Real threads, with calls that return at once (count 0): each call runs or is refused as
  // in use, the flag is never left held, and a refusal names the communicator.
  std::atomic<int> ran{0}, refusedCalls{0}, other_results{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&]() {
      for (int i = 0; i < 20000; ++i) {
        const tacoResult_t r = tacoAllReduce(nullptr, nullptr, 0, tacoFloat32, tacoSum, comm, nullptr);
        if (r == tacoSuccess) {
          ++ran;
        } else if (r == tacoInvalidUsage && strstr(tacoGetLastError(nullptr), "is in use by another host thread")) {
          ++refusedCalls;
        } else {
          ++other_results;
        }
      }
    });
  for (std::thread& t : threads) t.join();
  fprintf(stderr, "4 threads x 20000 calls: %d ran, %d refused as in use\n", ran.load(), refusedCalls.load());
  TEST_ASSERT_EQ_INT(other_results.load(), 0);
  TEST_ASSERT_EQ_INT(ran.load() + refusedCalls.load(), 80000);
  TEST_ASSERT(ran.load() > 0);
  TEST_ASSERT(comm->user.load() == 0);
}

// Each collective's output against its input: disjoint, or the one in-place arrangement.
void testOverlap(tacoComm* comm) {
  fprintf(stderr, "overlap rule of the collectives\n");
  comm->nranks = 4;
  comm->rank = 1;
  // a fake device address: the pointer check is off for this part (TACO_CHECK_POINTERS=0 is
  // read once, at the first use, so the process sets it before its first call: main)
  char* base = reinterpret_cast<char*>(0x7f0000000000ull);
  const size_t n = 256, eb = 4;
  // AllReduce: recvbuff == sendbuff, or disjoint
  EXPECT_INVALID(tacoAllReduce(base, base + 8, n, tacoFloat32, tacoSum, comm, nullptr), comm,
                 "tacoAllReduce: recvbuff argument");
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(comm), "overlaps sendbuff argument");
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(comm), "but is not in place (recvbuff == sendbuff)");
  EXPECT_INVALID(tacoAllReduce(base + n * eb - 4, base, n, tacoFloat32, tacoSum, comm, nullptr), comm,
                 "overlaps sendbuff");
  // AlltoAll: count elements per rank, P blocks: the same rule over P * count
  EXPECT_INVALID(tacoAlltoAll(base, base + n * eb, n, tacoFloat32, comm, nullptr), comm,
                 "tacoAlltoAll: recvbuff argument");
  // ReduceScatter: recvbuff == sendbuff + rank * recvcount is in place; one element off is not
  EXPECT_INVALID(tacoReduceScatter(base, base + n * eb + 4, n, tacoFloat32, tacoSum, comm, nullptr), comm,
                 "(recvbuff == sendbuff + rank*recvcount)");
  EXPECT_INVALID(tacoReduceScatter(base, base, n, tacoFloat32, tacoSum, comm, nullptr), comm, "not in place");
  // AllGather: sendbuff == recvbuff + rank * sendcount is in place
  EXPECT_INVALID(tacoAllGather(base + n * eb + 4, base, n, tacoFloat32, comm, nullptr), comm,
                 "(sendbuff == recvbuff + rank*sendcount)");
  EXPECT_INVALID(tacoAllGather(base, base, n, tacoFloat32, comm, nullptr), comm, "tacoAllGather: recvbuff");
  // Counts whose byte sizes would wrap are refused, naming the count, before any byte arithmetic:
  // 2^62 + 1 fp32 elements on 4 ranks would wrap to 16 bytes, and the overlap check would pass.
  const size_t huge = ((size_t)1 << 62) + 1;
  EXPECT_INVALID(tacoAllGather(base, base + 4096, huge, tacoFloat32, comm, nullptr), comm,
                 "tacoAllGather: sendcount argument 4611686018427387905 is too large");
  EXPECT_INVALID(tacoReduceScatter(base, base + 4096, huge, tacoFloat32, tacoSum, comm, nullptr), comm,
                 "tacoReduceScatter: recvcount argument");
  EXPECT_INVALID(tacoAlltoAll(base, base + 4096, huge, tacoBfloat16, comm, nullptr), comm,
                 "tacoAlltoAll: count argument");
  EXPECT_INVALID(tacoAllReduce(base, base + 4096, SIZE_MAX, tacoBfloat16, tacoSum, comm, nullptr), comm,
                 "tacoAllReduce: count argument");
  // The largest count that fits (PTRDIFF_MAX bytes over 4 ranks of 2 bytes) passes this check and
  // fails the next one (the buffers overlap), not this one.
  EXPECT_INVALID(tacoAllGather(base, base, (size_t)PTRDIFF_MAX / 8, tacoBfloat16, comm, nullptr), comm,
                 "overlaps");
  // Buffers not aligned to the element size: the kernels would fault on the device (which ends the
  // CUDA context); refused naming the buffer, in every collective.
  EXPECT_INVALID(tacoAllReduce(base + 2, base + 2, n, tacoFloat32, tacoSum, comm, nullptr), comm,
                 "tacoAllReduce: sendbuff argument");
  TEST_ASSERT_STR_CONTAINS(tacoGetLastError(comm), "is not aligned to 4 bytes");
  EXPECT_INVALID(tacoAllReduce(base, base + (1 << 20) + 1, n, tacoBfloat16, tacoSum, comm, nullptr), comm,
                 "tacoAllReduce: recvbuff argument");
  EXPECT_INVALID(tacoAllGather(base + 1, base + (1 << 20), n, tacoBfloat16, comm, nullptr), comm,
                 "tacoAllGather: sendbuff argument");
  EXPECT_INVALID(tacoReduceScatter(base + 6, base + (1 << 20), n, tacoFloat32, tacoSum, comm, nullptr), comm,
                 "tacoReduceScatter: sendbuff argument");
  EXPECT_INVALID(tacoAlltoAll(base, base + (1 << 20) + 2, n, tacoFloat32, comm, nullptr), comm,
                 "tacoAlltoAll: recvbuff argument");
  // The algorithm query refuses a count whose bytes would wrap, as tacoAllReduce does (it took
  // 2^62 fp32 elements for 0 bytes and answered 'plain').
  int algo = -1;
  EXPECT_INVALID(tacoCommAllReduceAlgo(comm, (size_t)1 << 62, tacoFloat32, &algo), nullptr,
                 "tacoCommAllReduceAlgo: count argument 4611686018427387904 is too large");
  TEST_ASSERT_EQ_INT(algo, -1);
  comm->nranks = 1;
  comm->rank = 0;
}

}  // namespace

int main() {
  setenv("TACO_CHECK_POINTERS", "0", 1);  // testOverlap's fake device addresses (read at the first use)
  // A NULL communicator is named as such.
  EXPECT_INVALID(tacoCommCount(nullptr, nullptr), nullptr, "tacoCommCount: comm argument is NULL");
  EXPECT_INVALID(tacoAllReduce(nullptr, nullptr, 0, tacoFloat32, tacoSum, nullptr, nullptr), nullptr,
                 "tacoAllReduce: comm argument is NULL");

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
  EXPECT_INVALID(tacoCommCount(comm, nullptr), nullptr, "tacoCommCount: count argument is NULL");
  EXPECT_INVALID(tacoCommAllReduceAlgo(comm, 16, (tacoDataType_t)7, &n), nullptr,
                 "tacoCommAllReduceAlgo: datatype argument 7 is not a tacoDataType_t");

  // tacoCommGetConfig writes as many bytes as the caller's struct has (its size field, set by its
  // TACO_CONFIG_INITIALIZER): a caller built against an older, smaller struct keeps the bytes past it.
  comm->config = TACO_CONFIG_INITIALIZER;
  comm->config.chunkBytes = 12345;
  comm->config.algo = tacoAlgoFused;
  struct {
    tacoConfig_t cfg;
    unsigned char guard[8];
  } out;
  memset(&out, 0xAB, sizeof(out));
  const size_t older = offsetof(tacoConfig_t, algo);  // the struct before `algo` (48 bytes)
  out.cfg.size = older;
  out.cfg.magic = TACO_CONFIG_MAGIC;
  TEST_ASSERT_EQ_INT(tacoCommGetConfig(comm, &out.cfg), tacoSuccess);
  TEST_ASSERT_EQ_INT((int)out.cfg.size, (int)older);
  TEST_ASSERT(out.cfg.chunkBytes == 12345);
  const unsigned char* tail = reinterpret_cast<const unsigned char*>(&out.cfg) + older;
  for (size_t i = 0; i < sizeof(out) - older; ++i) TEST_ASSERT_MSG(tail[i] == 0xAB, "byte %zu past the struct", i);
  // This header's size (the initializer's), a size no struct had (0: not set), or an older size
  // without the magic (an uninitialised struct that happens to hold one) gets it all.
  memset(&out, 0xAB, sizeof(out));
  out.cfg.size = older;
  TEST_ASSERT_EQ_INT(tacoCommGetConfig(comm, &out.cfg), tacoSuccess);
  TEST_ASSERT(out.cfg.size == sizeof(tacoConfig_t) && out.cfg.algo == tacoAlgoFused);
  tacoConfig_t whole = TACO_CONFIG_INITIALIZER;
  TEST_ASSERT_EQ_INT(tacoCommGetConfig(comm, &whole), tacoSuccess);
  TEST_ASSERT_EQ_INT(whole.algo, tacoAlgoFused);
  TEST_ASSERT(whole.size == sizeof(tacoConfig_t));
  memset(&whole, 0, sizeof(whole));
  TEST_ASSERT_EQ_INT(tacoCommGetConfig(comm, &whole), tacoSuccess);
  TEST_ASSERT_EQ_INT(whole.algo, tacoAlgoFused);
  TEST_ASSERT(whole.size == sizeof(tacoConfig_t));

  // Collectives: failures are recorded on the communicator, and name the argument.
  float x[4] = {0, 0, 0, 0};
  EXPECT_INVALID(tacoAllReduce(x, x, 4, (tacoDataType_t)3, tacoSum, comm, nullptr), comm,
                 "tacoAllReduce: datatype argument 3");
  EXPECT_INVALID(tacoAllReduce(x, x, 4, (tacoDataType_t)-1, tacoSum, comm, nullptr), comm,
                 "tacoAllReduce: datatype argument -1");
  EXPECT_INVALID(tacoAllReduce(nullptr, x, 4, tacoFloat32, tacoSum, comm, nullptr), comm,
                 "tacoAllReduce: sendbuff argument is NULL");
  EXPECT_INVALID(tacoReduceScatter(x, nullptr, 4, tacoBfloat16, tacoSum, comm, nullptr), comm,
                 "tacoReduceScatter: recvbuff argument is NULL");
  EXPECT_INVALID(tacoAllGather(nullptr, x, 4, tacoFloat16, comm, nullptr), comm,
                 "tacoAllGather: sendbuff argument is NULL");
  EXPECT_INVALID(tacoAlltoAll(x, nullptr, 4, tacoFloat32, comm, nullptr), comm,
                 "tacoAlltoAll: recvbuff argument is NULL");
  // count 0 checks the op but not the buffers (as NCCL), and then does nothing.
  EXPECT_INVALID(tacoAllReduce(nullptr, nullptr, 0, tacoFloat32, (tacoRedOp_t)7, comm, nullptr), comm,
                 "tacoAllReduce: op 7 is not supported");
  EXPECT_INVALID(tacoReduceScatter(nullptr, nullptr, 0, tacoFloat32, (tacoRedOp_t)1, comm, nullptr), comm,
                 "tacoReduceScatter: op 1");
  TEST_ASSERT_EQ_INT(tacoAllReduce(nullptr, nullptr, 0, tacoFloat32, tacoSum, comm, nullptr), tacoSuccess);
  TEST_ASSERT_EQ_INT(tacoAllGather(nullptr, nullptr, 0, tacoBfloat16, comm, nullptr), tacoSuccess);

  // Overlap: one rule for every collective (api/argcheck, checkOverlap). Host memory is refused
  // by the pointer check first unless TACO_CHECK_POINTERS=0, so these run with a fake device
  // address where only the overlap is at stake: the checks come before any CUDA call.
  testOverlap(comm);

  // Another host thread holds the communicator (core/comm.h, tacoComm::user): every call that
  // takes it is refused with tacoInvalidUsage naming it, recorded on it, and leaves it held.
  testInUse(comm);
  delete comm;

  // Codec calls: the same checks and wording.
  tacoCodec_t codec;
  TEST_ASSERT_EQ_INT(tacoCodecFind("fp8-block", &codec), tacoSuccess);
  size_t bytes = 0;
  EXPECT_INVALID(tacoCompressedSize(codec, 16, (tacoDataType_t)5, &bytes), nullptr,
                 "tacoCompressedSize: datatype argument 5 is not a tacoDataType_t");
  unsigned char wire[1024];
  EXPECT_INVALID(tacoHostCompress(codec, x, 0, tacoFloat32, wire, sizeof(wire)), nullptr,
                 "tacoHostCompress: count argument is 0");
  EXPECT_INVALID(tacoHostCompress(codec, nullptr, 4, tacoFloat32, wire, sizeof(wire)), nullptr,
                 "tacoHostCompress: x argument is NULL");
  EXPECT_INVALID(tacoCompress(codec, nullptr, 4, tacoFloat32, wire, sizeof(wire), nullptr), nullptr,
                 "tacoCompress: x argument is NULL");
  EXPECT_INVALID(tacoHostDecompressAccumulate(codec, nullptr, 2, sizeof(wire), nullptr, x, 4, tacoFloat32),
                 nullptr, "tacoHostDecompressAccumulate: inputs argument is NULL");
  return TEST_REPORT();
}

// The ranks a tuning drives, their inputs and their agreement (coll/tune_world.h).
#include "coll/tune_world.h"

#include <algorithm>
#include <cstring>

#include "coll/allreduce_run.h"
#include "coll/group.h"
#include "core/check.h"
#include "core/dtype.h"
#include "transport/peer_memory.h"
#include "transport/transport.h"

namespace taco {
namespace tuner {

namespace {

uint64_t mix64(uint64_t x) {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

// Rank `rank`'s input, one period: values of either sign from 2^-4 to 2^4 (so that fp16 sums of
// 16 ranks stay finite), and some zeros, built from bits (no rounding: every process makes the
// same bytes).
std::vector<uint8_t> pattern(tacoDataType_t dt, int rank) {
  const size_t eb = dtypeBytes(dt), n = kPatternBytes / eb;
  std::vector<uint8_t> out(kPatternBytes);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t h = mix64(((uint64_t)rank << 40) ^ ((uint64_t)dt << 36) ^ i);
    const uint32_t sign = (uint32_t)(h & 1), e = (uint32_t)((h >> 1) % 8);  // exponent -4..3
    const bool zero = ((h >> 8) & 63) == 0;
    if (dt == tacoFloat32) {
      const uint32_t bits = zero ? 0u : (sign << 31) | ((e + 123) << 23) | ((uint32_t)(h >> 16) & 0x7fffffu);
      memcpy(&out[i * 4], &bits, 4);
    } else {
      const uint16_t bits =
          zero ? (uint16_t)0
               : dt == tacoBfloat16 ? (uint16_t)((sign << 15) | ((e + 123) << 7) | ((uint32_t)(h >> 16) & 0x7fu))
                                    : (uint16_t)((sign << 15) | ((e + 11) << 10) | ((uint32_t)(h >> 16) & 0x3ffu));
      memcpy(&out[i * 2], &bits, 2);
    }
  }
  return out;
}

// `bytes` of rank `rank`'s input at `dev`: one period copied in, then doubled on the device.
cudaError_t fillInput(void* dev, size_t bytes, tacoDataType_t dt, int rank, cudaStream_t s) {
  const std::vector<uint8_t> host = pattern(dt, rank);
  char* d = static_cast<char*>(dev);
  const size_t first = std::min(bytes, host.size());
  cudaError_t e = cudaMemcpyAsync(d, host.data(), first, cudaMemcpyHostToDevice, s);
  for (size_t filled = first; e == cudaSuccess && filled < bytes;) {
    const size_t n = std::min(filled, bytes - filled);
    e = cudaMemcpyAsync(d + filled, d, n, cudaMemcpyDeviceToDevice, s);
    filled += n;
  }
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);  // `host` dies here
  return e;
}

void* DeviceBuffers::alloc(size_t bytes) {
  void* p = nullptr;
  if (cudaMalloc(&p, bytes == 0 ? 16 : bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  ptrs.push_back(p);
  return p;
}

// Every rank's row of `mine.size()` floats, in rank order, through the transport's plain
// AllReduce: each rank writes its row into its own slot and zeros elsewhere, so the sum is the
// gather, exact in fp32 (x + 0 = x, inf + 0 = inf). Loopback: this process has every rank.
tacoResult_t gatherRows(Ctx& x, const std::vector<float>& mine, std::vector<std::vector<float>>* rows) {
  if (x.allLocal) {
    rows->assign(1, mine);
    return tacoSuccess;
  }
  const size_t n = mine.size(), P = (size_t)x.P;
  std::vector<float> all(n * P, 0.0f);
  std::copy(mine.begin(), mine.end(), all.begin() + (size_t)x.c0->rank * n);
  DeviceBuffers b;
  float* dev = static_cast<float*>(b.alloc(all.size() * sizeof(float)));
  if (dev == nullptr) return setError(tacoOutOfMemory, "%s: the tuner's agreement buffer could not be allocated", x.op);
  TACO_CUDA_CHECK(cudaMemcpyAsync(dev, all.data(), all.size() * sizeof(float), cudaMemcpyHostToDevice, x.s));
  TACO_CHECK(x.c0->transport->allReduce(dev, dev, all.size(), tacoFloat32, x.s));
  TACO_CUDA_CHECK(cudaMemcpyAsync(all.data(), dev, all.size() * sizeof(float), cudaMemcpyDeviceToHost, x.s));
  TACO_CUDA_CHECK(cudaStreamSynchronize(x.s));
  rows->assign(P, std::vector<float>(n));
  for (size_t r = 0; r < P; ++r) std::copy(all.begin() + r * n, all.begin() + (r + 1) * n, (*rows)[r].begin());
  return tacoSuccess;
}

// One AllReduce of `count` elements by `algo` on every rank driven here, as one group.
tacoResult_t runOnce(Ctx& x, int algo, size_t count) {
  TACO_CHECK(groupStart());
  tacoResult_t r = tacoSuccess;
  for (size_t i = 0; i < x.world.size() && r == tacoSuccess; ++i)
    r = allReduceRun(x.world[i], CollArgs{x.send[i], x.recv[i], count, x.dtype, x.s}, algo);
  const tacoResult_t e = groupEnd();
  return r != tacoSuccess ? r : e;
}

// A peer-memory kernel of some rank driven here gave up waiting (TACO_WAIT_TIMEOUT_S) or saw an
// abort, or a peer call was launched in part: either way the epochs no longer agree.
bool peerGaveUp(const Ctx& x) {
  for (tacoComm* c : x.world)
    if (c->peer != nullptr && (*c->peer->statusHost != 0 || !c->peerBroken.empty())) return true;
  return false;
}

}  // namespace tuner
}  // namespace taco

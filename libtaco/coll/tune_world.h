// What one tuning (coll/tune.cc) drives and shares between its steps: the ranks driven here and
// their buffers (Ctx), the inputs (a function of rank and dtype alone, the same in every process),
// one AllReduce on every rank driven here, the agreement of the ranks through the transport's plain
// AllReduce (gatherRows), and whether a peer-memory kernel gave up.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/comm.h"
#include "taco.h"

namespace taco {
namespace tuner {

constexpr size_t kPatternBytes = (size_t)1 << 20;  // the inputs repeat with this period

// Rank `rank`'s input, one period (kPatternBytes).
std::vector<uint8_t> pattern(tacoDataType_t dt, int rank);
// `bytes` of rank `rank`'s input at `dev`, on `s`, which it synchronises.
cudaError_t fillInput(void* dev, size_t bytes, tacoDataType_t dt, int rank, cudaStream_t s);

// Device buffers freed with the tuning.
struct DeviceBuffers {
  std::vector<void*> ptrs;
  ~DeviceBuffers() {
    for (void* p : ptrs) cudaFree(p);
  }
  void* alloc(size_t bytes);  // nullptr when out of memory
};

struct Ctx {
  std::vector<tacoComm*> world;  // the ranks driven here
  tacoComm* c0 = nullptr;
  int P = 0;
  bool allLocal = false;  // every rank is driven here (loopback): nothing to combine
  tacoDataType_t dtype = tacoFloat32;
  size_t eb = 0;
  cudaStream_t s = nullptr;
  std::vector<void*> send, recv;
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  const char* op = "";
  ~Ctx() {
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
  }
};

// Every rank's row of `mine.size()` floats, in rank order (loopback: this process's one row).
tacoResult_t gatherRows(Ctx& x, const std::vector<float>& mine, std::vector<std::vector<float>>* rows);
// One AllReduce of `count` elements by `algo` on every rank driven here, as one group.
tacoResult_t runOnce(Ctx& x, int algo, size_t count);
// A peer-memory kernel of some rank driven here gave up waiting (TACO_WAIT_TIMEOUT_S) or saw an abort.
bool peerGaveUp(const Ctx& x);

}  // namespace tuner
}  // namespace taco

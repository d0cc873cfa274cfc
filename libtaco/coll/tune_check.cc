// The tuner's check of a candidate against its oracle (coll/tune_check.h).
#include "coll/tune_check.h"

#include <cstdio>
#include <cstring>
#include <vector>

#include "codec/codec.h"
#include "core/check.h"
#include "core/params.h"
#include "transport/transport.h"

namespace taco {
namespace tuner {
namespace {

// Rank q's input of `count` elements: this process's own send buffer when it drives q, else made here.
tacoResult_t inputOf(Ctx& x, int q, size_t count, DeviceBuffers& b, const void** out) {
  for (size_t i = 0; i < x.world.size(); ++i)
    if (x.world[i]->rank == q) return *out = x.send[i], tacoSuccess;
  void* p = b.alloc(count * x.eb);
  if (p == nullptr) return setError(tacoOutOfMemory, "%s: the tuner's oracle inputs could not be allocated", x.op);
  TACO_CUDA_CHECK(fillInput(p, count * x.eb, x.dtype, q, x.s));
  *out = p;
  return tacoSuccess;
}

// The oracle's output of `algo` at `count`, on the host (the same for every rank).
tacoResult_t oracle(Ctx& x, int algo, size_t count, std::vector<std::vector<uint8_t>>* want) {
  const size_t bytes = count * x.eb;
  want->assign(x.world.size(), std::vector<uint8_t>(bytes));
  if (algo == tacoAlgoFused) {  // the staged two-shot, rank by rank (the same bits on every rank)
    TACO_CHECK(runOnce(x, tacoAlgoStaged, count));
    for (size_t i = 0; i < x.world.size(); ++i)
      TACO_CUDA_CHECK(cudaMemcpyAsync((*want)[i].data(), x.recv[i], bytes, cudaMemcpyDeviceToHost, x.s));
    TACO_CUDA_CHECK(cudaStreamSynchronize(x.s));
    return tacoSuccess;
  }
  DeviceBuffers b;
  std::vector<const void*> in((size_t)x.P);
  for (int q = 0; q < x.P; ++q) TACO_CHECK(inputOf(x, q, count, b, &in[(size_t)q]));
  void* ref = b.alloc(bytes);
  if (ref == nullptr) return setError(tacoOutOfMemory, "%s: the tuner's oracle output could not be allocated", x.op);
  if (algo == tacoAlgoOneShot) {  // every input compressed, then decompressed and summed in rank order
    const tacoCodec_t codec = x.c0->codec;
    const size_t wire = wireLayout(codec, count, x.dtype).totalBytes;
    AccumInputs acc;
    acc.n = x.P;
    for (int q = 0; q < x.P; ++q) {
      void* w = b.alloc(wire);
      if (w == nullptr) return setError(tacoOutOfMemory, "%s: the tuner's oracle wires could not be allocated", x.op);
      TACO_CUDA_CHECK(launchCompress(codec, in[(size_t)q], count, x.dtype, w, x.s));
      acc.ptr[q] = w;
    }
    TACO_CUDA_CHECK(launchDecompressAccumulate(codec, acc, nullptr, ref, count, x.dtype, x.s));
  } else {  // raw one-shot: the fp32 sum in rank order, rounded once (every "rank's" output is ref)
    RankPtrs p;
    memset(&p, 0, sizeof(p));
    p.n = x.P;
    for (int q = 0; q < x.P; ++q) p.in[q] = in[(size_t)q], p.out[q] = ref;
    TACO_CUDA_CHECK(launchLoopAllReduce(p, count, x.dtype, x.s));
  }
  TACO_CUDA_CHECK(cudaMemcpyAsync((*want)[0].data(), ref, bytes, cudaMemcpyDeviceToHost, x.s));
  TACO_CUDA_CHECK(cudaStreamSynchronize(x.s));
  for (size_t i = 1; i < x.world.size(); ++i) (*want)[i] = (*want)[0];
  return tacoSuccess;
}

std::string elementText(const uint8_t* p, size_t eb) {
  uint32_t u = 0;
  memcpy(&u, p, eb);
  char buf[16];
  snprintf(buf, sizeof(buf), eb == 4 ? "%08x" : "%04x", u);
  return buf;
}

}  // namespace

std::string check(Ctx& x, int algo, size_t count, bool* gaveUp) {
  const char* name = algoName(algo);
  char what[512];
  std::vector<std::vector<uint8_t>> want;
  if (oracle(x, algo, count, &want) != tacoSuccess) {
    snprintf(what, sizeof(what), "%s at %zu elements: its oracle failed: %s", name, count, lastError());
    return what;
  }
  const size_t bytes = count * x.eb;
  for (size_t i = 0; i < x.world.size(); ++i)
    if (cudaMemsetAsync(x.recv[i], 0xa5, bytes, x.s) != cudaSuccess) (void)cudaGetLastError();  // never written: cannot pass
  tacoResult_t r = runOnce(x, algo, count);
  const cudaError_t e = cudaStreamSynchronize(x.s);
  if (peerGaveUp(x)) {
    *gaveUp = true;
    snprintf(what, sizeof(what), "%s at %zu elements: a peer-memory kernel gave up waiting (TACO_WAIT_TIMEOUT_S)",
             name, count);
    return what;
  }
  if (r != tacoSuccess || e != cudaSuccess) {
    (void)cudaGetLastError();
    snprintf(what, sizeof(what), "%s at %zu elements: %s", name, count,
             r != tacoSuccess ? lastError() : cudaGetErrorString(e));
    return what;
  }
  const int fault = tuneFaultAlgo();
  std::vector<uint8_t> got(bytes);
  for (size_t i = 0; i < x.world.size(); ++i) {
    if (cudaMemcpy(got.data(), x.recv[i], bytes, cudaMemcpyDeviceToHost) != cudaSuccess) {
      (void)cudaGetLastError();
      snprintf(what, sizeof(what), "%s at %zu elements: reading rank %d's output failed", name, count,
               x.world[i]->rank);
      return what;
    }
    if (fault == algo && x.world[i]->rank == 0 && bytes > 0) got[0] ^= 1;  // TACO_TUNE_FAULT (testing)
    if (memcmp(got.data(), want[i].data(), bytes) == 0) continue;
    size_t k = 0;
    while (memcmp(&got[k * x.eb], &want[i][k * x.eb], x.eb) == 0) ++k;
    snprintf(what, sizeof(what), "%s at %zu elements: rank %d's output differs from the oracle at element %zu "
             "(%s, expected %s)%s", name, count, x.world[i]->rank, k, elementText(&got[k * x.eb], x.eb).c_str(),
             elementText(&want[i][k * x.eb], x.eb).c_str(), fault == algo ? " [TACO_TUNE_FAULT]" : "");
    return what;
  }
  return "";
}

}  // namespace tuner
}  // namespace taco

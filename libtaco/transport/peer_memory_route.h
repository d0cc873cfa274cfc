// What every peer-memory route shares (transport/peer_memory.h): the host-mapped abort
// and status words, the agreement of all ranks, and the check by a real write into every
// peer. Definitions in peer_memory.cc.
#pragma once
#include <cuda_runtime_api.h>

#include "core/check.h"
#include "transport/peer_memory.h"

namespace taco {

class Transport;

// The two host-mapped words every route needs: [0] abort, [1] status.
struct MappedWords {
  int* host = nullptr;
  int* dev = nullptr;
  tacoResult_t alloc() {
    TACO_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&host), 2 * sizeof(int), cudaHostAllocMapped));
    host[0] = host[1] = 0;
    TACO_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dev), host, 0));
    return tacoSuccess;
  }
  ~MappedWords() {
    if (host) cudaFreeHost(host);
  }
};

void attachWords(PeerMemory* pm, const MappedWords& w);

// Zeroes `bytes` of fresh scratch and waits until that is done. cudaMemset runs on the
// legacy stream, which the communicators' non-blocking streams never wait for: without
// the wait, a first kernel could read the flags that a freed scratch left in reused
// memory (and pass a wait too early), or a peer's first flag could land before the
// zeroing and be erased.
cudaError_t zeroScratchSync(void* p, size_t bytes);

// Collective: *ok becomes 1 only if it is 1 on every rank. *refuser (optional) is the
// first rank that had 0, or -1.
tacoResult_t peerAgree(Transport* t, int* ok, int* refuser = nullptr);

// Collective check of pm.base (pm.rank, pm.nranks, pm.bytes set): every rank whose *ok is 1
// writes a token into its word of the verification line (the last 4 * P bytes of the
// scratch) of every peer through base[q]; then each reads its own line through base[rank]
// and checks every peer's token. *ok ends as the agreed verdict of all ranks. `route`
// names the route in the log.
tacoResult_t peerVerifyWrites(Transport* t, const PeerMemory& pm, const char* route, int* ok);

}  // namespace taco
